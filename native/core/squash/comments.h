// Stage: comments. Comments go, except conditional ones ("<!--[if",
// "…[endif]-->") and "<!--!…". A removed comment is transparent: the white
// space on both sides forms one run, so a second pass finds nothing left to
// merge. It is kept when removing it could glue text into new markup
// ("<" + "div>", "&am" + "p;"): that is, when plain text touches it on both
// sides, or when a form feed is next to it across white space
// (form_feed_before, and the byte after the run that follows it). Its fate
// is decided within kCommentLookahead bytes (state.h): a comment whose end
// comes later is kept, as an unterminated one is, so that a stream holds
// back a bounded number of bytes (docs/decisions/0049-squashing-streams.md).
// The TypeScript twin's counterpart is src/native/twins/squash/comments.ts.
#pragma once

#include <cstddef>

#include "core/squash/bytes.h"
#include "core/squash/state.h"

namespace kb::squash {

struct comment_span {
  size_t end;    // just after the comment (len when unterminated)
  size_t close;  // where its "-->" (or the like) starts (len when unterminated)
  bool closed;   // its end was found
  bool keep;     // conditional, "<!--!", or unterminated: never removed
};

// "<!--" at p. Finds the end as the tokenizer does: "<!-->", "<!--->", else
// the first "-->" or "--!>"; unterminated runs to the end of input. The
// first `clear` bytes from p are known to start no "-->" or "--!>".
comment_span scan_comment(const u8* in, size_t len, size_t p, size_t clear) noexcept;

constexpr size_t kNotFound = static_cast<size_t>(-1);

// Where the first "-->" or "--!>" that starts at or after `from` starts, or
// kNotFound. One cut by the end of the input is not found.
size_t comment_close(const u8* in, size_t len, size_t from) noexcept;

// Just after the "-->" or "--!>" that comment_close found at i.
inline size_t after_close(const u8* in, size_t i) noexcept { return in[i + 2] == '>' ? i + 3 : i + 4; }

// A comment between text holding only white space and a form feed and any
// other text may not go. Chromium gives a text node of HTML white space only
// (form feed included) no box at the start of a block, after a block, or
// after text that ends in white space, so such a form feed is not drawn;
// merged with its neighbour by a removed comment, it would be (or the
// reverse). Collapsing runs never changes which nodes are white space only.
//
// form_feed_before: the text written since the last token holds a form feed
// and nothing but white space. Looks back from out[o], then, past out[0],
// over `before`, what a stream wrote in earlier windows. Stops at the first
// byte that is neither: a '>' ends the last token (or is text: keeping the
// comment is then merely cautious), anything else is text. Since a comment
// this finds is kept, the next search stops at it: searches stay short.
inline bool form_feed_before(const u8* out, size_t o, const written_tail& before) noexcept {
  bool ff = false;
  while (o > 0) {
    const u8 b = out[--o];
    if (b == '\f') {
      ff = true;
    } else if (!is_collapsible(b)) {
      return ff && b == '>';
    }
  }
  ff = ff || before.ff;
  return before.last < 0 ? ff : ff && before.last == '>';
}

// `tail` updated with the n bytes written after it.
inline written_tail tail_after(written_tail tail, const u8* out, size_t n) noexcept {
  bool ff = false;
  while (n > 0) {
    const u8 b = out[--n];
    if (b == '\f') {
      ff = true;
    } else if (!is_collapsible(b)) {
      return {ff, b};
    }
  }
  return {ff || tail.ff, tail.last};
}

// Whether a comment may be removed (it is not kept by scan_comment and not
// inside pre/listing), given what touches it: `after`, the byte just after
// it (-1: the end of the input); `ff_after`, whether the first byte after
// the run of white space that follows it (if any) is a form feed; `bom_next`,
// nothing is written yet and U+FEFF follows, which would become a byte order
// mark at byte 0 (the decoder drops it: a lost character); a run pending
// before it; text just before it; `ff_before` (form_feed_before).
//
// The form feed after it is looked for only past one run: a stream that
// looked further would have to hold back what it passes, and a run does not
// change what a browser makes of the text after it.
KB_INLINE bool comment_removable(int after, bool ff_after, bool bom_next, bool ws_pending, bool prev_text,
                                 bool ff_before) noexcept {
  const bool touching = ws_pending || !prev_text || after < 0 || is_ws(static_cast<u8>(after)) || after == '<';
  return !bom_next && touching && !(prev_text && ff_before) && !ff_after;
}

}  // namespace kb::squash
