// native/core/squash.h: the HTML white-space squasher (docs/architecture.md, "The squasher").
// Plain C++17: no N-API, no allocation, no exceptions. The TypeScript twin
// (src/native/twins/squash-html.ts) implements the same rules byte for byte.
#pragma once

#include <cstddef>
#include <cstdint>

namespace kb {

struct squash_options {
  // 0 copies the input; 1 and 2 squash (level 2's CSS/JS minification lives
  // in the TypeScript middleware, so the core treats 2 as 1).
  int level = 1;
  // Shorten absolute links to `host` in double-quoted <a href> and <img src>.
  bool rewrite_links = false;
  // The request's Host (with its port when the request named one); no
  // rewriting happens without it. Not NUL-terminated.
  const std::uint8_t* host = nullptr;
  std::size_t host_len = 0;
  // The request path (no query); links to it with a query become "?query".
  const std::uint8_t* path = nullptr;
  std::size_t path_len = 0;
};

// Squashes `len` bytes at `in` into `out`, which must hold `len` bytes and
// must not overlap `in`. Returns the number of bytes written, never more than
// `len`. Never fails: every byte sequence is valid input, and the result is
// a fixed point (squashing it again returns the same bytes).
std::size_t squash_html(const std::uint8_t* in, std::size_t len, std::uint8_t* out,
                        const squash_options& opt) noexcept;

}  // namespace kb
