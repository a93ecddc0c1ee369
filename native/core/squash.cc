// The HTML white-space squasher (SPEC section 5), one pass over bytes.
//
// It follows the HTML tokenizer closely enough to find the same tags,
// comments, quoted attribute values and raw-text elements a browser finds,
// and changes only ASCII white space, comments and (optionally) links:
//
//  * Text white space (\t \n \f \r space) collapses to one byte: a line feed
//    if the run held one, else a space. A run whose only neighbours are tags
//    (or the start/end of input) is dropped when it lies outside a block box
//    (before a block-level start tag, after a block-level end tag, either side
//    of br/hr/col/frame: html_tables.h kBlock), or inside <head>. White space
//    just inside a block (after <div>, before </div>) stays: it may touch
//    ::before/::after content and render.
//  * Comments go, except conditional ones ("<!--[if", "…[endif]-->") and
//    "<!--!…". A removed comment is transparent: the white space on both
//    sides forms one run, so a second pass finds nothing left to merge. It
//    is kept when removing it could glue text into new markup ("<" + "div>",
//    "&am" + "p;"): that is, when plain text touches it on both sides.
//  * Copied verbatim: quoted attribute values; raw text (script, style,
//    textarea, title, xmp, iframe, noembed, noframes, noscript, plaintext) up
//    to its end tag as the tokenizer finds it (with script's <!-- <script>
//    escapes); and everything inside pre/listing (depth-counted, since their
//    content is ordinary markup). Malformed input protects to its end: an
//    unterminated quote, raw element or comment is copied to the last byte.
//  * Inside tags, white space outside quotes collapses like text.
//  * Link rewriting: double-quoted <a href>/<img src> absolute URLs to `host`
//    become root-relative, or "?query" when they point at `path`.
//
// Why it is a fixed point: only white-space runs, removable comments and
// absolute links change, and each decision depends on the tokens around a run
// (never on its length) and on state that white space cannot alter, so the
// output tokenizes into the same tokens and every decision repeats.
//
// Speed: text, white-space runs, tag names, attribute names and quoted
// values are scanned and copied 16 bytes at a time (SSE2); raw text is skipped
// with memchr; tag names are classified by a compile-time hash table. The
// cursors live in locals inside the hot loops: a byte store through `u8*` may
// alias anything, so cursors kept in members would be reloaded after every
// store.
#include "squash.h"

#include <cstring>

#include "html_tables.h"

#if defined(__SSE2__) || defined(_M_X64)
#include <emmintrin.h>
#define KB_SQUASH_SSE2 1
#endif

#if defined(__GNUC__)
#define KB_INLINE inline __attribute__((always_inline))
#else
#define KB_INLINE inline
#endif

namespace kb {
namespace {

using u8 = std::uint8_t;
using std::size_t;
using namespace html;

// What a white-space run touches on each side.
enum class kind : u8 { bof, text, neutral, block, eof };

KB_INLINE unsigned lowest_bit(unsigned x) noexcept { return static_cast<unsigned>(__builtin_ctz(x)); }

inline size_t find_byte(const u8* in, size_t from, size_t len, u8 c) noexcept {
  if (from >= len) return len;
  const void* hit = std::memchr(in + from, c, len - from);
  return hit ? static_cast<size_t>(static_cast<const u8*>(hit) - in) : len;
}

#if KB_SQUASH_SSE2
KB_INLINE __m128i load16(const u8* p) noexcept { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p)); }
KB_INLINE void store16(u8* p, __m128i v) noexcept { _mm_storeu_si128(reinterpret_cast<__m128i*>(p), v); }
KB_INLINE __m128i eq(__m128i v, char c) noexcept { return _mm_cmpeq_epi8(v, _mm_set1_epi8(c)); }
KB_INLINE unsigned bits(__m128i m) noexcept { return static_cast<unsigned>(_mm_movemask_epi8(m)); }
KB_INLINE __m128i ws16(__m128i v) noexcept {
  return _mm_or_si128(_mm_or_si128(eq(v, ' '), eq(v, '\n')),
                      _mm_or_si128(eq(v, '\t'), _mm_or_si128(eq(v, '\f'), eq(v, '\r'))));
}
// Bytes that end a tag name: white space, '/' and '>'.
KB_INLINE unsigned name_end16(__m128i v) noexcept {
  return bits(_mm_or_si128(ws16(v), _mm_or_si128(eq(v, '/'), eq(v, '>'))));
}
// A-Z to a-z, every other byte as it is (signed compares: bytes >= 0x80 are
// negative, so never in range).
KB_INLINE __m128i lower16(__m128i v) noexcept {
  const __m128i upper =
      _mm_and_si128(_mm_cmpgt_epi8(v, _mm_set1_epi8('A' - 1)), _mm_cmpgt_epi8(_mm_set1_epi8('Z' + 1), v));
  return _mm_add_epi8(v, _mm_and_si128(upper, _mm_set1_epi8(0x20)));
}
struct prefix_masks {
  u8 m[17][16];
};
constexpr prefix_masks make_prefix_masks() {
  prefix_masks t{};
  for (int n = 0; n <= 16; ++n)
    for (int i = 0; i < n; ++i) t.m[n][i] = 0xFF;
  return t;
}
inline constexpr prefix_masks kPrefix = make_prefix_masks();
#endif

// ---------------------------------------------------------------------------
// Scanners over (in, len) writing to out, with the cursors p and o passed by
// reference so that callers keep them in registers. All keep o <= p, which
// makes a 16-byte store at o safe whenever a 16-byte load at p is.
// ---------------------------------------------------------------------------

KB_INLINE void copy_bytes(const u8* in, size_t len, u8* out, size_t& p, size_t& o, size_t end) noexcept {
  const size_t n = end - p;
#if KB_SQUASH_SSE2
  if (n <= 16 && p + 16 <= len) {
    store16(out + o, load16(in + p));
  } else
#endif
  {
    std::memcpy(out + o, in + p, n);
  }
  (void)len;
  p = end;
  o += n;
}

// Skips a white-space run at p; true when it held a line feed.
KB_INLINE bool skip_ws(const u8* in, size_t len, size_t& p) noexcept {
  bool lf = false;
#if KB_SQUASH_SSE2
  while (p + 16 <= len) {
    const __m128i v = load16(in + p);
    const unsigned other = ~bits(ws16(v)) & 0xFFFFu;
    const unsigned lfs = bits(eq(v, '\n'));
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
  while (p < len && is_ws(in[p])) {
    lf |= in[p] == '\n';
    ++p;
  }
  return lf;
}

// Copies text from p up to the next byte that needs a decision: '<', white
// space other than a lone space or line feed, or a space/LF followed by
// white space or '<' or the end. Starts on a text byte, so it always advances.
KB_INLINE void copy_text(const u8* in, size_t len, u8* out, size_t& p, size_t& o) noexcept {
#if KB_SQUASH_SSE2
  while (p + 16 <= len) {
    const __m128i v = load16(in + p);
    const unsigned soft = bits(_mm_or_si128(eq(v, ' '), eq(v, '\n')));
    const unsigned hard = bits(_mm_or_si128(eq(v, '\t'), _mm_or_si128(eq(v, '\f'), eq(v, '\r'))));
    const unsigned lts = bits(eq(v, '<'));
    // A soft byte in the last lane stops too: its neighbour is in the next
    // block, and the caller then treats it as a one-byte run, which writes
    // the same byte.
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
    return;
  }
#endif
  while (p < len) {
    const u8 b = in[p];
    if (b == '<') return;
    if (is_ws(b)) {
      if ((b != ' ' && b != '\n') || p + 1 >= len) return;
      const u8 next = in[p + 1];
      if (is_ws(next) || next == '<') return;
    }
    out[o++] = b;
    ++p;
  }
}

// Copies from p up to the first byte in a stop set, given twice: as a
// 16-byte mask for the vector loop and as a predicate for the tail.
template <typename StopMask, typename Stop>
KB_INLINE void copy_run(const u8* in, size_t len, u8* out, size_t& p, size_t& o, StopMask stop_mask,
                        Stop stop) noexcept {
#if KB_SQUASH_SSE2
  while (p + 16 <= len) {
    const __m128i v = load16(in + p);
    store16(out + o, v);
    const unsigned m = stop_mask(v);
    if (m != 0) {
      const unsigned k = lowest_bit(m);
      p += k;
      o += k;
      return;
    }
    p += 16;
    o += 16;
  }
#else
  (void)stop_mask;
#endif
  while (p < len && !stop(in[p])) out[o++] = in[p++];
}

// An attribute name runs to white space, '/', '>' or '='.
KB_INLINE void copy_attr_name(const u8* in, size_t len, u8* out, size_t& p, size_t& o) noexcept {
#if KB_SQUASH_SSE2
  const auto mask = [](__m128i v) { return name_end16(v) | bits(eq(v, '=')); };
#else
  const auto mask = [](int) { return 0u; };
#endif
  copy_run(in, len, out, p, o, mask, [](u8 c) { return is_name_end(c) || c == '='; });
}

// An unquoted attribute value runs to white space or '>'.
KB_INLINE void copy_unquoted(const u8* in, size_t len, u8* out, size_t& p, size_t& o) noexcept {
#if KB_SQUASH_SSE2
  const auto mask = [](__m128i v) { return bits(_mm_or_si128(ws16(v), eq(v, '>'))); };
#else
  const auto mask = [](int) { return 0u; };
#endif
  copy_run(in, len, out, p, o, mask, [](u8 c) { return is_ws(c) || c == '>'; });
}

// A quoted value, from its opening quote at p through its closing quote.
// Returns false when unterminated: then it is copied to the end of input.
KB_INLINE bool copy_quoted(const u8* in, size_t len, u8* out, size_t& p, size_t& o, u8 quote) noexcept {
  out[o++] = quote;
  ++p;
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

// Case-insensitive on both sides (the Host option may be written in any case).
inline bool ieq_both(const u8* a, const u8* b, size_t n) noexcept {
  for (size_t i = 0; i < n; ++i) {
    if (lower(a[i]) != lower(b[i])) return false;
  }
  return true;
}

inline bool starts_with(const u8* a, size_t n, const char* lit, size_t m) noexcept {
  return n >= m && std::memcmp(a, lit, m) == 0;
}
inline bool ends_with(const u8* a, size_t n, const char* lit, size_t m) noexcept {
  return n >= m && std::memcmp(a + n - m, lit, m) == 0;
}

class squasher {
 public:
  squasher(const u8* in, size_t len, u8* out, const squash_options& opt) noexcept
      : in_(in),
        len_(len),
        out_(out),
        host_(opt.host),
        host_len_(opt.host ? opt.host_len : 0),
        path_(opt.path),
        path_len_(opt.path ? opt.path_len : 0),
        rewrite_(opt.rewrite_links && opt.host && opt.host_len > 0) {}

  size_t run() noexcept {
    const u8* const in = in_;
    u8* const out = out_;
    const size_t len = len_;
    size_t p = 0, o = 0;
    // A UTF-8 byte order mark is not text: the decoder drops it before parsing.
    if (len >= 3 && in[0] == 0xEF && in[1] == 0xBB && in[2] == 0xBF) copy_bytes(in, len, out, p, o, 3);
    while (p < len) {
      const u8 b = in[p];
      if (depth_ != 0) {
        if (b == '<') {
          markup(p, o);
        } else {
          copy_bytes(in, len, out, p, o, find_byte(in, p, len, '<'));
          prev_ = kind::text;
        }
      } else if (is_ws(b)) {
        ws_pending_ = true;
        if (skip_ws(in, len, p)) ws_lf_ = true;
      } else if (b == '<') {
        markup(p, o);
      } else {
        o = flush(o, kind::text);
        saw_text();
        copy_text(in, len, out, p, o);
      }
    }
    return flush(o, kind::eof);
  }

 private:
  const u8* in_;
  size_t len_;
  u8* out_;
  // The cursors between calls; hot code works on local copies.
  size_t p_ = 0;  // next input byte
  size_t o_ = 0;  // next output byte; o_ <= p_ always
  const u8* host_;
  size_t host_len_;
  const u8* path_;
  size_t path_len_;
  bool rewrite_;

  bool ws_pending_ = false;   // a white-space run waits for its right-hand neighbour
  bool ws_lf_ = false;        // … and it held a line feed
  kind prev_ = kind::bof;     // the token before the pending run
  bool prev_in_head_ = false;
  bool in_head_ = false;      // after <head>, until something that closes it
  bool head_allowed_ = true;  // nothing yet that makes a browser ignore a <head> tag
  bool doc_start_ = true;     // no tag or text yet: a doctype here is block-like
  size_t depth_ = 0;          // open pre/listing elements: their content is verbatim
  size_t formatting_ = 0;     // formatting start tags not yet matched by end tags

  void saw_text() noexcept {
    prev_ = kind::text;
    in_head_ = false;
    head_allowed_ = false;
    doc_start_ = false;
  }

  // Decides the pending run now that its right-hand neighbour is known;
  // returns the output cursor after it.
  KB_INLINE size_t flush(size_t o, kind next) noexcept {
    if (!ws_pending_) return o;
    ws_pending_ = false;
    const bool lf = ws_lf_;
    ws_lf_ = false;
    if (prev_ != kind::text && next != kind::text && formatting_ == 0 &&
        (prev_ == kind::block || next == kind::block || prev_in_head_)) {
      return o;
    }
    out_[o] = lf ? '\n' : ' ';
    return o + 1;
  }

  void copy_to(size_t end) noexcept { copy_bytes(in_, len_, out_, p_, o_, end); }

  // A '<' that opens nothing: plain text.
  void text_lt() noexcept {
    o_ = flush(o_, kind::text);
    out_[o_++] = '<';
    ++p_;
    saw_text();
  }

  // A token copied as it is (doctype, bogus comment, kept comment, "</>").
  void opaque(size_t end, kind k) noexcept {
    o_ = flush(o_, k);
    copy_to(end);
    prev_ = k;
    prev_in_head_ = in_head_;
  }

  size_t after_gt(size_t from) const noexcept {
    const size_t gt = find_byte(in_, from, len_, '>');
    return gt == len_ ? len_ : gt + 1;
  }

  // A '<' at p: a tag (the common case, handled inline with the caller's
  // cursors), or something rarer handled through the member cursors.
  KB_INLINE void markup(size_t& p, size_t& o) noexcept {
    const size_t s = p;
    // Start or end tag without a branch on which: "<a" or "</a".
    const size_t slash = (s + 1 < len_ && in_[s + 1] == '/') ? 1 : 0;
    if (s + 1 + slash < len_ && is_alpha(in_[s + 1 + slash])) return tag(p, o, slash != 0);
    p_ = p, o_ = o;
    other_markup();
    p = p_, o = o_;
  }

  void other_markup() noexcept {
    const size_t s = p_;
    if (s + 1 >= len_) return text_lt();
    const u8 c = in_[s + 1];
    if (c == '/') {
      if (s + 2 >= len_) return text_lt();  // "</" at the end is text
      const u8 c2 = in_[s + 2];
      // "</>" is dropped by the parser; "</" + other is a bogus comment.
      return opaque(c2 == '>' ? s + 3 : after_gt(s + 2), kind::neutral);
    }
    if (c == '!') {
      if (s + 3 < len_ && in_[s + 2] == '-' && in_[s + 3] == '-') return comment();
      const bool doctype = s + 9 <= len_ && ieq(in_ + s + 2, "doctype", 7);
      // Before any tag or text, white space around a doctype is ignored by the parser.
      return opaque(after_gt(s + 2), doctype && doc_start_ ? kind::block : kind::neutral);
    }
    if (c == '?') return opaque(after_gt(s + 2), kind::neutral);
    text_lt();
  }

  // "<!--" at p_. Finds the end as the tokenizer does: "<!-->", "<!--->",
  // else the first "-->" or "--!>"; unterminated runs to the end of input.
  void comment() noexcept {
    const size_t c0 = p_ + 4;
    size_t c1 = len_, end = len_;
    bool closed = false;
    if (c0 < len_ && in_[c0] == '>') {
      c1 = c0, end = c0 + 1, closed = true;
    } else if (c0 + 1 < len_ && in_[c0] == '-' && in_[c0 + 1] == '>') {
      c1 = c0, end = c0 + 2, closed = true;
    } else {
      for (size_t i = c0;; ++i) {
        i = find_byte(in_, i, len_, '-');
        if (i + 2 >= len_) break;
        if (in_[i + 1] != '-') continue;
        if (in_[i + 2] == '>') {
          c1 = i, end = i + 3, closed = true;
          break;
        }
        if (in_[i + 2] == '!' && i + 3 < len_ && in_[i + 3] == '>') {
          c1 = i, end = i + 4, closed = true;
          break;
        }
      }
    }
    const u8* body = in_ + c0;
    const size_t n = c1 - c0;
    const bool keep = !closed || depth_ != 0 || starts_with(body, n, "[if", 3) || starts_with(body, n, "!", 1) ||
                      ends_with(body, n, "[endif]", 7);
    if (!keep && (ws_pending_ || prev_ != kind::text || end == len_ || is_ws(in_[end]) || in_[end] == '<')) {
      p_ = end;  // gone; a pending run stays pending and merges with what follows
      return;
    }
    opaque(end, kind::neutral);
  }

  KB_INLINE void tag(size_t& p, size_t& o, bool end_tag) noexcept {
    const u8* const in = in_;
    u8* const out = out_;
    const size_t len = len_;
    const size_t n0 = p + (end_tag ? 2 : 1);
    size_t n1;
    std::uint32_t f;
#if KB_SQUASH_SSE2
    if (n0 + 16 <= len) {
      // One load finds the end of the name and builds its lowercase key.
      const __m128i v = load16(in + n0);
      const unsigned ends = name_end16(v);
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
    // White space before a block start tag or after a block end tag lies
    // outside the block's box, at a line edge. White space just inside a
    // block (after <div>, before </div>) may sit next to ::before/::after
    // content and render, so it is not removed for the block's sake.
    const bool block = (f & kBlock) != 0, void_block = (f & kVoid) != 0;
    const bool outside = block & (void_block | !end_tag);
    const bool outside_after = block & (void_block | end_tag);
    const bool verbatim = depth_ != 0;
    o = flush(o, outside ? kind::block : kind::neutral);
    copy_bytes(in, len, out, p, o, n1);
    const bool link = !end_tag && !verbatim && rewrite_ && (f & (kAnchor | kImg));
    const bool closed = tag_body(p, o, verbatim, link ? f : 0);
    prev_ = outside_after ? kind::block : kind::neutral;
    // The state updates are written without branches where they can be:
    // every tag passes here, and which update applies is unpredictable.
    if (f & kFormatting) formatting_ = end_tag ? formatting_ - (formatting_ != 0) : formatting_ + 1;
    if (!verbatim) {
      // Head state changes from inside pre/listing are ignored: their opening
      // tag already cleared doc_start_ and in_head_, and nothing there sets them.
      const bool head = (f & kHead) != 0, head_ok = (f & kHeadOk) != 0;
      doc_start_ = false;
      in_head_ = (head & !end_tag & head_allowed_) | (!head & head_ok & in_head_);
      head_allowed_ = head_allowed_ & !end_tag & ((f & kHtml) != 0);
      rewrite_ = rewrite_ & (end_tag | ((f & kBase) == 0));
    }
    prev_in_head_ = in_head_;
    if (!(f & (kPreLike | kRaw)) || !closed) return;
    if (end_tag) {
      if ((f & kPreLike) && depth_ != 0) --depth_;
      return;
    }
    if (f & kPreLike) ++depth_;
    if (f & kRaw) {
      p_ = p, o_ = o;
      raw_text(f);
      p = p_, o = o_;
    }
  }

  enum class tag_state : u8 { before_name, attr_name, after_name, before_value, unquoted, after_quoted, self_closing };

  // The attributes and the closing '>' of a tag, after its name, following
  // the tokenizer's attribute states. Returns false when the input ends
  // first (the browser drops such a tag). Attribute names and values are
  // copied in runs; only the bytes that change state are looked at one by one.
  KB_INLINE bool tag_body(size_t& p, size_t& o, bool verbatim, std::uint32_t link) noexcept {
    using st = tag_state;
    const u8* const in = in_;
    u8* const out = out_;
    const size_t len = len_;
    st s = st::before_name;
    size_t an0 = 0, an1 = 0;  // the current attribute name
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
        } else if (p + 1 < len && !is_ws(in[p + 1])) {  // the usual single space
          out[o++] = b == '\n' ? '\n' : ' ';
          ++p;
        } else {
          const bool lf = skip_ws(in, len, p);
          out[o++] = lf ? '\n' : ' ';
        }
        continue;
      }
      if (b == '>') {  // closes the tag in every state outside a quoted value
        out[o++] = b;
        ++p;
        return true;
      }
      if (s == st::before_value) {
        if (b == '"' || b == '\'') {
          if (link != 0 && b == '"' && names_link(link, an0, an1)) {
            if (!rewrite_quoted(p, o)) return false;
          } else if (!copy_quoted(in, len, out, p, o, b)) {
            return false;
          }
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
      if (s == st::unquoted) {  // unreachable: its runs stop only on white space or '>'
        out[o++] = b;
        ++p;
        continue;
      }
      // before_name, after_name, after_quoted, self_closing: a new attribute
      // name starts here; its first byte may be '=' or a quote.
      an0 = p;
      out[o++] = b;
      ++p;
      copy_attr_name(in, len, out, p, o);
      s = st::attr_name;
      // The usual name="value" straight through, without going round the loop.
      if (p + 1 < len && in[p] == '=') {
        an1 = p;
        const u8 q = in[p + 1];
        if (q == '"' || q == '\'') {
          out[o++] = '=';
          ++p;
          if (link != 0 && q == '"' && names_link(link, an0, an1)) {
            if (!rewrite_quoted(p, o)) return false;
          } else if (!copy_quoted(in, len, out, p, o, q)) {
            return false;
          }
          s = st::after_quoted;
        }
      }
    }
    return false;
  }

  bool names_link(std::uint32_t link, size_t an0, size_t an1) const noexcept {
    const size_t n = an1 - an0;
    if (link & kAnchor) return n == 4 && ieq(in_ + an0, "href", 4);
    return n == 3 && ieq(in_ + an0, "src", 3);
  }

  // A double-quoted link value at p (on its opening quote), rewritten.
  // Returns false when it is unterminated: then it is copied to the end.
  bool rewrite_quoted(size_t& p, size_t& o) noexcept {
    const size_t v0 = p + 1;
    const size_t v1 = find_byte(in_, v0, len_, '"');
    if (v1 == len_) {
      copy_bytes(in_, len_, out_, p, o, len_);
      return false;
    }
    out_[o++] = '"';
    o = rewrite_url(in_ + v0, v1 - v0, o);
    out_[o++] = '"';
    p = v1 + 1;
    return true;
  }

  size_t emit(const u8* a, size_t n, size_t o) noexcept {
    std::memcpy(out_ + o, a, n);
    return o + n;
  }

  // http://host/p?q#f, https://host/p?q#f or //host/p?q#f with host == Host
  // (ASCII case-insensitive) → /p?q#f ("/" for an empty path); and when p is
  // the request path and a query is present → ?q#f. Anything else is kept.
  size_t rewrite_url(const u8* v, size_t n, size_t o) noexcept {
    size_t a;
    if (n >= 7 && ieq(v, "http://", 7)) {
      a = 7;
    } else if (n >= 8 && ieq(v, "https://", 8)) {
      a = 8;
    } else if (n >= 2 && v[0] == '/' && v[1] == '/') {
      a = 2;
    } else {
      return emit(v, n, o);
    }
    size_t j = a;
    while (j < n && v[j] != '/' && v[j] != '?' && v[j] != '#') ++j;
    if (j - a != host_len_ || !ieq_both(v + a, host_, host_len_)) return emit(v, n, o);
    size_t k = j;
    while (k < n && v[k] != '?' && v[k] != '#') ++k;
    if (k < n && v[k] == '?' && path_len_ != 0) {
      const bool same = (k == j) ? (path_len_ == 1 && path_[0] == '/')
                                 : (k - j == path_len_ && std::memcmp(v + j, path_, path_len_) == 0);
      if (same) return emit(v + k, n - k, o);
    }
    if (j == k) out_[o++] = '/';
    return emit(v + j, n - j, o);
  }

  // Raw text after its start tag: copied verbatim up to the end tag.
  void raw_text(std::uint32_t f) noexcept {
    size_t end;
    if (f & kPlaintext) {
      end = len_;
    } else if (f & kScript) {
      end = script_end(p_);
    } else {
      const char* name = raw_name(f);
      end = raw_end(p_, name, std::strlen(name));
    }
    copy_to(end);
  }

  // The next "</name" followed by white space, '/' or '>', or len_.
  size_t raw_end(size_t q, const char* name, size_t n) const noexcept {
    for (;; ++q) {
      q = find_byte(in_, q, len_, '<');
      if (q == len_) return len_;
      if (q + 2 + n < len_ && in_[q + 1] == '/' && ieq(in_ + q + 2, name, n) && is_end_delim(in_[q + 2 + n])) {
        return q;
      }
    }
  }

  bool script_close_at(size_t q) const noexcept {
    return q + 8 < len_ && in_[q + 1] == '/' && ieq(in_ + q + 2, "script", 6) && is_end_delim(in_[q + 8]);
  }

  // Letters from `from`; *after is where they stop. True when they spell "script".
  bool script_word(size_t from, size_t* after) const noexcept {
    size_t r = from;
    while (r < len_ && is_alpha(in_[r])) ++r;
    *after = r;
    return r - from == 6 && ieq(in_ + from, "script", 6);
  }

  // The end of script content: the tokenizer's script data states, with the
  // "<!--" escape and the "<script>" double escape inside it, in which
  // "</script>" does not end the element.
  size_t script_end(size_t q) const noexcept {
    enum { data, esc, esc_dash, esc_dash_dash, desc, desc_dash, desc_dash_dash } s = data;
    while (q < len_) {
      if (s == data) {
        q = find_byte(in_, q, len_, '<');
        if (q == len_) return len_;
        if (script_close_at(q)) return q;
        if (q + 3 < len_ && in_[q + 1] == '!' && in_[q + 2] == '-' && in_[q + 3] == '-') {
          s = esc_dash_dash;
          q += 4;
        } else {
          ++q;
        }
        continue;
      }
      const u8 b = in_[q];
      if (b == '<') {
        const bool next = q + 1 < len_;
        if (s <= esc_dash_dash) {
          if (script_close_at(q)) return q;
          if (next && in_[q + 1] == '/') {
            s = esc;
            q += 2;
          } else if (next && is_alpha(in_[q + 1])) {
            size_t r;
            const bool script = script_word(q + 1, &r);
            if (r == len_) return len_;
            const bool delim = is_end_delim(in_[r]);
            s = delim && script ? desc : esc;
            q = delim ? r + 1 : r;
          } else {
            s = esc;
            ++q;
          }
        } else {
          if (next && in_[q + 1] == '/') {
            size_t r;
            const bool script = script_word(q + 2, &r);
            if (r == len_) return len_;
            const bool delim = is_end_delim(in_[r]);
            s = delim && script ? esc : desc;
            q = delim ? r + 1 : r;
          } else {
            s = desc;
            ++q;
          }
        }
        continue;
      }
      switch (s) {
        case esc: s = b == '-' ? esc_dash : esc; break;
        case esc_dash: s = b == '-' ? esc_dash_dash : esc; break;
        case esc_dash_dash: s = b == '>' ? data : b == '-' ? esc_dash_dash : esc; break;
        case desc: s = b == '-' ? desc_dash : desc; break;
        case desc_dash: s = b == '-' ? desc_dash_dash : desc; break;
        case desc_dash_dash: s = b == '>' ? data : b == '-' ? desc_dash_dash : desc; break;
        default: break;
      }
      ++q;
    }
    return len_;
  }
};

}  // namespace

std::size_t squash_html(const std::uint8_t* in, std::size_t len, std::uint8_t* out,
                        const squash_options& opt) noexcept {
  if (len == 0) return 0;
  if (opt.level == 0) {
    std::memcpy(out, in, len);
    return len;
  }
  return squasher(in, len, out, opt).run();
}

}  // namespace kb
