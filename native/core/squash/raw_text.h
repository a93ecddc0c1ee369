// Stage: raw text. Where the content of a raw-text element ends, as the
// HTML tokenizer finds it: script, style, textarea, title, xmp, iframe,
// noembed, noframes and noscript up to their end tag (script with its
// <!-- … <script> escape states), plaintext to the end of input. That content
// is copied byte for byte; an unterminated element protects to the end. The
// TypeScript twin's counterpart is src/native/twins/squash/raw-text.ts.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/squash/bytes.h"

namespace kb::squash {

// The tokenizer's script data states: data, then the "<!--" escape and the
// "<script>" double escape inside it, in which "</script>" ends nothing.
enum script_state : u8 { s_data, s_esc, s_esc_dash, s_esc_dash_dash, s_desc, s_desc_dash, s_desc_dash_dash };

struct raw_scan {
  size_t pos;  // the end tag's '<' when found; else where the content is known to go on to
  bool found;  // the end tag was found
  u8 script;   // the script state at pos
};

// Scans the content of the raw-text element of class `f` (html_tables.h)
// from q, in script state `script`. In a final window (the input ends with
// it) an element not ended is content to len. Otherwise the scan stops
// before a '<' that might begin the end tag (or change the script state)
// but is cut by the end of the window: the next window starts there.
raw_scan raw_text_scan(const u8* in, size_t len, size_t q, std::uint32_t f, u8 script, bool final) noexcept;

}  // namespace kb::squash
