// JavaScript face of native/core/md5: `md5(data)` and `class Md5`.
//
// The small-input case is dominated by call overhead, so this file stays on
// raw napi calls where they save work: bytes are borrowed from the caller's
// view (no copy, see data_arg.h), strings up to ~1 K characters are
// transcoded onto the stack, and hex is written straight into a Latin-1 string.
#include <cstdint>
#include <string>

#include "binding/binding.h"
#include "binding/data_arg.h"
#include "binding/errors.h"
#include "core/md5.h"

namespace kb::js {
namespace {

Napi::Value Md5Hex(const Napi::CallbackInfo& info) {
  napi_env env = info.Env();
  DataArg data(env, info[0], "data");
  std::uint8_t digest[16];
  kb::md5(data.data(), data.size(), digest);
  char hex[32];
  kb::md5_hex(digest, hex);
  napi_value out;
  ThrowIfFailed(env, napi_create_string_latin1(env, hex, sizeof hex, &out));
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
    ThrowIfFailed(info.Env(), napi_type_tag_object(info.Env(), info.This(), &kMd5Tag));
  }

 private:
  static Md5& FromThis(const Napi::CallbackInfo& info, const char* method) {
    napi_env env = info.Env();
    napi_value self = info.This();
    napi_valuetype type;
    bool tagged = false;
    ThrowIfFailed(env, napi_typeof(env, self, &type));
    if (type == napi_object) ThrowIfFailed(env, napi_check_object_type_tag(env, self, &kMd5Tag, &tagged));
    if (!tagged) {
      ThrowWithCode(env, "ERR_INVALID_THIS",
                    std::string("Md5.prototype.") + method + " called on an object that is not an Md5", true);
    }
    return *Unwrap(info.This().As<Napi::Object>());
  }

  static Napi::Value Update(const Napi::CallbackInfo& info) {
    Md5& self = FromThis(info, "update");
    if (self.done_) {
      ThrowWithCode(info.Env(), "KB_DIGEST_ALREADY_CALLED",
                    "Md5.update() called after digest(): an Md5 digests once; create a new Md5");
    }
    DataArg data(info.Env(), info[0], "data");
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
    ThrowIfFailed(env, napi_create_string_latin1(env, text, length, &out));
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
