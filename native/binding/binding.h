// The thin layer between JavaScript and the cores: one Init per core, each in
// its own file, all called from addon.cc. Nothing here is visible to the cores.
#pragma once

#include <napi.h>

namespace kb::js {

void InitFlock(Napi::Env env, Napi::Object exports);
void InitMd5(Napi::Env env, Napi::Object exports);
void InitSquash(Napi::Env env, Napi::Object exports);

}  // namespace kb::js
