// Stage: comments. Comments go, except conditional ones ("<!--[if",
// "…[endif]-->") and "<!--!…". A removed comment is transparent: the white
// space on both sides forms one run, so a second pass finds nothing left to
// merge. It is kept when removing it could glue text into new markup
// ("<" + "div>", "&am" + "p;"): that is, when plain text touches it on both
// sides. The TypeScript twin's counterpart is src/native/twins/squash/comments.ts.
#pragma once

#include <cstddef>

#include "core/squash/bytes.h"

namespace kb::squash {

struct comment_span {
  size_t end;  // just after the comment (len when unterminated)
  bool keep;   // conditional, "<!--!", or unterminated: never removed
};

// "<!--" at p. Finds the end as the tokenizer does: "<!-->", "<!--->", else
// the first "-->" or "--!>"; unterminated runs to the end of input.
comment_span scan_comment(const u8* in, size_t len, size_t p) noexcept;

// Whether a comment ending at `end` may be removed (it is not kept by
// scan_comment and not inside pre/listing), given what touches it: a run
// pending before it, text just before it, and the bytes after it. Kept also
// when nothing is written yet and U+FEFF follows, which would become a byte
// order mark at byte 0 (the decoder drops it: a lost character).
KB_INLINE bool comment_removable(const u8* in, size_t len, size_t end, bool ws_pending, bool prev_text,
                                 bool nothing_written) noexcept {
  const bool bom_next =
      nothing_written && !ws_pending && end + 3 <= len && in[end] == 0xEF && in[end + 1] == 0xBB && in[end + 2] == 0xBF;
  return !bom_next && (ws_pending || !prev_text || end == len || is_ws(in[end]) || in[end] == '<');
}

}  // namespace kb::squash
