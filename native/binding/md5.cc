// JavaScript face of native/core/md5: `md5(data)` and `class Md5`.
//
// The small-input case is dominated by call overhead, so this file stays on
// raw napi calls where they save work: bytes are borrowed from the caller's
// view (no copy), strings up to ~1 K characters are transcoded onto the stack,
// and hex is written straight into a Latin-1 string.
#include <cstdint>
#include <memory>
#include <new>

#include "binding/binding.h"
#include "binding/errors.h"
#include "core/md5.h"

namespace kb::js {
namespace {

constexpr const char* kDataExpected = "a string, Buffer, TypedArray or DataView";

[[noreturn]] void ThrowLastError(napi_env env) { throw Napi::Error::New(env); }

inline void Check(napi_env env, napi_status status) {
  if (status != napi_ok) ThrowLastError(env);
}

// The bytes of a `data` argument: borrowed from a Buffer, TypedArray or
// DataView (already offset to its view), or a string's UTF-8 (lone
// surrogates become U+FFFD, as Buffer.from does) in a buffer of our own.
class DataArg {
 public:
  DataArg(napi_env env, napi_value value) {
    bool is = false;
    Check(env, napi_is_typedarray(env, value, &is));
    if (is) {
      FromTypedArray(env, value);
      return;
    }
    napi_valuetype type;
    Check(env, napi_typeof(env, value, &type));
    if (type == napi_string) {
      FromString(env, value);
      return;
    }
    Check(env, napi_is_dataview(env, value, &is));
    if (is) {
      void* data = nullptr;
      Check(env, napi_get_dataview_info(env, value, &size_, &data, nullptr, nullptr));
      data_ = static_cast<const std::uint8_t*>(data);
      return;
    }
    ThrowInvalidArg(env, "data", kDataExpected, Napi::Value(env, value));
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
    Check(env, napi_get_typedarray_info(env, value, &type, &length, &data, nullptr, nullptr));
    data_ = static_cast<const std::uint8_t*>(data);
    switch (type) {
      case napi_int8_array:
      case napi_uint8_array:
      case napi_uint8_clamped_array: size_ = length; return;
      case napi_int16_array:
      case napi_uint16_array: size_ = length * 2; return;
      case napi_int32_array:
      case napi_uint32_array:
      case napi_float32_array: size_ = length * 4; return;
      case napi_float64_array:
      case napi_bigint64_array:
      case napi_biguint64_array: size_ = length * 8; return;
      default: break;
    }
    // A kind newer than this file: Node reports any view's byte length
    // through the Buffer accessor. Never the `byteLength` property, which
    // script can redefine on an instance and so send us past the end.
    Check(env, napi_get_buffer_info(env, value, &data, &size_));
    data_ = static_cast<const std::uint8_t*>(data);
  }

  void FromString(napi_env env, napi_value value) {
    std::size_t units = 0;
    Check(env, napi_get_value_string_utf16(env, value, nullptr, 0, &units));
    char* target = stack_;
    std::size_t room = sizeof stack_;
    // A UTF-16 unit never takes more than 3 UTF-8 bytes; past the stack
    // buffer, measure exactly and allocate once.
    if (units * 3 >= sizeof stack_) {
      Check(env, napi_get_value_string_utf8(env, value, nullptr, 0, &room));
      room += 1;  // napi always writes a NUL terminator
      heap_.reset(new (std::nothrow) char[room]);
      if (!heap_) ThrowWithCode(env, "ERR_OUT_OF_RANGE", "The \"data\" string is too large to hash");
      target = heap_.get();
    }
    Check(env, napi_get_value_string_utf8(env, value, target, room, &size_));
    data_ = reinterpret_cast<const std::uint8_t*>(target);
  }

  const std::uint8_t* data_ = nullptr;
  std::size_t size_ = 0;
  std::unique_ptr<char[]> heap_;
  char stack_[3 * 1024 + 1];
};

Napi::Value Md5Hex(const Napi::CallbackInfo& info) {
  napi_env env = info.Env();
  DataArg data(env, info[0]);
  std::uint8_t digest[16];
  kb::md5(data.data(), data.size(), digest);
  char hex[32];
  kb::md5_hex(digest, hex);
  napi_value out;
  Check(env, napi_create_string_latin1(env, hex, sizeof hex, &out));
  return Napi::Value(env, out);
}

// A tag no other addon's object carries: a borrowed method called on a
// foreign object (even another ObjectWrap) is refused instead of read as ours.
constexpr napi_type_tag kMd5Tag = {0x6b625f6d6435ULL, 0x9c1f3a7e25d84b61ULL};  // "kb_md5"

class Md5 : public Napi::ObjectWrap<Md5> {
 public:
  static Napi::Function Define(Napi::Env env) {
    Napi::Function constructor = DefineClass(env, "Md5", {});
    // The methods go on the prototype as plain functions rather than through
    // InstanceMethod, whose wrapper unwraps `this` before we could check the tag.
    constexpr auto method = static_cast<napi_property_attributes>(napi_writable | napi_configurable);
    Napi::Object prototype = constructor.Get("prototype").As<Napi::Object>();
    prototype.DefineProperties({Napi::PropertyDescriptor::Function(env, prototype, "update", Update, method),
                                Napi::PropertyDescriptor::Function(env, prototype, "digest", Digest, method)});
    return constructor;
  }

  explicit Md5(const Napi::CallbackInfo& info) : Napi::ObjectWrap<Md5>(info) {
    Check(info.Env(), napi_type_tag_object(info.Env(), info.This(), &kMd5Tag));
  }

 private:
  static Md5& FromThis(const Napi::CallbackInfo& info, const char* method) {
    napi_env env = info.Env();
    napi_value self = info.This();
    napi_valuetype type;
    bool tagged = false;
    Check(env, napi_typeof(env, self, &type));
    if (type == napi_object) Check(env, napi_check_object_type_tag(env, self, &kMd5Tag, &tagged));
    if (!tagged) {
      ThrowWithCode(env, "ERR_INVALID_THIS",
                    std::string("Md5.prototype.") + method + " called on an object that is not an Md5",
                    true);
    }
    return *Unwrap(info.This().As<Napi::Object>());
  }

  static Napi::Value Update(const Napi::CallbackInfo& info) {
    Md5& self = FromThis(info, "update");
    if (self.done_) {
      ThrowWithCode(info.Env(), "KB_DIGEST_ALREADY_CALLED",
                    "Md5.update() called after digest(): an Md5 digests once; create a new Md5");
    }
    DataArg data(info.Env(), info[0]);
    self.stream_.update(data.data(), data.size());
    return info.This();
  }

  static Napi::Value Digest(const Napi::CallbackInfo& info) {
    Md5& self = FromThis(info, "digest");
    napi_env env = info.Env();
    Napi::Value encoding = info[0];
    enum { kBuffer, kHex, kBase64 } form = kBuffer;
    if (encoding.IsString()) {
      std::string name = encoding.As<Napi::String>().Utf8Value();
      form = name == "hex" ? kHex : name == "base64" ? kBase64 : kBuffer;
      if (form == kBuffer) ThrowInvalidArg(env, "encoding", "'hex', 'base64' or undefined", encoding);
    } else if (!encoding.IsUndefined()) {
      ThrowInvalidArg(env, "encoding", "'hex', 'base64' or undefined", encoding);
    }
    if (self.done_) {
      ThrowWithCode(env, "KB_DIGEST_ALREADY_CALLED",
                    "Md5.digest() called twice: an Md5 digests once; create a new Md5");
    }
    self.done_ = true;
    std::uint8_t digest[16];
    self.stream_.digest(digest);
    if (form == kBuffer) return Napi::Buffer<std::uint8_t>::Copy(env, digest, sizeof digest);
    char text[32];
    std::size_t length = 32;
    if (form == kHex) {
      kb::md5_hex(digest, text);
    } else {
      kb::md5_base64(digest, text);
      length = 24;
    }
    napi_value out;
    Check(env, napi_create_string_latin1(env, text, length, &out));
    return Napi::Value(env, out);
  }

  kb::md5_stream stream_;
  bool done_ = false;
};

// Per-environment state (main thread and each worker get their own), so no
// static holds a reference into one isolate.
struct Md5AddonData {
  Napi::FunctionReference constructor;
};

}  // namespace

void InitMd5(Napi::Env env, Napi::Object exports) {
  Napi::Function constructor = Md5::Define(env);
  auto* data = new Md5AddonData{Napi::Persistent(constructor)};
  env.SetInstanceData<Md5AddonData>(data);
  exports.Set("md5", Napi::Function::New(env, Md5Hex, "md5"));
  exports.Set("Md5", constructor);
}

}  // namespace kb::js
