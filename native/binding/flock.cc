// JavaScript face of native/core/flock: six functions returning numbers, so
// an OS failure is a value (-errno) and never an exception. Only argument
// shapes throw (TypeError naming the argument), since src/locks validates
// before calling and a wrong shape here is a bug, not an OS condition.
#include <climits>
#include <cmath>
#include <cstring>
#include <memory>
#include <new>

#include "binding/binding.h"
#include "binding/errors.h"
#include "core/flock.h"

namespace kb::js {
namespace {

// Must match src/native/types.ts.
constexpr int kLockBusy = -1000000;
constexpr int kLockStageFlock = 100000;

// A path argument as a NUL-terminated UTF-8 string: on the stack when it is
// short (every real lock path), on the heap otherwise.
class PathArg {
 public:
  PathArg(Napi::Env env, Napi::Value value) {
    if (!value.IsString()) ThrowInvalidArg(env, "path", "a string", value);
    std::size_t units = 0;
    napi_get_value_string_utf16(env, value, nullptr, 0, &units);
    std::size_t size = 0;
    // A UTF-16 unit never takes more than 3 UTF-8 bytes.
    if (units * 3 < sizeof stack_) {
      napi_get_value_string_utf8(env, value, stack_, sizeof stack_, &size);
      data_ = stack_;
    } else {
      napi_get_value_string_utf8(env, value, nullptr, 0, &size);
      heap_.reset(new (std::nothrow) char[size + 1]);
      if (!heap_) ThrowWithCode(env, "ERR_OUT_OF_RANGE", "The \"path\" argument is too long to copy");
      napi_get_value_string_utf8(env, value, heap_.get(), size + 1, &size);
      data_ = heap_.get();
    }
    // open(2) would stop at the first NUL and lock another file than named.
    if (std::memchr(data_, '\0', size) != nullptr) {
      ThrowInvalidArg(env, "path", "a string without NUL bytes", value);
    }
  }
  const char* c_str() const { return data_; }

 private:
  char stack_[1024];
  std::unique_ptr<char[]> heap_;
  const char* data_ = nullptr;
};

// A descriptor or errno argument: a number holding an int32.
int Int32Arg(const Napi::CallbackInfo& info, const char* name) {
  Napi::Value value = info[0];
  if (value.IsNumber()) {
    double d = value.As<Napi::Number>().DoubleValue();
    if (d >= -2147483648.0 && d <= 2147483647.0 && d == std::trunc(d)) return static_cast<int>(d);
  }
  ThrowInvalidArg(info.Env(), name, "an int32", value);
}

Napi::Value OpenLockFile(const Napi::CallbackInfo& info) {
  PathArg path(info.Env(), info[0]);
  kb::fd_result r = kb::open_lock_file(path.c_str());
  return Napi::Number::New(info.Env(), r.fd >= 0 ? r.fd : -r.err);
}

Napi::Value TryLock(const Napi::CallbackInfo& info) {
  kb::lock_result r = kb::try_lock(Int32Arg(info, "fd"));
  int out = r.status == kb::lock_status::acquired ? 0 : r.status == kb::lock_status::busy ? 1 : -r.err;
  return Napi::Number::New(info.Env(), out);
}

Napi::Value Unlock(const Napi::CallbackInfo& info) {
  return Napi::Number::New(info.Env(), -kb::unlock(Int32Arg(info, "fd")));
}

Napi::Value CloseFd(const Napi::CallbackInfo& info) {
  return Napi::Number::New(info.Env(), -kb::close_fd(Int32Arg(info, "fd")));
}

Napi::Value AcquireLockFile(const Napi::CallbackInfo& info) {
  PathArg path(info.Env(), info[0]);
  kb::acquire_result r = kb::acquire_lock_file(path.c_str());
  int out;
  switch (r.status) {
    case kb::lock_status::acquired:
      out = r.fd;
      break;
    case kb::lock_status::busy:
      out = kLockBusy;
      break;
    default:
      out = r.stage == kb::lock_stage::open ? -r.err : -(kLockStageFlock + r.err);
      break;
  }
  return Napi::Number::New(info.Env(), out);
}

// Takes errno with either sign, since the other primitives return -errno.
Napi::Value Strerror(const Napi::CallbackInfo& info) {
  int err = Int32Arg(info, "errno");
  if (err < 0) err = err == INT_MIN ? INT_MAX : -err;
  char buf[256];
  return Napi::String::New(info.Env(), kb::error_text(err, buf, sizeof buf));
}

}  // namespace

void InitFlock(Napi::Env env, Napi::Object exports) {
  exports.Set("openLockFile", Napi::Function::New(env, OpenLockFile, "openLockFile"));
  exports.Set("tryLock", Napi::Function::New(env, TryLock, "tryLock"));
  exports.Set("unlock", Napi::Function::New(env, Unlock, "unlock"));
  exports.Set("closeFd", Napi::Function::New(env, CloseFd, "closeFd"));
  exports.Set("acquireLockFile", Napi::Function::New(env, AcquireLockFile, "acquireLockFile"));
  exports.Set("strerror", Napi::Function::New(env, Strerror, "strerror"));
}

}  // namespace kb::js
