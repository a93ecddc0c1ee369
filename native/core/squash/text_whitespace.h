// Stage: text and white space. How a run of white space collapses, in text
// and inside tags, and whether a run between two tags is dropped. The
// TypeScript twin's counterpart is src/native/twins/squash/text-whitespace.ts.
//
//  * A run of collapsible white space (\t \n \r space) becomes one byte: a
//    line feed if the run held a line break (LF, or CR, which the parser
//    turns into a line feed before anything else; a line break is not always
//    rendered as a space: next to U+200B it vanishes,
//    test/native/squash/squash-lone-cr.test.ts), else a space.
//  * Form feed is never touched: the tokenizer counts it as white space, but
//    CSS does not, and a browser draws it as a glyph that does not collapse
//    with its neighbours. So it is text here: it ends no run and is copied.
//  * A run whose only neighbours are tags (or the start/end of input) is
//    dropped when it lies outside a block box (before a block-level start
//    tag, after a block-level end tag, either side of br/hr/col/frame:
//    kBlock in html_tables.h), or inside <head>, and no formatting element
//    is open. White space just inside a block (after <div>, before </div>)
//    next to inline content stays: it may touch ::before/::after content,
//    or the block may be made inline by CSS, and render.
//  * Inline-styled elements (kInlineStyled: li, dt, dd, figure, form) are
//    block by default, but pages commonly make them inline-block,
//    inline-flex, inline-grid or inline, and then the run between two of
//    them is the space between two menu items ("Home Docs Blog"). Their
//    tags drop a run only when its other side is a line edge either way: a
//    block edge, <head>, the start of a block's content (after a block start
//    tag, or at the start of the document) or its end (before a block end
//    tag, or at the end of the input), where a line's white space is
//    removed by CSS whatever the display. Between two of them, or one and
//    inline content, the run stays (collapsed).
//
// Hot code, all inline: the driver (native/core/squash.cc) calls it for
// every run.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/squash/bytes.h"
#include "core/squash/state.h"

namespace kb::squash {

// Skips a collapsible run at p; true when it held a line feed or a carriage return.
KB_INLINE bool skip_ws(const u8* in, size_t len, size_t& p) noexcept {
  bool lf = false;
#if KB_SQUASH_SSE2
  while (p + 16 <= len) {
    const __m128i v = load16(in + p);
    const unsigned other = ~bits(ws16(v)) & 0xFFFFu;
    const unsigned lfs = bits(_mm_or_si128(eq(v, '\n'), eq(v, '\r')));
    if (other == 0) {
      lf |= lfs != 0;
      p += 16;
      continue;
    }
    const unsigned n = lowest_bit(other);
    lf |= (lfs & ((1u << n) - 1)) != 0;
    p += n;
    return lf;
  }
#endif
  while (p < len && is_collapsible(in[p])) {
    lf |= in[p] == '\n' || in[p] == '\r';
    ++p;
  }
  return lf;
}

// Copies text from p: bytes as they are, and each run between two text
// bytes as one byte (a line feed if it held a line break, else a space),
// which is always its fate, so it is settled here without a round trip.
// Stops before '<' or at the end of input; a run just before them is
// skipped and reported (it needs its right-hand neighbour to be decided):
// returns 0, or 1 for a pending run, 3 for a pending run that held a line
// break (the m_ws_pending and m_ws_lf bits). Starts on a text byte.
KB_INLINE std::uint32_t copy_text(const u8* in, size_t len, u8* out, size_t& p, size_t& o) noexcept {
  for (;;) {
    bool stopped = false;
#if KB_SQUASH_SSE2
    // A lone space or line feed followed by a text byte needs no decision
    // and is copied with the block. A soft byte in the last lane stops the
    // block: its neighbour is in the next one.
    while (p + 16 <= len) {
      const __m128i v = load16(in + p);
      const unsigned soft = bits(_mm_or_si128(eq(v, ' '), eq(v, '\n')));
      const unsigned hard = bits(_mm_or_si128(eq(v, '\t'), eq(v, '\r')));
      const unsigned lts = bits(eq(v, '<'));
      const unsigned stop = lts | hard | (soft & (((soft | hard | lts) >> 1) | 0x8000u));
      store16(out + o, v);
      if (stop == 0) {
        p += 16;
        o += 16;
        continue;
      }
      const unsigned n = lowest_bit(stop);
      p += n;
      o += n;
      stopped = true;
      break;
    }
#endif
    while (!stopped && p < len) {  // the tail, shorter than a block
      const u8 b = in[p];
      if (b == '<') break;
      if (is_collapsible(b)) {
        if ((b != ' ' && b != '\n') || p + 1 >= len) break;
        const u8 next = in[p + 1];
        if (is_collapsible(next) || next == '<') break;
      }
      out[o++] = b;
      ++p;
    }
    if (p >= len || in[p] == '<') return 0;
    const bool lf = skip_ws(in, len, p);  // in[p] is collapsible here
    if (p >= len || in[p] == '<') return lf ? 3u : 1u;
    out[o++] = lf ? '\n' : ' ';
  }
}

// White space inside a tag, outside quoted values, at p (tokenizer white
// space): a collapsible run becomes one byte as in text; a form feed is
// copied as it is.
KB_INLINE void copy_tag_space(const u8* in, size_t len, u8* out, size_t& p, size_t& o) noexcept {
  const u8 b = in[p];
  if (b == '\f') {
    out[o++] = b;
    ++p;
  } else if (p + 1 < len && !is_collapsible(in[p + 1])) {  // the usual single space
    out[o++] = (b == '\n' || b == '\r') ? '\n' : ' ';
    ++p;
  } else {
    const bool lf = skip_ws(in, len, p);
    out[o++] = lf ? '\n' : ' ';
  }
}

// Decides the pending run now that its right-hand neighbour is known;
// returns the output cursor after it. Without branches on the decision,
// which follows the page's shape and predicts badly.
KB_INLINE size_t flush(state& st, u8* out, size_t o, kind next) noexcept {
  const std::uint32_t m = st.mode;
  if (!(m & m_ws_pending)) return o;
  st.mode = m & ~(m_ws_pending | m_ws_lf);
  const bool tags = ((m & m_prev_text) == 0) & (next != kind::text);
  const bool line_start = (m & (m_prev_open | m_doc_start)) != 0;
  const bool line_end = (next == kind::close) | (next == kind::eof);
  const bool edge = ((m & (m_prev_block | m_prev_in_head)) != 0) | (next == kind::block) |
                    (((m & m_prev_sibling) != 0) & line_end) | (line_start & (next == kind::sibling));
  const bool drop = tags & edge & (st.formatting == 0);
  // In bounds: a pending run has consumed input, so o < p; or, in a stream's
  // window, the run is from an earlier one, for which the output has room.
  out[o] = (m & m_ws_lf) ? '\n' : ' ';
  return o + !drop;
}

}  // namespace kb::squash
