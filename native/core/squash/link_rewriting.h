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
#include "core/squash/state.h"

namespace kb::squash {

// What became of a double-quoted link value.
enum class link_outcome : u8 {
  closed,  // written through its closing quote, shortened when it points at this site
  open,    // unterminated: copied to the end of the input (a final window only)
  held,    // its closing quote may be in the next window: nothing written
  plain,   // longer than kLinkLookahead (state.h): never shortened; nothing written
};

struct cursors {
  size_t p, o;
  link_outcome outcome;
};

// A double-quoted link value at p (on its opening quote), rewritten. `final`:
// the window ends where the input does; `clear`: that many bytes from p are
// known to hold no closing quote. Takes and returns the cursors by value, so
// the caller's stay in registers.
cursors rewrite_quoted(const u8* in, size_t len, u8* out, size_t p, size_t o, const link_target& t, bool final,
                       size_t clear) noexcept;

// Whether the attribute name in[an0, an1) is the link of a tag of class
// `link` (html_tables.h): href of <a>, src of <img>.
bool names_link(const u8* in, std::uint32_t link, size_t an0, size_t an1) noexcept;

}  // namespace kb::squash
