// The squasher's state between tokens, shared by its stages. It lives in
// locals of the driver (native/core/squash.cc), never in an object whose
// address escapes while a window is squashed: a byte store through `u8*` may
// alias any such memory, so state kept there would be reloaded after every
// store; locals stay in registers. A stream (kb::squash_stream) copies it in
// and out once per window. The TypeScript twin's counterpart is
// src/native/twins/squash/state.ts.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/squash.h"
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

// The tokenizer's states inside a tag, after its name (tags_attributes.h).
enum class tag_state : u8 { before_name, attr_name, after_name, before_value, unquoted, after_quoted, self_closing };

// ---------------------------------------------------------------------------
// Streams (kb::squash_stream). A stream is squashed a window at a time, and
// a window may end anywhere. Where it ends inside a token whose fate is
// decided (a tag's attributes, raw text, a doctype), the token's bytes are
// written as they come and `progress` says where the next window resumes.
// Where the fate needs bytes the window does not have yet (a tag name that
// may go on, a possible comment, a link that may be shortened), the driver
// stops before the token and keeps its bytes for the next window
// (docs/decisions/0049-squashing-streams.md bounds them).
// ---------------------------------------------------------------------------

// A comment decides its fate within this many bytes from its "<!--": one
// whose end comes later is kept, as an unterminated one is.
constexpr size_t kCommentLookahead = 32 * 1024;

// A link value (between its quotes) longer than this is copied as it is,
// never shortened: its end decides whether it is shortened.
constexpr size_t kLinkLookahead = 4 * 1024;

// The most bytes a stream holds back: a comment within its look-ahead, the
// three bytes after it that may be a byte order mark (comments.h).
constexpr size_t kHoldMax = kCommentLookahead + 4;

// Which token a window stopped inside.
enum class resume : u8 { none, tag_name, tag_body, raw_text, opaque, long_comment };

// A tag cut by the end of a window, after its name (tags_attributes.h).
// In attr_name, the name began in an earlier window (a name that may be the
// link's is never cut: tags_attributes.h keeps it whole), so it is not the link.
struct tag_cursor {
  tag_state s = tag_state::before_name;
  bool link_name = false;  // the attribute named last is the tag's link (href of <a>, src of <img>)
  u8 quote = 0;            // inside a value quoted with this byte
};

struct progress {
  resume at = resume::none;
  kind k = kind::neutral;  // opaque: what the token counts as once it ends
  bool end_tag = false;    // tag_name, tag_body
  u8 script = 0;           // raw_text: the script data state (raw_text.h)
  std::uint32_t f = 0;     // tag_name, tag_body, raw_text: the tag's class (html_tables.h)
  tag_cursor tag;          // tag_body
};

// The page's own address, for link rewriting (link_rewriting.h).
struct link_target {
  const u8* host;
  size_t host_len;
  const u8* path;
  size_t path_len;
  request_scheme scheme;
};

// What comments look back over in the output written before a window
// (form_feed_before in comments.h): whether its trailing white space holds a
// form feed, and the byte before that white space (-1: none).
struct written_tail {
  bool ff = false;
  int last = -1;
};

// What one window is squashed with besides the state between tokens, and
// what it reports when it stops. A whole body is one window with nothing
// before it, and never stops.
struct window {
  link_target target;
  written_tail before;  // the output written before this window's
  bool wrote_before;    // … and whether there was any
  progress pr;          // where the window stopped inside a token
  // Where the bytes kept for the next window end in a run of collapsible
  // white space: the run is kept as one byte (a line feed if it held a line
  // break), which decides everything the run does (comments.h says why).
  size_t compact_from;
  // A window that stops before a comment or a link value says how many of
  // its bytes hold no end for it (clear_out); the next window, which starts
  // with them, looks for the end past them (clear_in), so a long one fed in
  // small pieces is searched once, not once per piece.
  size_t clear_in;
  size_t clear_out;
};

// A stream's state between windows.
struct stream_state {
  state st;
  progress pr;
  written_tail tail;     // the output so far, as comments look back over it
  bool wrote = false;    // any byte written
  bool started = false;  // past the check for a byte order mark
  size_t clear = 0;      // window::clear_out of the last window
};

}  // namespace kb::squash
