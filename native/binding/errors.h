// JavaScript errors thrown by the bindings: TypeErrors that name the bad
// argument (the binding throws for shape, never for user mistakes) and Errors
// carrying a `code` to switch on. Cores never reach this file.
#pragma once

#include <napi.h>

#include <string>

namespace kb::js {

// How a received value reads in a message: `null`, `undefined`,
// `the string 'x'`, `the number 1.5`, or `type object` (as `typeof` says).
// The TypeScript twins describe values the same way (src/native/twins).
inline std::string Describe(Napi::Value value) {
  switch (value.Type()) {
    case napi_undefined:
      return "undefined";
    case napi_null:
      return "null";
    case napi_string:
      return "the string '" + value.As<Napi::String>().Utf8Value() + "'";
    case napi_number:
      return "the number " + value.ToString().Utf8Value();
    case napi_boolean:
      return "type boolean";
    case napi_symbol:
      return "type symbol";
    case napi_function:
      return "type function";
    case napi_bigint:
      return "type bigint";
    default:
      return "type object";
  }
}

// Throws an Error (or TypeError) with `code` set, as Node's own errors carry one.
[[noreturn]] inline void ThrowWithCode(Napi::Env env, const char* code, const std::string& message,
                                       bool type_error = false) {
  Napi::Error error = type_error ? Napi::TypeError::New(env, message) : Napi::Error::New(env, message);
  error.Set("code", Napi::String::New(env, code));
  throw error;
}

// TypeError `The "<name>" argument must be <expected> (received <value>)`,
// code ERR_INVALID_ARG_TYPE like Node's fs and crypto.
[[noreturn]] inline void ThrowInvalidArg(Napi::Env env, const char* name, const char* expected, Napi::Value received) {
  ThrowWithCode(
      env, "ERR_INVALID_ARG_TYPE",
      std::string("The \"") + name + "\" argument must be " + expected + " (received " + Describe(received) + ")",
      true);
}

}  // namespace kb::js
