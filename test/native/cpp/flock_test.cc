// kb::open_lock_file / try_lock / unlock / close_fd / acquire_lock_file on
// real files in a fresh temporary directory, between descriptors of one
// process and across fork(), plus the failures the lock layer must report.
#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>

#include "core/flock.h"
#include "test.h"

namespace {

// A temporary directory, removed with its lock files at the end of a test.
struct temp_dir {
  std::string path;
  temp_dir() {
    char name[] = "/tmp/kb-flock-test-XXXXXX";
    path = mkdtemp(name) ? name : "";
  }
  ~temp_dir() {
    if (DIR* dir = opendir(path.c_str())) {
      while (dirent* entry = readdir(dir)) {
        std::string name = entry->d_name;
        if (name != "." && name != "..") {
          std::string full = path + "/" + name;
          if (rmdir(full.c_str()) != 0) unlink(full.c_str());
        }
      }
      closedir(dir);
    }
    rmdir(path.c_str());
  }
  std::string file(const char* name) const { return path + "/" + name; }
};

int open_fd_count() {
  int count = 0;
  if (DIR* dir = opendir("/proc/self/fd")) {
    while (readdir(dir) != nullptr) ++count;
    closedir(dir);
  }
  return count;
}

// Runs `body` in a forked child and returns its exit status (or -1).
template <typename F>
int in_child(F body) {
  pid_t pid = fork();
  if (pid == 0) _exit(body());
  int status = 0;
  if (pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) return -1;
  return WEXITSTATUS(status);
}

}  // namespace

TEST(a_second_descriptor_of_the_same_file_sees_busy_until_unlock) {
  temp_dir dir;
  const std::string path = dir.file("a.lock");
  kb::fd_result first = kb::open_lock_file(path.c_str());
  kb::fd_result second = kb::open_lock_file(path.c_str());
  ASSERT_TRUE(first.fd >= 0 && second.fd >= 0);
  ASSERT_TRUE(kb::try_lock(first.fd).status == kb::lock_status::acquired);
  kb::lock_result busy = kb::try_lock(second.fd);
  ASSERT_TRUE(busy.status == kb::lock_status::busy);
  ASSERT_EQ(busy.err, 0);
  ASSERT_EQ(kb::unlock(first.fd), 0);
  ASSERT_TRUE(kb::try_lock(second.fd).status == kb::lock_status::acquired);
  ASSERT_EQ(kb::close_fd(first.fd), 0);
  ASSERT_EQ(kb::close_fd(second.fd), 0);
}

TEST(the_lock_file_is_created_mode_0600_with_close_on_exec) {
  temp_dir dir;
  const std::string path = dir.file("mode.lock");
  mode_t old_mask = umask(0);
  kb::fd_result opened = kb::open_lock_file(path.c_str());
  umask(old_mask);
  ASSERT_TRUE(opened.fd >= 0);
  struct stat st;
  ASSERT_EQ(fstat(opened.fd, &st), 0);
  ASSERT_EQ(st.st_mode & 07777, static_cast<mode_t>(0600));
  ASSERT_TRUE((fcntl(opened.fd, F_GETFD) & FD_CLOEXEC) != 0);
  ASSERT_EQ(kb::close_fd(opened.fd), 0);
}

TEST(acquire_returns_the_held_descriptor_then_busy_with_nothing_left_open) {
  temp_dir dir;
  const std::string path = dir.file("b.lock");
  kb::acquire_result held = kb::acquire_lock_file(path.c_str());
  ASSERT_TRUE(held.status == kb::lock_status::acquired);
  ASSERT_TRUE(held.fd >= 0);
  const int before = open_fd_count();
  for (int i = 0; i < 100; ++i) {
    kb::acquire_result busy = kb::acquire_lock_file(path.c_str());
    ASSERT_TRUE(busy.status == kb::lock_status::busy);
    ASSERT_EQ(busy.fd, -1);
  }
  ASSERT_EQ(open_fd_count(), before);
  ASSERT_EQ(kb::close_fd(held.fd), 0);
  kb::acquire_result again = kb::acquire_lock_file(path.c_str());
  ASSERT_TRUE(again.status == kb::lock_status::acquired);
  ASSERT_EQ(kb::close_fd(again.fd), 0);
}

TEST(a_forked_child_sees_the_parents_lock_as_busy) {
  temp_dir dir;
  const std::string path = dir.file("fork.lock");
  kb::acquire_result held = kb::acquire_lock_file(path.c_str());
  ASSERT_TRUE(held.status == kb::lock_status::acquired);
  int child = in_child([&] {
    kb::acquire_result r = kb::acquire_lock_file(path.c_str());
    return r.status == kb::lock_status::busy ? 0 : 1;
  });
  ASSERT_EQ(child, 0);
  ASSERT_EQ(kb::close_fd(held.fd), 0);
  child = in_child([&] {
    kb::acquire_result r = kb::acquire_lock_file(path.c_str());
    return r.status == kb::lock_status::acquired ? 0 : 1;
  });
  ASSERT_EQ(child, 0);
}

// fork() shares the open file description, and with it the flock: the lock
// frees only once the parent's and the child's copies are both closed.
TEST(an_inherited_descriptor_keeps_the_lock_until_every_copy_is_closed) {
  temp_dir dir;
  const std::string path = dir.file("inherit.lock");
  kb::acquire_result held = kb::acquire_lock_file(path.c_str());
  ASSERT_TRUE(held.status == kb::lock_status::acquired);
  int go[2], ready[2];
  ASSERT_EQ(pipe(go), 0);
  ASSERT_EQ(pipe(ready), 0);
  pid_t pid = fork();
  if (pid == 0) {
    // The child keeps its copy of held.fd open until told to exit.
    close(go[1]);
    close(ready[0]);
    char c = 'r';
    if (write(ready[1], &c, 1) != 1) _exit(2);
    _exit(read(go[0], &c, 1) == 1 ? 0 : 3);
  }
  ASSERT_TRUE(pid > 0);
  close(go[0]);
  close(ready[1]);
  char c;
  ASSERT_EQ(read(ready[0], &c, 1), 1);
  ASSERT_EQ(kb::close_fd(held.fd), 0);
  kb::acquire_result while_child_lives = kb::acquire_lock_file(path.c_str());
  ASSERT_TRUE(while_child_lives.status == kb::lock_status::busy);
  ASSERT_EQ(write(go[1], "x", 1), 1);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  close(go[1]);
  close(ready[0]);
  kb::acquire_result after_exit = kb::acquire_lock_file(path.c_str());
  ASSERT_TRUE(after_exit.status == kb::lock_status::acquired);
  ASSERT_EQ(kb::close_fd(after_exit.fd), 0);
}

TEST(a_symlink_at_the_lock_path_fails_with_eloop) {
  temp_dir dir;
  const std::string target = dir.file("target");
  const std::string link = dir.file("link.lock");
  ASSERT_EQ(symlink(target.c_str(), link.c_str()), 0);
  kb::fd_result opened = kb::open_lock_file(link.c_str());
  ASSERT_EQ(opened.fd, -1);
  ASSERT_EQ(opened.err, ELOOP);
  kb::acquire_result r = kb::acquire_lock_file(link.c_str());
  ASSERT_TRUE(r.status == kb::lock_status::error);
  ASSERT_TRUE(r.stage == kb::lock_stage::open);
  ASSERT_EQ(r.err, ELOOP);
  ASSERT_EQ(access(target.c_str(), F_OK), -1);  // nothing was created through the link
}

TEST(a_missing_directory_fails_with_enoent) {
  temp_dir dir;
  const std::string path = dir.file("missing/x.lock");
  kb::fd_result opened = kb::open_lock_file(path.c_str());
  ASSERT_EQ(opened.fd, -1);
  ASSERT_EQ(opened.err, ENOENT);
  kb::acquire_result r = kb::acquire_lock_file(path.c_str());
  ASSERT_TRUE(r.status == kb::lock_status::error && r.stage == kb::lock_stage::open);
  ASSERT_EQ(r.err, ENOENT);
}

// Root ignores directory permissions, so as root the attempt runs in a child
// that has dropped to nobody (65534).
TEST(a_read_only_directory_fails_with_eacces) {
  temp_dir dir;
  const std::string sub = dir.file("ro");
  ASSERT_EQ(mkdir(sub.c_str(), 0500), 0);
  ASSERT_EQ(chmod(dir.path.c_str(), 0755), 0);
  const std::string path = sub + "/x.lock";
  int child = in_child([&] {
    if (geteuid() == 0 && (setgid(65534) != 0 || setuid(65534) != 0)) return 10;
    kb::acquire_result r = kb::acquire_lock_file(path.c_str());
    if (r.status != kb::lock_status::error || r.stage != kb::lock_stage::open) return 11;
    return r.err == EACCES || r.err == EROFS ? 0 : 12;
  });
  ASSERT_EQ(child, 0);
}

TEST(bad_descriptors_give_ebadf_not_a_crash) {
  kb::lock_result r = kb::try_lock(-1);
  ASSERT_TRUE(r.status == kb::lock_status::error);
  ASSERT_EQ(r.err, EBADF);
  ASSERT_EQ(kb::unlock(-1), EBADF);
  ASSERT_EQ(kb::close_fd(-1), EBADF);
  ASSERT_EQ(kb::try_lock(1 << 30).err, EBADF);
}

TEST(error_text_is_the_c_librarys_text) {
  char buf[128];
  ASSERT_BYTES_EQ(kb::error_text(ENOENT, buf, sizeof buf), std::strerror(ENOENT));
  ASSERT_BYTES_EQ(kb::error_text(ELOOP, buf, sizeof buf), std::strerror(ELOOP));
  ASSERT_TRUE(std::strlen(kb::error_text(99999, buf, sizeof buf)) > 0);
}

KB_TEST_MAIN()
