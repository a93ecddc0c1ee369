// Stage: tags and attributes. Start and end tags as the HTML tokenizer reads
// them: the tag name's class (html_tables.h, by a compile-time perfect hash),
// the attribute states, and what a tag does to the state: block edges for
// the white space around it, <head>, formatting elements, pre/listing depth,
// the raw text that follows. Inside a tag, white space outside quotes
// collapses as in text (text_whitespace.h); quoted values are copied byte
// for byte. The TypeScript twin's counterpart is
// src/native/twins/squash/tags-attributes.ts.
//
// Hot code, all inline: the driver (native/core/squash.cc) calls it for
// every tag.
#pragma once

#include <cstddef>
#include <cstdint>

#include "core/html_tables.h"
#include "core/squash/bytes.h"
#include "core/squash/link_rewriting.h"
#include "core/squash/raw_text.h"
#include "core/squash/state.h"
#include "core/squash/text_whitespace.h"

namespace kb::squash {

using namespace html;

// ---------------------------------------------------------------------------
// Tag names: a perfect hash over html_tables.h's kTags, found at compile
// time: every listed name has a slot of its own, so a lookup is one hash,
// one load and one compare, with no probing and no branch that depends on
// the name.
// ---------------------------------------------------------------------------

// A name as two little-endian words of lowercase bytes: 0..7 and 8..9.
struct name_key {
  std::uint64_t lo = 0;
  std::uint16_t hi = 0;
};

constexpr name_key key_of(const char* s, size_t n) {
  name_key k;
  for (size_t i = 0; i < n && i < 8; ++i) k.lo |= static_cast<std::uint64_t>(static_cast<u8>(s[i])) << (8 * i);
  for (size_t i = 8; i < n; ++i) k.hi = static_cast<std::uint16_t>(k.hi | (static_cast<u8>(s[i]) << (8 * (i - 8))));
  return k;
}

constexpr unsigned kTagBits = 10;
constexpr unsigned kTagSlots = 1u << kTagBits;

constexpr unsigned slot_of(std::uint64_t lo, std::uint64_t hi_len, std::uint64_t mul) {
  return static_cast<unsigned>(((lo ^ (hi_len * 0xC2B2AE3D27D4EB4Full)) * mul) >> (64 - kTagBits));
}

struct tag_slot {
  std::uint64_t lo;      // name bytes 0..7, lowercase
  std::uint64_t hi_len;  // name bytes 8..9, and the length in bits 16..23; 0: empty
  std::uint32_t flags;
};

struct tag_table {
  std::uint64_t mul;
  tag_slot s[kTagSlots];
};

constexpr size_t name_length(const char* s) {
  size_t n = 0;
  while (s[n] != 0) ++n;
  return n;
}

constexpr tag_table make_tag_table() {
  tag_table t{};
  for (std::uint64_t mul = 0x9E3779B97F4A7C15ull;; mul += 0x2545F4914F6CDD1Dull) {
    t = tag_table{};
    t.mul = mul;
    bool clash = false;
    for (const tag_entry& e : kTags) {
      const size_t n = name_length(e.name);
      const name_key k = key_of(e.name, n);
      const std::uint64_t hi_len = k.hi | (static_cast<std::uint64_t>(n) << 16);
      tag_slot& slot = t.s[slot_of(k.lo, hi_len, mul)];
      if (slot.hi_len != 0) {
        clash = true;
        break;
      }
      slot = tag_slot{k.lo, hi_len, e.flags};
    }
    if (!clash) return t;
  }
}

inline constexpr tag_table kTagTable = make_tag_table();

// The class of a lowercase name given as its key and length (1..10).
inline std::uint32_t lookup_tag(std::uint64_t lo, std::uint16_t hi, size_t n) noexcept {
  const std::uint64_t hi_len = hi | (static_cast<std::uint64_t>(n) << 16);
  const tag_slot& t = kTagTable.s[slot_of(lo, hi_len, kTagTable.mul)];
  const std::uint32_t match = static_cast<std::uint32_t>((t.lo == lo) & (t.hi_len == hi_len));
  return t.flags & (0u - match);  // no branch: which names come is unpredictable
}

// The class of a tag name (any case).
inline std::uint32_t classify_tag(const u8* name, size_t n) noexcept {
  if (n == 0 || n > 10) return 0;
  std::uint64_t lo = 0;
  std::uint16_t hi = 0;
  for (size_t i = 0; i < n && i < 8; ++i) lo |= static_cast<std::uint64_t>(lower(name[i])) << (8 * i);
  for (size_t i = 8; i < n; ++i) hi = static_cast<std::uint16_t>(hi | (lower(name[i]) << (8 * (i - 8))));
  return lookup_tag(lo, hi, n);
}

// ---------------------------------------------------------------------------
// Attributes
// ---------------------------------------------------------------------------

// An attribute name runs to white space, '/', '>' or '='.
KB_INLINE void copy_attr_name(const u8* in, size_t len, u8* out, size_t& p, size_t& o) noexcept {
#if KB_SQUASH_SSE2
  const auto mask = [](__m128i v) {
    return bits(_mm_or_si128(_mm_or_si128(control_or_space16(v), eq(v, '=')), _mm_or_si128(eq(v, '/'), eq(v, '>'))));
  };
#else
  const auto mask = [](int) { return 0u; };
#endif
  copy_run(in, len, out, p, o, mask, [](u8 c) { return is_name_end(c) || c == '='; });
}

// An unquoted attribute value runs to white space or '>'.
KB_INLINE void copy_unquoted(const u8* in, size_t len, u8* out, size_t& p, size_t& o) noexcept {
#if KB_SQUASH_SSE2
  const auto mask = [](__m128i v) { return bits(_mm_or_si128(control_or_space16(v), eq(v, '>'))); };
#else
  const auto mask = [](int) { return 0u; };
#endif
  copy_run(in, len, out, p, o, mask, [](u8 c) { return is_ws(c) || c == '>'; });
}

// A quoted value after its opening quote, through its closing quote.
// Returns false when the input (or a stream's window) ends first: then it is
// copied to the end.
KB_INLINE bool copy_quoted_rest(const u8* in, size_t len, u8* out, size_t& p, size_t& o, u8 quote) noexcept {
#if KB_SQUASH_SSE2
  const __m128i q = _mm_set1_epi8(static_cast<char>(quote));
  while (p + 16 <= len) {
    const __m128i v = load16(in + p);
    store16(out + o, v);
    const unsigned m = bits(_mm_cmpeq_epi8(v, q));
    if (m != 0) {
      const unsigned k = lowest_bit(m) + 1;  // through the closing quote
      p += k;
      o += k;
      return true;
    }
    p += 16;
    o += 16;
  }
#endif
  const size_t close = find_byte(in, p, len, quote);
  if (close == len) {
    copy_bytes(in, len, out, p, o, len);
    return false;
  }
  copy_bytes(in, len, out, p, o, close + 1);
  return true;
}

// A quoted value, from its opening quote at p through its closing quote.
// Returns false when unterminated: then it is copied to the end of input.
KB_INLINE bool copy_quoted(const u8* in, size_t len, u8* out, size_t& p, size_t& o, u8 quote) noexcept {
  out[o++] = quote;
  ++p;
  return copy_quoted_rest(in, len, out, p, o, quote);
}

// What became of a quoted value: copied through its closing quote; copied
// to the end of the input or window (open); or, a link whose closing quote
// may be in a stream's next window, not written yet (held).
enum class value : u8 { closed, open, held };

// A quoted value at p, rewritten when `link` says the attribute is the
// tag's link (link_rewriting.h).
template <bool Final>
KB_INLINE value copy_value(const u8* in, size_t len, u8* out, size_t& p, size_t& o, u8 quote, bool link,
                           window& w) noexcept {
  if (link) {
    const cursors c = rewrite_quoted(in, len, out, p, o, w.target, Final, p == 0 ? w.clear_in : 0);
    if (c.outcome == link_outcome::held) w.clear_out = len - p;  // no closing quote in what the window had
    if (c.outcome != link_outcome::plain) {
      p = c.p, o = c.o;
      if (c.outcome == link_outcome::closed) return value::closed;
      return c.outcome == link_outcome::held ? value::held : value::open;
    }
  }
  return copy_quoted(in, len, out, p, o, quote) ? value::closed : value::open;
}

// How a tag body ended: at its '>', at the end of the input (the browser
// drops such a tag), or at the end of a stream's window (`tc` says where).
enum class body : u8 { closed, open, stopped };

// The tag body, after the name: attributes and the closing '>'. Follows the
// tokenizer's attribute states, starting in those of `tc` (a stream resumes
// a tag a window cut). Attribute names and values are copied in runs; only
// the bytes that change state are looked at one by one. `link` is the tag's
// class when its href/src may be rewritten, else 0.
//
// Where a window ends, the tag's bytes so far are written, except two whose
// output the next bytes decide: a white-space run (one byte, a line feed if
// any of the run held a line break), kept as one byte for the next window;
// and an attribute name of up to four bytes in a tag whose link may be
// rewritten (it may be "href" or "src"), kept whole.
template <bool Final>
KB_INLINE body tag_body(const u8* in, size_t len, u8* out, size_t& p, size_t& o, bool verbatim, std::uint32_t link,
                        window& w, tag_cursor& tc) noexcept {
  using st = tag_state;
  constexpr size_t kEarlier = static_cast<size_t>(-1);
  st s = tc.s;
  size_t an0 = 0, an1 = 0;  // the current attribute name (an0 kEarlier: named in an earlier window, tc says)
  // Whether a value quoted with `q` is the tag's link, to be rewritten.
  const auto link_value = [&](u8 q) {
    return link != 0 && q == '"' && (an0 == kEarlier ? tc.link_name : names_link(in, link, an0, an1));
  };
  const auto stop = [&](st at, u8 quote) {
    const bool named = at == st::after_name || at == st::before_value;
    tc = tag_cursor{at, named && link_value('"'), quote};
    return body::stopped;
  };
  if (tc.quote != 0) {  // a quoted value an earlier window cut
    if (!copy_quoted_rest(in, len, out, p, o, tc.quote)) return Final ? body::open : stop(st::after_quoted, tc.quote);
    s = st::after_quoted;
  } else if (s == st::attr_name) {  // an attribute name an earlier window cut: long, so not the link
    an0 = kEarlier;
    tc.link_name = false;
    copy_attr_name(in, len, out, p, o);
  } else if (s == st::after_name || s == st::before_value) {
    an0 = kEarlier;
  }
  while (p < len) {
    const u8 b = in[p];
    if (is_ws(b)) {
      if (s == st::attr_name) {
        an1 = p;
        s = st::after_name;
      } else if (s == st::unquoted || s == st::after_quoted || s == st::self_closing) {
        s = st::before_name;
      }
      if (verbatim) {
        out[o++] = b;
        ++p;
        continue;
      }
      const size_t run = p;
      copy_tag_space(in, len, out, p, o);
      if (!Final && p == len && is_collapsible(b)) {  // the run may go on with a line break
        --o;
        p = run;
        w.compact_from = run;
        return stop(s, 0);
      }
      continue;
    }
    if (b == '>') {  // closes the tag in every state outside a quoted value
      out[o++] = b;
      ++p;
      return body::closed;
    }
    if (s == st::before_value) {
      if (b == '"' || b == '\'') {
        const value v = copy_value<Final>(in, len, out, p, o, b, link_value(b), w);
        if (v == value::held) return stop(st::before_value, 0);
        if (v == value::open) return Final ? body::open : stop(st::after_quoted, b);
        s = st::after_quoted;
      } else {
        copy_unquoted(in, len, out, p, o);
        s = st::unquoted;
      }
      continue;
    }
    if (b == '/' && s != st::attr_name && s != st::unquoted) {
      out[o++] = b;
      ++p;
      s = st::self_closing;
      continue;
    }
    if (b == '=' && (s == st::after_name || s == st::attr_name)) {
      if (s == st::attr_name) an1 = p;
      out[o++] = b;
      ++p;
      s = st::before_value;
      continue;
    }
    if (s == st::attr_name) {  // stopped on '/': the name ends, self-closing follows
      an1 = p;
      out[o++] = b;
      ++p;
      s = st::self_closing;
      continue;
    }
    if (s == st::unquoted) {  // a value an earlier window cut: it runs on to white space or '>'
      copy_unquoted(in, len, out, p, o);
      continue;
    }
    // before_name, after_name, after_quoted, self_closing: a new attribute
    // name starts here; its first byte may be '=' or a quote.
    const st before = s;
    an0 = p;
    out[o++] = b;
    ++p;
    copy_attr_name(in, len, out, p, o);
    s = st::attr_name;
    if (!Final && p == len) {
      if (link == 0 || p - an0 > 4) {
        tc.link_name = false;
        an0 = kEarlier;
        return stop(st::attr_name, 0);
      }
      o -= p - an0;  // "href" or "src" perhaps: kept whole for the next window
      p = an0;
      return stop(before, 0);
    }
    // The usual name="value" straight through, without going round the loop.
    if (p + 1 < len && in[p] == '=') {
      an1 = p;
      const u8 q = in[p + 1];
      if (q == '"' || q == '\'') {
        out[o++] = '=';
        ++p;
        const value v = copy_value<Final>(in, len, out, p, o, q, link_value(q), w);
        if (v == value::held) return stop(st::before_value, 0);
        if (v == value::open) return Final ? body::open : stop(st::after_quoted, q);
        s = st::after_quoted;
      }
    }
  }
  return Final ? body::open : stop(s, 0);
}

// ---------------------------------------------------------------------------
// The tag
// ---------------------------------------------------------------------------

// The content of a raw-text element from p, in script state `script`. A
// stream's window that ends inside it stops there (progress raw_text).
template <bool Final>
KB_INLINE bool raw_text(const u8* in, size_t len, u8* out, size_t& p, size_t& o, std::uint32_t f, u8 script,
                        window& w) noexcept {
  const raw_scan r = raw_text_scan(in, len, p, f, script, Final);
  copy_bytes(in, len, out, p, o, r.pos);
  if (Final || r.found) return false;
  w.pr = progress{};
  w.pr.at = resume::raw_text;
  w.pr.f = f;
  w.pr.script = r.script;
  return true;
}

// What a tag of class `f` does to the state once it has ended (`closed`),
// or the input has: block edges for the white space around it, <head>,
// formatting elements, pre/listing depth, and the raw text that follows.
// Returns true when a stream's window stopped in that raw text.
template <bool Final>
KB_INLINE bool tag_end(state& st, const u8* in, size_t len, u8* out, size_t& p, size_t& o, std::uint32_t f,
                       bool end_tag, bool verbatim, bool closed, window& w) noexcept {
  const bool block = (f & kBlock) != 0, void_block = (f & kVoid) != 0, styled = (f & kInlineStyled) != 0;
  const bool outside_after = block & (void_block | end_tag);
  const bool inner = block & !void_block;
  if (f & kFormatting) st.formatting = end_tag ? st.formatting - (st.formatting != 0) : st.formatting + 1;
  std::uint32_t m = (st.mode & ~m_prev) | (outside_after ? (styled ? m_prev_sibling : m_prev_block) : 0u) |
                    ((inner & !end_tag) ? m_prev_open : 0u);
  if (!verbatim) {
    // Head state changes from inside pre/listing are ignored: their opening
    // tag already cleared m_doc_start and m_in_head, and nothing there sets them.
    if (f & (kHead | kHeadOk | kHtml | kBase)) {
      const bool in_head = (f & kHead) ? !end_tag && (m & m_head_allowed) : (f & kHeadOk) && (m & m_in_head);
      m = (m & ~m_in_head) | (in_head ? m_in_head : 0u);
      if (end_tag || !(f & kHtml)) m &= ~m_head_allowed;
      if (!end_tag && (f & kBase)) m &= ~m_rewrite;
    } else {
      m &= ~(m_in_head | m_head_allowed);
    }
    m &= ~m_doc_start;
  }
  if (m & m_in_head) m |= m_prev_in_head;
  st.mode = m;
  if (!(f & (kPreLike | kRaw)) || !closed) return false;
  if (end_tag) {
    if ((f & kPreLike) && st.depth != 0 && --st.depth == 0) st.mode &= ~m_verbatim;
    return false;
  }
  if (f & kPreLike) {
    ++st.depth;
    st.mode |= m_verbatim;
  }
  if (f & kRaw) return raw_text<Final>(in, len, out, p, o, f, s_data, w);
  return false;
}

// The rest of a tag whose name (of class `f`) ends at n1, after the white
// space before it was decided: the name, the body, what the tag does.
// Returns true when a stream's window stopped inside it (w.pr says where).
template <bool Final>
KB_INLINE bool tag_rest(state& st, const u8* in, size_t len, u8* out, size_t& p, size_t& o, size_t n1, std::uint32_t f,
                        bool end_tag, window& w) noexcept {
  const bool verbatim = (st.mode & m_verbatim) != 0;
  bool closed;
  if (n1 < len && in[n1] == '>') {  // no attributes: the tag in one copy
    copy_bytes(in, len, out, p, o, n1 + 1);
    closed = true;
  } else {
    copy_bytes(in, len, out, p, o, n1);
    if (!Final && n1 == len) {  // a name longer than any listed one goes on
      w.pr = progress{};
      w.pr.at = resume::tag_name;
      w.pr.f = f;
      w.pr.end_tag = end_tag;
      return true;
    }
    const bool link = !end_tag && !verbatim && (st.mode & m_rewrite) && (f & (kAnchor | kImg));
    tag_cursor tc;
    const body b = tag_body<Final>(in, len, out, p, o, verbatim, link ? f : 0, w, tc);
    if (!Final && b == body::stopped) {
      w.pr = progress{};
      w.pr.at = resume::tag_body;
      w.pr.f = f;
      w.pr.end_tag = end_tag;
      w.pr.tag = tc;
      return true;
    }
    closed = b == body::closed;
  }
  return tag_end<Final>(st, in, len, out, p, o, f, end_tag, verbatim, closed, w);
}

// A tag whose name starts at p + 1 (start tag) or p + 2 (end tag). Returns
// true when a stream's window stopped: before the tag (p unchanged) when its
// name may go on in the next window, which would change its class; else
// inside it.
template <bool Final>
KB_INLINE bool tag(state& st, const u8* in, size_t len, u8* out, size_t& p, size_t& o, bool end_tag,
                   window& w) noexcept {
  const size_t n0 = p + (end_tag ? 2 : 1);
  size_t n1;
  std::uint32_t f;
#if KB_SQUASH_SSE2
  if (n0 + 16 <= len) {
    // One load finds the end of the name and builds its lowercase key.
    const __m128i v = load16(in + n0);
    unsigned ends = name_end_or_control16(v);
    if (ends != 0 && !is_name_end(in[n0 + lowest_bit(ends)])) ends = name_end16(v);  // a control byte: exact mask
    if (ends != 0) {
      const unsigned n = lowest_bit(ends);
      n1 = n0 + n;
      if (n <= 10) {
        const __m128i key = _mm_and_si128(lower16(v), load16(kPrefix.m[n]));
        f = lookup_tag(static_cast<std::uint64_t>(_mm_cvtsi128_si64(key)),
                       static_cast<std::uint16_t>(_mm_extract_epi16(key, 4)), n);
      } else {
        f = 0;
      }
    } else {
      n1 = n0 + 16;
      while (n1 < len && !is_name_end(in[n1])) ++n1;
      f = 0;
    }
  } else
#endif
  {
    n1 = n0 + 1;
    while (n1 < len && !is_name_end(in[n1])) ++n1;
    f = classify_tag(in + n0, n1 - n0);
  }
  if (!Final && n1 == len && n1 - n0 <= 10) return true;  // the name may go on
  // White space before a block start tag or after a block end tag lies
  // outside the block's box, at a line edge. White space just inside a
  // block (after <div>, before </div>) is not removed for the block's sake
  // (text_whitespace.h says why).
  // An inline-styled element's outside is a sibling's edge, not a block's
  // (text_whitespace.h). A block's start tag begins its content and its end
  // tag ends it: line edges for a run beside an inline-styled tag.
  const bool block = (f & kBlock) != 0, void_block = (f & kVoid) != 0, styled = (f & kInlineStyled) != 0;
  const bool outside = block & (void_block | !end_tag);
  const bool inner = block & !void_block;
  o = flush(st, out, o,
            outside ? (styled ? kind::sibling : kind::block) : ((inner & end_tag) ? kind::close : kind::neutral));
  return tag_rest<Final>(st, in, len, out, p, o, n1, f, end_tag, w);
}

}  // namespace kb::squash
