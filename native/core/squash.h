// native/core/squash.h: the HTML white-space squasher (docs/decisions/0005-squasher-white-space-rules.md
// and 0021-html-squasher-stages-and-tables.md). Plain C++17: no N-API, no allocation, no exceptions.
// The rules live one stage per file in native/core/squash/; the TypeScript
// twin (src/native/twins/squash-html.ts and src/native/twins/squash/) has the
// same files under the same names and gives the same bytes. A body that comes
// in pieces is squashed by kb::squash_stream (squash_stream.h) to the same bytes.
#pragma once

#include <cstddef>
#include <cstdint>

namespace kb {

// The scheme of the request a page answers; link rewriting keeps a link's
// scheme, so it rewrites "http://" links only for http and "https://" links
// only for https (scheme-relative "//" links for any).
enum class request_scheme : std::uint8_t { unknown, http, https };

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
  // The request's scheme; unknown rewrites only scheme-relative links.
  request_scheme scheme = request_scheme::unknown;
};

// Squashes `len` bytes at `in` into `out`, which must hold `len` bytes and
// must not overlap `in`. Returns the number of bytes written, never more than
// `len`. Never fails: every byte sequence is valid input, and the result is
// a fixed point (squashing it again returns the same bytes).
std::size_t squash_html(const std::uint8_t* in, std::size_t len, std::uint8_t* out, const squash_options& opt) noexcept;

}  // namespace kb
