// Stage: link rewriting. In double-quoted <a href> and <img src> values, an
// absolute URL to this site becomes root-relative, or "?query" when it points
// at the request path. "This site" is the request's Host (ASCII
// case-insensitive) with the request's scheme: an "http://" link is
// rewritten only on an http request, an "https://" link only on an https
// request, and a scheme-relative "//" link on either, so a link never
// changes scheme (an explicit https link on an http page stays https). The
// TypeScript twin's counterpart is src/native/twins/squash/link-rewriting.ts.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/squash.h"
#include "core/squash/bytes.h"

namespace kb::squash {

struct link_target {
  const u8* host;
  size_t host_len;
  const u8* path;
  size_t path_len;
  request_scheme scheme;
};

struct cursors {
  size_t p, o;
  bool closed;  // the value's closing quote was found
};

// A double-quoted link value at p (on its opening quote), rewritten; an
// unterminated one is copied to the end of input. Takes and returns the
// cursors by value, so the caller's stay in registers.
cursors rewrite_quoted(const u8* in, size_t len, u8* out, size_t p, size_t o, const link_target& t) noexcept;

// Whether the attribute name in[an0, an1) is the link of a tag of class
// `link` (html_tables.h): href of <a>, src of <img>.
bool names_link(const u8* in, std::uint32_t link, size_t an0, size_t an1) noexcept;

}  // namespace kb::squash
