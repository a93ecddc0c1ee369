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

// Where the content of the raw-text element of class `f` (html_tables.h),
// starting at q, ends: at its end tag's '<', or len.
size_t raw_text_end(const u8* in, size_t len, size_t q, std::uint32_t f) noexcept;

}  // namespace kb::squash
