// JavaScript face of native/core/squash: `squashHtml(input, options?)`.
//
// Checks the arguments (the TypeScript twin words its errors the same way),
// then squashes straight from the caller's bytes into memory that stays
// mapped (the stack, or a per-thread scratch buffer), and copies the result
// once into a Buffer of its exact size, so a cached page carries no slack.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "binding/binding.h"
#include "binding/errors.h"
#include "core/squash.h"

namespace kb::js {
namespace {

constexpr const char* kInputExpected = "a string, Buffer, TypedArray or DataView";
constexpr std::size_t kStackBytes = 16 * 1024;

inline void Check(napi_env env, napi_status status) {
  if (status != napi_ok) throw Napi::Error::New(env);
}

// TypeError (or RangeError for a number out of range) naming `options.<name>`.
// With code ERR_INVALID_ARG_VALUE (a string outside the allowed ones) it is a TypeError too.
[[noreturn]] void ThrowOption(Napi::Env env, const char* name, const char* expected, Napi::Value received,
                              const char* code = "ERR_INVALID_ARG_TYPE") {
  const std::string message = std::string("The \"options.") + name + "\" property must be " + expected + " (received " +
                              Describe(received) + ")";
  const bool range = std::string(code) == "ERR_OUT_OF_RANGE";
  Napi::Error error =
      range ? Napi::Error(Napi::RangeError::New(env, message)) : Napi::Error(Napi::TypeError::New(env, message));
  error.Set("code", Napi::String::New(env, code));
  throw error;
}

constexpr const char* kSchemeExpected = "'http', 'https' or undefined";

struct Options {
  int level = 1;
  bool rewrite_links = false;
  bool has_host = false, has_path = false;
  std::string host, path;
  kb::request_scheme scheme = kb::request_scheme::unknown;
};

// Reads level, rewriteLinks, host, path and scheme, in that order, once each (the
// twin reads them in the same order, so getters observe the same calls).
Options ReadOptions(Napi::Env env, Napi::Value value) {
  Options o;
  if (value.IsUndefined()) return o;
  if (value.Type() != napi_object) ThrowInvalidArg(env, "options", "an object or undefined", value);
  Napi::Object object = value.As<Napi::Object>();
  Napi::Value level = object.Get("level");
  if (!level.IsUndefined()) {
    if (!level.IsNumber()) ThrowOption(env, "level", "0, 1 or 2", level);
    const double d = level.As<Napi::Number>().DoubleValue();
    if (d != 0 && d != 1 && d != 2) ThrowOption(env, "level", "0, 1 or 2", level, "ERR_OUT_OF_RANGE");
    o.level = static_cast<int>(d);
  }
  Napi::Value rewrite = object.Get("rewriteLinks");
  if (!rewrite.IsUndefined()) {
    if (!rewrite.IsBoolean()) ThrowOption(env, "rewriteLinks", "a boolean or undefined", rewrite);
    o.rewrite_links = rewrite.As<Napi::Boolean>().Value();
  }
  Napi::Value host = object.Get("host");
  if (!host.IsUndefined()) {
    if (!host.IsString()) ThrowOption(env, "host", "a string or undefined", host);
    o.host = host.As<Napi::String>().Utf8Value();
    o.has_host = true;
  }
  Napi::Value path = object.Get("path");
  if (!path.IsUndefined()) {
    if (!path.IsString()) ThrowOption(env, "path", "a string or undefined", path);
    o.path = path.As<Napi::String>().Utf8Value();
    o.has_path = true;
  }
  Napi::Value scheme = object.Get("scheme");
  if (!scheme.IsUndefined()) {
    if (!scheme.IsString()) ThrowOption(env, "scheme", kSchemeExpected, scheme);
    const std::string s = scheme.As<Napi::String>().Utf8Value();
    if (s == "http") {
      o.scheme = kb::request_scheme::http;
    } else if (s == "https") {
      o.scheme = kb::request_scheme::https;
    } else {
      ThrowOption(env, "scheme", kSchemeExpected, scheme, "ERR_INVALID_ARG_VALUE");
    }
  }
  return o;
}

enum class InputKind { typed_array, data_view, string };

// Classifies `input` without running any script; its bytes are fetched only
// after the options were read, since an options getter could detach or
// shrink the input's ArrayBuffer.
InputKind Classify(napi_env env, napi_value input) {
  bool is = false;
  Check(env, napi_is_typedarray(env, input, &is));
  if (is) return InputKind::typed_array;
  napi_valuetype type;
  Check(env, napi_typeof(env, input, &type));
  if (type == napi_string) return InputKind::string;
  Check(env, napi_is_dataview(env, input, &is));
  if (is) return InputKind::data_view;
  ThrowInvalidArg(env, "input", kInputExpected, Napi::Value(env, input));
}

// The byte view of a TypedArray or DataView, honouring its offset and length.
// Node reports any view's byte length through the Buffer accessor, never
// through a `byteLength` property script could redefine.
void ViewBytes(napi_env env, napi_value input, InputKind kind, const std::uint8_t** data, std::size_t* size) {
  void* raw = nullptr;
  if (kind == InputKind::data_view) {
    Check(env, napi_get_dataview_info(env, input, size, &raw, nullptr, nullptr));
  } else {
    Check(env, napi_get_buffer_info(env, input, &raw, size));
  }
  *data = static_cast<const std::uint8_t*>(raw);
}

// Scratch memory for results, one per thread (a worker thread has its own),
// kept between calls so that squashing writes to pages already mapped: a
// fresh large allocation costs a page fault per 4 KiB, which measured at
// 15-20% of the whole call on large pages. Kept up to kScratchKeep bytes.
constexpr std::size_t kScratchKeep = 8 * 1024 * 1024;

struct Scratch {
  std::uint8_t* data = nullptr;
  std::size_t size = 0;
  ~Scratch() { std::free(data); }
};

napi_value Squash(napi_env env, const std::uint8_t* in, std::size_t len, const kb::squash_options& opt) {
  napi_value out;
  if (len == 0) {
    Check(env, napi_create_buffer(env, 0, nullptr, &out));
    return out;
  }
  if (opt.level == 0) {
    Check(env, napi_create_buffer_copy(env, len, in, nullptr, &out));
    return out;
  }
  if (len <= kStackBytes) {
    std::uint8_t stack[kStackBytes];
    const std::size_t n = kb::squash_html(in, len, stack, opt);
    Check(env, napi_create_buffer_copy(env, n, stack, nullptr, &out));
    return out;
  }
  thread_local Scratch scratch;
  std::uint8_t* target = scratch.data;
  if (scratch.size < len) {
    target = static_cast<std::uint8_t*>(std::malloc(len));
    if (target == nullptr) ThrowWithCode(env, "ERR_MEMORY_ALLOCATION_FAILED", "squashHtml: out of memory");
    if (len <= kScratchKeep) {
      std::free(scratch.data);
      scratch.data = target;
      scratch.size = len;
    }
  }
  const std::size_t n = kb::squash_html(in, len, target, opt);
  const napi_status status = napi_create_buffer_copy(env, n, target, nullptr, &out);
  if (target != scratch.data) std::free(target);
  Check(env, status);
  return out;
}

Napi::Value SquashHtml(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  napi_value input = info[0];
  const InputKind kind = Classify(env, input);
  const Options options = ReadOptions(env, info[1]);

  kb::squash_options opt;
  opt.level = options.level;
  opt.rewrite_links = options.rewrite_links;
  opt.scheme = options.scheme;
  if (options.has_host) {
    opt.host = reinterpret_cast<const std::uint8_t*>(options.host.data());
    opt.host_len = options.host.size();
  }
  if (options.has_path) {
    opt.path = reinterpret_cast<const std::uint8_t*>(options.path.data());
    opt.path_len = options.path.size();
  }

  if (kind == InputKind::string) {
    // Lone surrogates become U+FFFD, as Buffer.from(string) does.
    const std::string utf8 = Napi::String(env, input).Utf8Value();
    return Napi::Value(env, Squash(env, reinterpret_cast<const std::uint8_t*>(utf8.data()), utf8.size(), opt));
  }
  const std::uint8_t* data = nullptr;
  std::size_t size = 0;
  ViewBytes(env, input, kind, &data, &size);
  return Napi::Value(env, Squash(env, data, size, opt));
}

}  // namespace

void InitSquash(Napi::Env env, Napi::Object exports) {
  exports.Set("squashHtml", Napi::Function::New(env, SquashHtml, "squashHtml"));
}

}  // namespace kb::js
