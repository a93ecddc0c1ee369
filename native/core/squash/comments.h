// Stage: comments. Comments go, except conditional ones ("<!--[if",
// "…[endif]-->") and "<!--!…". A removed comment is transparent: the white
// space on both sides forms one run, so a second pass finds nothing left to
// merge. It is kept when removing it could glue text into new markup
// ("<" + "div>", "&am" + "p;"): that is, when plain text touches it on both
// sides, or when the text on one side is white space with a form feed
// (form_feed_before, form_feed_after). The TypeScript twin's counterpart is src/native/twins/squash/comments.ts.
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

// A comment between text holding only white space and a form feed and any
// other text may not go. Chromium gives a text node of HTML white space only
// (form feed included) no box at the start of a block, after a block, or
// after text that ends in white space, so such a form feed is not drawn;
// merged with its neighbour by a removed comment, it would be (or the
// reverse). Collapsing runs never changes which nodes are white space only.
//
// form_feed_before: the text written since the last token (out[0, o)) holds
// a form feed and nothing but white space. Stops at the first byte that is
// neither: a '>' ends the last token (or is text: keeping the comment is
// then merely cautious), anything else is text. Since a comment this finds
// is kept, the next search stops at it: searches stay short.
inline bool form_feed_before(const u8* out, size_t o) noexcept {
  bool ff = false;
  while (o > 0) {
    const u8 b = out[--o];
    if (b == '\f') {
      ff = true;
    } else if (!is_collapsible(b)) {
      return ff && b == '>';
    }
  }
  return ff;
}

// form_feed_after: the text from q up to the next '<' (or the end) holds a
// form feed and nothing but white space.
inline bool form_feed_after(const u8* in, size_t len, size_t q) noexcept {
  bool ff = false;
  for (; q < len; ++q) {
    const u8 b = in[q];
    if (b == '\f') {
      ff = true;
    } else if (!is_collapsible(b)) {
      return ff && b == '<';
    }
  }
  return ff;
}

// Whether a comment ending at `end` may be removed (it is not kept by
// scan_comment and not inside pre/listing), given what touches it: a run
// pending before it, text just before it, the bytes after it, and the output
// so far. Kept also when nothing is written yet and U+FEFF follows, which
// would become a byte order mark at byte 0 (the decoder drops it: a lost
// character), and when the text on either side holds only white space and a
// form feed (form_feed_before, form_feed_after).
KB_INLINE bool comment_removable(const u8* in, size_t len, size_t end, bool ws_pending, bool prev_text, const u8* out,
                                 size_t o) noexcept {
  const bool bom_next =
      o == 0 && !ws_pending && end + 3 <= len && in[end] == 0xEF && in[end + 1] == 0xBB && in[end + 2] == 0xBF;
  return !bom_next && (ws_pending || !prev_text || end == len || is_ws(in[end]) || in[end] == '<') &&
         !(prev_text && form_feed_before(out, o)) && !form_feed_after(in, len, end);
}

}  // namespace kb::squash
