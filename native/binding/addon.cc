// Module entry: registers each core's exports and the source stamp that ties
// this binary to the sources it was built from (see scripts/source-stamp.mjs).
#include "binding/binding.h"

#define KB_STRINGIFY2(x) #x
#define KB_STRINGIFY(x) KB_STRINGIFY2(x)

namespace kb::js {

static Napi::Object Init(Napi::Env env, Napi::Object exports) {
#ifdef KB_HAVE_FLOCK
  // Left out of Windows builds (binding.gyp): src/native/core.ts then refuses FileLock.
  InitFlock(env, exports);
#endif
  InitMd5(env, exports);
  InitSquash(env, exports);
  exports.Set("sourceStamp", Napi::String::New(env, KB_STRINGIFY(KB_SOURCE_STAMP)));
  return exports;
}

}  // namespace kb::js

// NODE_API_MODULE pastes its second argument into an identifier, so it
// needs an unqualified name: `kb::js::Init` does not compile there.
static Napi::Object KoaBufferInit(Napi::Env env, Napi::Object exports) { return kb::js::Init(env, exports); }

NODE_API_MODULE(koa_buffer, KoaBufferInit)
