// The bytes of a Buffer, TypedArray, DataView or string argument, for a
// binding that only reads them: views are borrowed (no copy), strings are
// transcoded to UTF-8 on the stack when short, on the heap otherwise.
#pragma once

#include <napi.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <new>

#include "binding/errors.h"

namespace kb::js {

// Turns a failed napi call into the pending JavaScript error it left.
inline void ThrowIfFailed(napi_env env, napi_status status) {
  if (status != napi_ok) throw Napi::Error::New(env);
}

// The bytes of a `data` argument: borrowed from a Buffer, TypedArray or
// DataView (already offset to its view), or a string's UTF-8 (lone
// surrogates become U+FFFD, as Buffer.from does) in a buffer of our own.
class DataArg {
 public:
  // `name` is the argument's name in the TypeError for anything else.
  DataArg(napi_env env, napi_value value, const char* name) {
    bool is = false;
    ThrowIfFailed(env, napi_is_typedarray(env, value, &is));
    if (is) {
      FromTypedArray(env, value);
      return;
    }
    napi_valuetype type;
    ThrowIfFailed(env, napi_typeof(env, value, &type));
    if (type == napi_string) {
      FromString(env, value);
      return;
    }
    ThrowIfFailed(env, napi_is_dataview(env, value, &is));
    if (is) {
      void* data = nullptr;
      ThrowIfFailed(env, napi_get_dataview_info(env, value, &size_, &data, nullptr, nullptr));
      data_ = static_cast<const std::uint8_t*>(data);
      return;
    }
    ThrowInvalidArg(env, name, "a string, Buffer, TypedArray or DataView", Napi::Value(env, value));
  }
  DataArg(const DataArg&) = delete;
  DataArg& operator=(const DataArg&) = delete;

  const std::uint8_t* data() const { return data_; }
  std::size_t size() const { return size_; }

 private:
  void FromTypedArray(napi_env env, napi_value value) {
    napi_typedarray_type type;
    std::size_t length = 0;
    void* data = nullptr;
    ThrowIfFailed(env, napi_get_typedarray_info(env, value, &type, &length, &data, nullptr, nullptr));
    data_ = static_cast<const std::uint8_t*>(data);
    switch (type) {
      case napi_int8_array:
      case napi_uint8_array:
      case napi_uint8_clamped_array:
        size_ = length;
        return;
      case napi_int16_array:
      case napi_uint16_array:
        size_ = length * 2;
        return;
      case napi_int32_array:
      case napi_uint32_array:
      case napi_float32_array:
        size_ = length * 4;
        return;
      case napi_float64_array:
      case napi_bigint64_array:
      case napi_biguint64_array:
        size_ = length * 8;
        return;
      default:
        break;
    }
    // A kind newer than this file: Node reports any view's byte length
    // through the Buffer accessor. Never the `byteLength` property, which
    // script can redefine on an instance and so send us past the end.
    ThrowIfFailed(env, napi_get_buffer_info(env, value, &data, &size_));
    data_ = static_cast<const std::uint8_t*>(data);
  }

  void FromString(napi_env env, napi_value value) {
    std::size_t units = 0;
    ThrowIfFailed(env, napi_get_value_string_utf16(env, value, nullptr, 0, &units));
    char* target = stack_;
    std::size_t room = sizeof stack_;
    // A UTF-16 unit never takes more than 3 UTF-8 bytes; past the stack
    // buffer, measure exactly and allocate once.
    if (units * 3 >= sizeof stack_) {
      ThrowIfFailed(env, napi_get_value_string_utf8(env, value, nullptr, 0, &room));
      room += 1;  // napi always writes a NUL terminator
      heap_.reset(new (std::nothrow) char[room]);
      if (!heap_) ThrowWithCode(env, "ERR_OUT_OF_RANGE", "The string is too large to copy out of JavaScript");
      target = heap_.get();
    }
    ThrowIfFailed(env, napi_get_value_string_utf8(env, value, target, room, &size_));
    data_ = reinterpret_cast<const std::uint8_t*>(target);
  }

  const std::uint8_t* data_ = nullptr;
  std::size_t size_ = 0;
  std::unique_ptr<char[]> heap_;
  char stack_[3 * 1024 + 1];
};

}  // namespace kb::js
