// native/core/flock.h: the flock(2) lock-file primitives, POSIX only.
//
// Every function is noexcept and reports an operating-system failure as an
// errno value in its result, never by throwing or printing (cores return, bindings throw):
// the binding turns those into numbers for JavaScript, and the lock layer
// turns them into the `[null, message]` of the lock protocol.
#pragma once

#include <cstddef>

namespace kb {

// The three outcomes of a non-blocking flock (busy is a value, not an error).
enum class lock_status { acquired, busy, error };

// A descriptor, or the errno of the call that failed to produce one.
struct fd_result {
  int fd;   // >= 0 on success, -1 on failure
  int err;  // errno when fd < 0, else 0
};

struct lock_result {
  lock_status status;
  int err;  // errno when status == error, else 0
};

// Where acquire_lock_file stopped, so a failure can name its syscall.
enum class lock_stage { open, flock };

struct acquire_result {
  lock_status status;
  int fd;            // the held descriptor when acquired, else -1 (closed)
  int err;           // errno when status == error, else 0
  lock_stage stage;  // which syscall failed when status == error
};

// open(path, O_RDWR|O_CREAT|O_CLOEXEC|O_NOFOLLOW, 0600), retried on EINTR.
// O_NOFOLLOW makes a symlink at `path` fail with ELOOP instead of locking
// whatever it points to; O_CLOEXEC keeps children from inheriting the lock.
fd_result open_lock_file(const char* path) noexcept;

// flock(fd, LOCK_EX|LOCK_NB): acquired, busy (EWOULDBLOCK/EAGAIN) or error.
// The descriptor stays open in every case.
lock_result try_lock(int fd) noexcept;

// flock(fd, LOCK_UN). Returns 0 or errno.
int unlock(int fd) noexcept;

// close(fd). Returns 0 or errno. EINTR counts as success: on Linux the
// descriptor is released before close returns EINTR, so a retry could close
// a descriptor another thread has just been given.
int close_fd(int fd) noexcept;

// The hot path in one call: open_lock_file + try_lock. The descriptor is
// kept only when the lock was taken; on busy or a flock error it is closed.
acquire_result acquire_lock_file(const char* path) noexcept;

// The C library's text for `err` (thread-safe), written into `buf` when the
// library needs room. Returns a NUL-terminated string valid while `buf` is.
const char* error_text(int err, char* buf, std::size_t size) noexcept;

}  // namespace kb
