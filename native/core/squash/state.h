// The squasher's state between tokens, shared by its stages. It lives in
// locals of kb::squash_html (native/core/squash.cc), never in an object whose
// address escapes: a byte store through `u8*` may alias any such memory, so
// state kept there would be reloaded after every store; locals stay in
// registers. The TypeScript twin's counterpart is src/native/twins/squash/state.ts.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/squash/bytes.h"

namespace kb::squash {

// What a white-space run touches on its right (its left is in the m_prev_* bits).
// sibling: the start tag of an inline-styled element (kInlineStyled), outside
// its box; close: a block end tag, its near side at the end of the block's
// content (a line edge).
enum class kind : u8 { bof, text, neutral, block, eof, sibling, close };

constexpr std::uint32_t m_ws_pending = 1u << 0;    // a white-space run waits for its right-hand neighbour
constexpr std::uint32_t m_ws_lf = 1u << 1;         // … and it held a line break
constexpr std::uint32_t m_prev_text = 1u << 2;     // the token before the run was text
constexpr std::uint32_t m_prev_block = 1u << 3;    // … or a tag whose far side is outside a block box
constexpr std::uint32_t m_prev_in_head = 1u << 4;  // … after which we were inside <head>
constexpr std::uint32_t m_in_head = 1u << 5;       // after <head>, until something that closes it
constexpr std::uint32_t m_head_allowed = 1u << 6;  // nothing yet makes a browser ignore a <head> tag
constexpr std::uint32_t m_doc_start = 1u << 7;     // no tag or text yet: a doctype here is block-like
constexpr std::uint32_t m_rewrite = 1u << 8;       // rewrite links: option on, a host, no <base> seen
constexpr std::uint32_t m_verbatim = 1u << 9;      // inside pre/listing (depth > 0)

// The token before the run, continued: beside an inline-styled element
// (kInlineStyled) a run goes only at a line edge (text_whitespace.h).
constexpr std::uint32_t m_prev_sibling = 1u << 10;  // the end tag of an inline-styled element
constexpr std::uint32_t m_prev_open = 1u << 11;     // a block start tag: the start of its content
constexpr std::uint32_t m_prev = m_prev_text | m_prev_block | m_prev_in_head | m_prev_sibling | m_prev_open;

struct state {
  std::uint32_t mode;
  size_t depth;       // open pre/listing elements: their content is verbatim
  size_t formatting;  // formatting start tags not yet matched by end tags
};

KB_INLINE void saw_text(state& st) noexcept {
  st.mode = (st.mode & ~(m_prev | m_in_head | m_head_allowed | m_doc_start)) | m_prev_text;
}

// The token just passed was `k`; a following run sees it as its left side.
KB_INLINE void set_prev(state& st, kind k) noexcept {
  const std::uint32_t m = st.mode & ~m_prev;
  st.mode = m | (k == kind::text ? m_prev_text : 0u) | (k == kind::block ? m_prev_block : 0u) |
            ((m & m_in_head) ? m_prev_in_head : 0u);
}

}  // namespace kb::squash
