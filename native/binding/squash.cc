// JavaScript face of native/core/squash: `squashHtml(input, options?)`,
// `squashHtmlAsync(input, options?)`, which squashes a large page on libuv's
// thread pool so the event loop is never held for the whole call, and
// `class SquashStream`, which squashes a body that comes in pieces.
//
// Checks the arguments (the TypeScript twin words its errors the same way),
// then squashes straight from the caller's bytes into memory that stays
// mapped (the stack, or a per-thread scratch buffer), and copies the result
// once into a Buffer of its exact size, so a cached page carries no slack.
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <utility>

#include "binding/binding.h"
#include "binding/data_arg.h"
#include "binding/errors.h"
#include "core/squash.h"
#include "core/squash_stream.h"

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

// The core's options, pointing into `options` (which must outlive them).
kb::squash_options CoreOptions(const Options& options) {
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
  return opt;
}

Napi::Value SquashHtml(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  napi_value input = info[0];
  const InputKind kind = Classify(env, input);
  const Options options = ReadOptions(env, info[1]);
  const kb::squash_options opt = CoreOptions(options);

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

// A large block goes back to the system (its pages unmapped, milliseconds
// for 100 MiB) on a short-lived thread of its own, not on the JavaScript
// thread that collected its Buffer.
constexpr std::size_t kFreeAside = 4 * 1024 * 1024;

void FreeBytes(napi_env, void* data, void* hint) {
  const std::size_t length = reinterpret_cast<std::size_t>(hint);
  if (length < kFreeAside) {
    std::free(data);
    return;
  }
  try {
    std::thread([data] { std::free(data); }).detach();
  } catch (...) {
    std::free(data);  // no thread to be had: free it here
  }
}

// An uninitialised Buffer of `size` bytes in malloc'd memory freed as FreeBytes does.
napi_value ExternalBytes(napi_env env, std::uint8_t* data, std::size_t size) {
  napi_value out;
  const napi_status status =
      napi_create_external_buffer(env, size, data, FreeBytes, reinterpret_cast<void*>(size), &out);
  if (status != napi_ok) {
    std::free(data);
    throw Napi::Error::New(env);
  }
  return out;
}

// largeBuffer(size): an uninitialised Buffer for a large body made in slices
// (a string's UTF-8, a copy), freed off the event loop when collected.
Napi::Value LargeBuffer(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  Napi::Value size = info[0];
  const double n = size.IsNumber() ? size.As<Napi::Number>().DoubleValue() : -1;
  if (!(n >= 1 && n <= 9007199254740991.0) || n != static_cast<double>(static_cast<std::uint64_t>(n))) {
    ThrowInvalidArg(env, "size", "a positive integer", size);
  }
  auto* data = static_cast<std::uint8_t*>(std::malloc(static_cast<std::size_t>(n)));
  if (data == nullptr) ThrowWithCode(env, "ERR_MEMORY_ALLOCATION_FAILED", "largeBuffer: out of memory");
  return Napi::Value(env, ExternalBytes(env, data, static_cast<std::size_t>(n)));
}

// One squash on the thread pool. The input's bytes are borrowed, not copied
// (a copy of a 100 MiB page would itself hold the event loop for tens of
// milliseconds): a reference keeps the view, and so its memory, alive until
// the work is done, and the caller must leave the bytes alone meanwhile. The
// result is malloc'd off the loop, shrunk to its length and handed to
// JavaScript as an external Buffer, so nothing is copied on the loop either.
class SquashWorker : public Napi::AsyncWorker {
 public:
  SquashWorker(Napi::Env env, Napi::Value input, const std::uint8_t* data, std::size_t size, Options options)
      : Napi::AsyncWorker(env, "koa-buffer:squashHtml"),
        deferred_(Napi::Promise::Deferred::New(env)),
        input_(Napi::Persistent(input.As<Napi::Object>())),
        data_(data),
        size_(size),
        options_(std::move(options)) {}

  ~SquashWorker() override { std::free(out_); }

  Napi::Promise Promise() const { return deferred_.Promise(); }

 protected:
  void Execute() override {
    if (size_ == 0) return;
    out_ = static_cast<std::uint8_t*>(std::malloc(size_));
    if (out_ == nullptr) {
      SetError("squashHtml: out of memory");
      return;
    }
    const kb::squash_options opt = CoreOptions(options_);
    if (opt.level == 0) {
      std::memcpy(out_, data_, size_);
      length_ = size_;
    } else {
      length_ = kb::squash_html(data_, size_, out_, opt);
    }
    // Never longer than the input; give the slack back (glibc remaps large blocks, no copy).
    if (length_ > 0 && length_ < size_) {
      if (void* shrunk = std::realloc(out_, length_)) out_ = static_cast<std::uint8_t*>(shrunk);
    }
  }

  void OnOK() override {
    napi_env env = Env();
    napi_value out;
    if (length_ == 0) {
      Check(env, napi_create_buffer(env, 0, nullptr, &out));
    } else {
      // V8 counts the backing store's length towards its GC heuristics by itself: no napi_adjust_external_memory.
      std::uint8_t* owned = out_;
      out_ = nullptr;  // the Buffer owns it now (ExternalBytes frees it if it cannot be made)
      out = ExternalBytes(env, owned, length_);
    }
    input_.Reset();
    deferred_.Resolve(Napi::Value(env, out));
  }

  void OnError(const Napi::Error& error) override {
    input_.Reset();
    Napi::Error coded = Napi::Error::New(Env(), error.Message());
    coded.Set("code", Napi::String::New(Env(), "ERR_MEMORY_ALLOCATION_FAILED"));
    deferred_.Reject(coded.Value());
  }

 private:
  Napi::Promise::Deferred deferred_;
  Napi::ObjectReference input_;
  const std::uint8_t* data_;
  std::size_t size_;
  Options options_;
  std::uint8_t* out_ = nullptr;
  std::size_t length_ = 0;
};

// squashHtmlAsync(input, options?): a Promise of the same bytes squashHtml gives.
// Checks its arguments as squashHtml does and throws for bad ones; a string
// is refused: its UTF-8 would be made on the event loop (the caller converts
// a large string in slices first).
Napi::Value SquashHtmlAsync(const Napi::CallbackInfo& info) {
  Napi::Env env = info.Env();
  napi_value input = info[0];
  const InputKind kind = Classify(env, input);
  if (kind == InputKind::string) ThrowInvalidArg(env, "input", "a Buffer, TypedArray or DataView", info[0]);
  Options options = ReadOptions(env, info[1]);
  const std::uint8_t* data = nullptr;
  std::size_t size = 0;
  ViewBytes(env, input, kind, &data, &size);
  auto* worker = new SquashWorker(env, info[0], data, size, std::move(options));
  Napi::Promise promise = worker->Promise();
  worker->Queue();
  return promise;
}

// A tag no other addon's object carries: a borrowed method called on a
// foreign object (even another ObjectWrap) is refused instead of read as ours.
constexpr napi_type_tag kSquashStreamTag = {0x6b625f737173ULL, 0x3d7a91c4e0b25f18ULL};  // "kb_sqs"

// new SquashStream(options?): the core's squash_stream (native/core/squash_stream.h)
// with the options of squashHtml; feed(chunk) and finish() return what they
// decide as a new Buffer, `held` the bytes held back.
class SquashStream : public Napi::ObjectWrap<SquashStream> {
 public:
  static Napi::Function Define(Napi::Env env) {
    Napi::Function constructor = DefineClass(env, "SquashStream", {});
    // Plain functions on the prototype, not InstanceMethod, whose wrapper
    // unwraps `this` before the tag could be checked (md5.cc does the same).
    constexpr auto method = static_cast<napi_property_attributes>(napi_writable | napi_configurable);
    Napi::Object prototype = constructor.Get("prototype").As<Napi::Object>();
    prototype.DefineProperties({Napi::PropertyDescriptor::Function(env, prototype, "feed", Feed, method),
                                Napi::PropertyDescriptor::Function(env, prototype, "finish", Finish, method),
                                Napi::PropertyDescriptor::Accessor(env, prototype, "held", Held, napi_configurable)});
    constructor.DefineProperty(Napi::PropertyDescriptor::Value(
        "maxHeld", Napi::Number::New(env, static_cast<double>(kb::squash_stream::max_held)), napi_enumerable));
    return constructor;
  }

  explicit SquashStream(const Napi::CallbackInfo& info) : Napi::ObjectWrap<SquashStream>(info), env_(info.Env()) {
    options_ = ReadOptions(info.Env(), info[0]);
    opt_ = CoreOptions(options_);  // points into options_, which lives as long as the stream
    stream_ = std::make_unique<kb::squash_stream>(opt_);
    // The core holds room for the bytes it may hold back (tens of KiB): the
    // garbage collector is told, so that streams nobody finished do not
    // pile up behind small JavaScript objects.
    Napi::MemoryManagement::AdjustExternalMemory(info.Env(), static_cast<std::int64_t>(sizeof(kb::squash_stream)));
    ThrowIfFailed(info.Env(), napi_type_tag_object(info.Env(), info.This(), &kSquashStreamTag));
  }

  ~SquashStream() override { Release(); }

 private:
  static SquashStream& FromThis(const Napi::CallbackInfo& info, const char* method) {
    napi_env env = info.Env();
    napi_value self = info.This();
    napi_valuetype type;
    bool tagged = false;
    ThrowIfFailed(env, napi_typeof(env, self, &type));
    if (type == napi_object) ThrowIfFailed(env, napi_check_object_type_tag(env, self, &kSquashStreamTag, &tagged));
    if (!tagged) {
      ThrowWithCode(env, "ERR_INVALID_THIS",
                    std::string("SquashStream.prototype.") + method + " called on an object that is not a SquashStream",
                    true);
    }
    return *Unwrap(info.This().As<Napi::Object>());
  }

  // A finished stream gives its memory back at once.
  void Release() {
    if (!stream_) return;
    stream_.reset();
    napi_adjust_external_memory(env_, -static_cast<std::int64_t>(sizeof(kb::squash_stream)), nullptr);
  }

  void CheckOpen(napi_env env, const char* method) const {
    if (!stream_) {
      ThrowWithCode(env, "KB_SQUASH_STREAM_FINISHED",
                    std::string("SquashStream.") + method +
                        "() called after finish(): a SquashStream squashes one body; create a new one");
    }
  }

  // What the core wrote into scratch memory of `bound` bytes, as a new Buffer of its exact size.
  template <typename Write>
  static Napi::Value Written(napi_env env, std::size_t bound, Write write) {
    thread_local Scratch scratch;
    std::uint8_t* target = scratch.data;
    if (scratch.size < bound) {
      target = static_cast<std::uint8_t*>(std::malloc(bound));
      if (target == nullptr) ThrowWithCode(env, "ERR_MEMORY_ALLOCATION_FAILED", "SquashStream: out of memory");
      if (bound <= kScratchKeep) {
        std::free(scratch.data);
        scratch.data = target;
        scratch.size = bound;
      }
    }
    const std::size_t n = write(target, bound);
    napi_value out;
    const napi_status status = napi_create_buffer_copy(env, n, target, nullptr, &out);
    if (target != scratch.data) std::free(target);
    ThrowIfFailed(env, status);
    return Napi::Value(env, out);
  }

  static Napi::Value Feed(const Napi::CallbackInfo& info) {
    SquashStream& self = FromThis(info, "feed");
    self.CheckOpen(info.Env(), "feed");
    DataArg chunk(info.Env(), info[0], "chunk");
    kb::squash_stream& stream = *self.stream_;
    return Written(info.Env(), kb::squash_stream::feed_bound(chunk.size()), [&](std::uint8_t* out, std::size_t cap) {
      return stream.feed(chunk.data(), chunk.size(), out, cap);
    });
  }

  static Napi::Value Finish(const Napi::CallbackInfo& info) {
    SquashStream& self = FromThis(info, "finish");
    self.CheckOpen(info.Env(), "finish");
    kb::squash_stream& stream = *self.stream_;
    Napi::Value out = Written(info.Env(), kb::squash_stream::finish_bound(),
                              [&](std::uint8_t* out, std::size_t cap) { return stream.finish(out, cap); });
    self.Release();
    return out;
  }

  static Napi::Value Held(const Napi::CallbackInfo& info) {
    SquashStream& self = FromThis(info, "held");
    return Napi::Number::New(info.Env(), self.stream_ ? static_cast<double>(self.stream_->held()) : 0.0);
  }

  napi_env env_;
  Options options_;
  kb::squash_options opt_;
  std::unique_ptr<kb::squash_stream> stream_;  // null once finished
};

}  // namespace

void InitSquash(Napi::Env env, Napi::Object exports) {
  exports.Set("squashHtml", Napi::Function::New(env, SquashHtml, "squashHtml"));
  exports.Set("squashHtmlAsync", Napi::Function::New(env, SquashHtmlAsync, "squashHtmlAsync"));
  exports.Set("largeBuffer", Napi::Function::New(env, LargeBuffer, "largeBuffer"));
  exports.Set("SquashStream", SquashStream::Define(env));
}

}  // namespace kb::js
