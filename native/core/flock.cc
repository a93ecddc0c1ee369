// flock(2) lock files. See flock.h for the contract of each function.
#include "flock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace kb {

fd_result open_lock_file(const char* path) noexcept {
  for (;;) {
    int fd = ::open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd >= 0) return {fd, 0};
    if (errno != EINTR) return {-1, errno};
  }
}

lock_result try_lock(int fd) noexcept {
  for (;;) {
    if (::flock(fd, LOCK_EX | LOCK_NB) == 0) return {lock_status::acquired, 0};
    int err = errno;
    if (err == EINTR) continue;
    if (err == EWOULDBLOCK || err == EAGAIN) return {lock_status::busy, 0};
    return {lock_status::error, err};
  }
}

int unlock(int fd) noexcept {
  for (;;) {
    if (::flock(fd, LOCK_UN) == 0) return 0;
    if (errno != EINTR) return errno;
  }
}

int close_fd(int fd) noexcept {
  if (::close(fd) == 0 || errno == EINTR) return 0;
  return errno;
}

acquire_result acquire_lock_file(const char* path) noexcept {
  fd_result opened = open_lock_file(path);
  if (opened.fd < 0) return {lock_status::error, -1, opened.err, lock_stage::open};
  lock_result locked = try_lock(opened.fd);
  if (locked.status == lock_status::acquired) {
    return {lock_status::acquired, opened.fd, 0, lock_stage::flock};
  }
  close_fd(opened.fd);
  return {locked.status, -1, locked.err, lock_stage::flock};
}

namespace {

// strerror_r comes in two flavours: XSI returns an int and fills `buf`, GNU
// returns the text (possibly static). Overloading on the return type picks
// the right reading without a feature-test macro dance.
[[maybe_unused]] const char* strerror_result(int rc, char* buf, std::size_t size, int err) noexcept {
  if (rc != 0) std::snprintf(buf, size, "Unknown error %d", err);
  return buf;
}
[[maybe_unused]] const char* strerror_result(const char* text, char*, std::size_t, int) noexcept { return text; }

}  // namespace

const char* error_text(int err, char* buf, std::size_t size) noexcept {
  if (size == 0) return "";
  buf[0] = '\0';
  return strerror_result(::strerror_r(err, buf, size), buf, size, err);
}

}  // namespace kb
