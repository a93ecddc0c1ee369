// The HTML white-space squasher (docs/architecture.md), one pass over bytes.
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
// with memchr; tag names are classified by a compile-time perfect hash. There
// is no squasher object: the cursors and the state are locals of
// squash_html(), hot helpers are always inlined and take them by reference,
// and cold helpers take values and return values. A byte store through `u8*`
// may alias any memory whose address escaped, so state kept in an object
// would be reloaded after every store; locals stay in registers.
#include "squash.h"

#include <cstring>

#include "html_tables.h"

#if defined(__SSE2__) || defined(_M_X64)
#include <emmintrin.h>
#define KB_SQUASH_SSE2 1
#endif

#if defined(__GNUC__)
#define KB_INLINE inline __attribute__((always_inline))
#define KB_COLD __attribute__((noinline, cold))
#elif defined(_MSC_VER)
#include <intrin.h>
#define KB_INLINE __forceinline
#define KB_COLD __declspec(noinline)
#else
#define KB_INLINE inline
#define KB_COLD
#endif

namespace kb {
namespace {

using u8 = std::uint8_t;
using std::size_t;
using namespace html;

// What a white-space run touches on each side.
enum class kind : u8 { bof, text, neutral, block, eof };

// The index of the lowest set bit of x (x != 0).
KB_INLINE unsigned lowest_bit(unsigned x) noexcept {
#if defined(_MSC_VER) && !defined(__clang__)
  unsigned long i;
  _BitScanForward(&i, x);
  return static_cast<unsigned>(i);
#else
  return static_cast<unsigned>(__builtin_ctz(x));
#endif
}

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
// A superset of name_end16, in fewer operations: every byte <= 0x20 (white
// space and the other control bytes), '/' and '>'. Callers check the byte
// found when it is below 0x20 and not white space.
KB_INLINE unsigned name_end_or_control16(__m128i v) noexcept {
  const __m128i low = _mm_cmpeq_epi8(_mm_min_epu8(v, _mm_set1_epi8(0x20)), v);  // bytes <= 0x20
  return bits(_mm_or_si128(low, _mm_or_si128(eq(v, '/'), eq(v, '>'))));
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

// Skips a white-space run at p; true when it held a line feed or a carriage
// return (the parser turns every CR into a line feed before anything else,
// and a line break is not always rendered as a space: next to U+200B it
// vanishes, test/regression/squash-lone-cr.test.ts).
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
  while (p < len && is_ws(in[p])) {
    lf |= in[p] == '\n' || in[p] == '\r';
    ++p;
  }
  return lf;
}

// Copies text from p: bytes as they are, and each white-space run between
// two text bytes as one byte (a line feed if it held one, else a space),
// which is always its fate, so it is settled here without a round trip.
// Stops before '<' or at the end of input; a run just before them is
// skipped and reported (it needs its right-hand neighbour to be decided):
// returns 0, or 1 for a pending run, 3 for a pending run that held a line
// feed (the m_ws_pending and m_ws_lf bits). Starts on a text byte.
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
      const unsigned hard = bits(_mm_or_si128(eq(v, '\t'), _mm_or_si128(eq(v, '\f'), eq(v, '\r'))));
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
      if (is_ws(b)) {
        if ((b != ' ' && b != '\n') || p + 1 >= len) break;
        const u8 next = in[p + 1];
        if (is_ws(next) || next == '<') break;
      }
      out[o++] = b;
      ++p;
    }
    if (p >= len || in[p] == '<') return 0;
    const bool lf = skip_ws(in, len, p);  // in[p] is white space here
    if (p >= len || in[p] == '<') return lf ? 3u : 1u;
    out[o++] = lf ? '\n' : ' ';
  }
}

// Copies from p up to the first byte in a stop set, given twice: as a
// 16-byte mask for the vector loop and as a predicate for the tail. The
// mask may also flag bytes that are not stops (a cheaper superset); such a
// byte is checked with the predicate and copied.
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
      if (stop(in[p])) return;
      out[o++] = in[p++];  // a control byte the superset flagged: part of the run
      continue;
    }
    p += 16;
    o += 16;
  }
#else
  (void)stop_mask;
#endif
  while (p < len && !stop(in[p])) out[o++] = in[p++];
}

#if KB_SQUASH_SSE2
// Bytes <= 0x20: white space and the other control bytes, in two operations.
KB_INLINE __m128i control_or_space16(__m128i v) noexcept {
  return _mm_cmpeq_epi8(_mm_min_epu8(v, _mm_set1_epi8(0x20)), v);
}
#endif

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

// ---------------------------------------------------------------------------
// Cold helpers: pure functions of the input, out of line.
// ---------------------------------------------------------------------------

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

// Where a token running to the next '>' ends (after it), or len.
inline size_t after_gt(const u8* in, size_t len, size_t from) noexcept {
  const size_t gt = find_byte(in, from, len, '>');
  return gt == len ? len : gt + 1;
}

struct comment_span {
  size_t end;  // just after the comment (len when unterminated)
  bool keep;   // conditional, "<!--!", or unterminated: never removed
};

// "<!--" at p. Finds the end as the tokenizer does: "<!-->", "<!--->", else
// the first "-->" or "--!>"; unterminated runs to the end of input.
KB_COLD comment_span scan_comment(const u8* in, size_t len, size_t p) noexcept {
  const size_t c0 = p + 4;
  size_t c1 = len, end = len;
  bool closed = false;
  if (c0 < len && in[c0] == '>') {
    c1 = c0, end = c0 + 1, closed = true;
  } else if (c0 + 1 < len && in[c0] == '-' && in[c0 + 1] == '>') {
    c1 = c0, end = c0 + 2, closed = true;
  } else {
    for (size_t i = c0;; ++i) {
      i = find_byte(in, i, len, '-');
      if (i + 2 >= len) break;
      if (in[i + 1] != '-') continue;
      if (in[i + 2] == '>') {
        c1 = i, end = i + 3, closed = true;
        break;
      }
      if (in[i + 2] == '!' && i + 3 < len && in[i + 3] == '>') {
        c1 = i, end = i + 4, closed = true;
        break;
      }
    }
  }
  const u8* body = in + c0;
  const size_t n = c1 - c0;
  const bool keep = !closed || starts_with(body, n, "[if", 3) || starts_with(body, n, "!", 1) ||
                    ends_with(body, n, "[endif]", 7);
  return {end, keep};
}

// The next "</name" followed by white space, '/' or '>', or len.
KB_COLD size_t raw_end(const u8* in, size_t len, size_t q, const char* name, size_t n) noexcept {
  for (;; ++q) {
    q = find_byte(in, q, len, '<');
    if (q == len) return len;
    if (q + 2 + n < len && in[q + 1] == '/' && ieq(in + q + 2, name, n) && is_end_delim(in[q + 2 + n])) return q;
  }
}

inline bool script_close_at(const u8* in, size_t len, size_t q) noexcept {
  return q + 8 < len && in[q + 1] == '/' && ieq(in + q + 2, "script", 6) && is_end_delim(in[q + 8]);
}

// Letters from `from`; *after is where they stop. True when they spell "script".
inline bool script_word(const u8* in, size_t len, size_t from, size_t* after) noexcept {
  size_t r = from;
  while (r < len && is_alpha(in[r])) ++r;
  *after = r;
  return r - from == 6 && ieq(in + from, "script", 6);
}

// The end of script content: the tokenizer's script data states, with the
// "<!--" escape and the "<script>" double escape inside it, in which
// "</script>" does not end the element.
KB_COLD size_t script_end(const u8* in, size_t len, size_t q) noexcept {
  enum { data, esc, esc_dash, esc_dash_dash, desc, desc_dash, desc_dash_dash } s = data;
  while (q < len) {
    if (s == data) {
      q = find_byte(in, q, len, '<');
      if (q == len) return len;
      if (script_close_at(in, len, q)) return q;
      if (q + 3 < len && in[q + 1] == '!' && in[q + 2] == '-' && in[q + 3] == '-') {
        s = esc_dash_dash;
        q += 4;
      } else {
        ++q;
      }
      continue;
    }
    const u8 b = in[q];
    if (b == '<') {
      const bool next = q + 1 < len;
      if (s <= esc_dash_dash) {
        if (script_close_at(in, len, q)) return q;
        if (next && in[q + 1] == '/') {
          s = esc;
          q += 2;
        } else if (next && is_alpha(in[q + 1])) {
          size_t r;
          const bool script = script_word(in, len, q + 1, &r);
          if (r == len) return len;
          const bool delim = is_end_delim(in[r]);
          s = delim && script ? desc : esc;
          q = delim ? r + 1 : r;
        } else {
          s = esc;
          ++q;
        }
      } else {
        if (next && in[q + 1] == '/') {
          size_t r;
          const bool script = script_word(in, len, q + 2, &r);
          if (r == len) return len;
          const bool delim = is_end_delim(in[r]);
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
  return len;
}

// Where the content of a raw-text element starting at q ends.
KB_COLD size_t raw_text_end(const u8* in, size_t len, size_t q, std::uint32_t f) noexcept {
  if (f & kPlaintext) return len;
  if (f & kScript) return script_end(in, len, q);
  const char* name = raw_name(f);
  return raw_end(in, len, q, name, std::strlen(name));
}

struct link_target {
  const u8* host;
  size_t host_len;
  const u8* path;
  size_t path_len;
};

// Writes the link value v (n bytes) at out + o, shortened when it points at
// this site; returns the output cursor after it.
// http://host/p?q#f, https://host/p?q#f or //host/p?q#f with host == Host
// (ASCII case-insensitive) → /p?q#f ("/" for an empty path); and when p is
// the request path and a query is present → ?q#f. Anything else is kept,
// and so is a link whose path, alone, would read as another host: "//x",
// "/\x", "/<tab or line feed>/x" (URL parsing treats a backslash as '/' and
// drops tabs and line feeds), test/regression/squash-link-double-slash.test.ts.
KB_COLD size_t rewrite_url(const u8* v, size_t n, u8* out, size_t o, const link_target& t) noexcept {
  const auto emit = [&](const u8* a, size_t k) {
    std::memcpy(out + o, a, k);
    return o + k;
  };
  size_t a;
  if (n >= 7 && ieq(v, "http://", 7)) {
    a = 7;
  } else if (n >= 8 && ieq(v, "https://", 8)) {
    a = 8;
  } else if (n >= 2 && v[0] == '/' && v[1] == '/') {
    a = 2;
  } else {
    return emit(v, n);
  }
  size_t j = a;
  while (j < n && v[j] != '/' && v[j] != '?' && v[j] != '#') ++j;
  if (j - a != t.host_len || !ieq_both(v + a, t.host, t.host_len)) return emit(v, n);
  size_t k = j;
  while (k < n && v[k] != '?' && v[k] != '#') ++k;
  if (k < n && v[k] == '?' && t.path_len != 0) {
    const bool same = (k == j) ? (t.path_len == 1 && t.path[0] == '/')
                               : (k - j == t.path_len && std::memcmp(v + j, t.path, t.path_len) == 0);
    if (same) return emit(v + k, n - k);
  }
  if (j == k) {
    out[o++] = '/';
  } else {
    size_t q = j + 1;  // v[j] is '/'
    while (q < n && (v[q] == '\t' || v[q] == '\n' || v[q] == '\r')) ++q;
    if (q < n && (v[q] == '/' || v[q] == '\\')) return emit(v, n);
  }
  return emit(v + j, n - j);
}

struct cursors {
  size_t p, o;
  bool closed;  // the value's closing quote was found
};

// A double-quoted link value at p (on its opening quote), rewritten; an
// unterminated one is copied to the end of input. Takes and returns the
// cursors by value, so the caller's stay in registers.
KB_COLD cursors rewrite_quoted(const u8* in, size_t len, u8* out, size_t p, size_t o, const link_target& t) noexcept {
  const size_t v0 = p + 1;
  const size_t v1 = find_byte(in, v0, len, '"');
  if (v1 == len) {
    std::memcpy(out + o, in + p, len - p);
    return {len, o + (len - p), false};
  }
  out[o++] = '"';
  o = rewrite_url(in + v0, v1 - v0, out, o, t);
  out[o++] = '"';
  return {v1 + 1, o, true};
}

inline bool names_link(const u8* in, std::uint32_t link, size_t an0, size_t an1) noexcept {
  const size_t n = an1 - an0;
  if (link & kAnchor) return n == 4 && ieq(in + an0, "href", 4);
  return n == 3 && ieq(in + an0, "src", 3);
}

// ---------------------------------------------------------------------------
// The tag body (hot): attributes and the closing '>', after the name.
// ---------------------------------------------------------------------------

enum class tag_state : u8 { before_name, attr_name, after_name, before_value, unquoted, after_quoted, self_closing };

// Follows the tokenizer's attribute states. Returns false when the input
// ends first (the browser drops such a tag). Attribute names and values are
// copied in runs; only the bytes that change state are looked at one by one.
// `link` is the tag's class when its href/src may be rewritten, else 0.
KB_INLINE bool tag_body(const u8* in, size_t len, u8* out, size_t& p, size_t& o, bool verbatim, std::uint32_t link,
                        const link_target& target) noexcept {
  using st = tag_state;
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
        out[o++] = (b == '\n' || b == '\r') ? '\n' : ' ';
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
        if (link != 0 && b == '"' && names_link(in, link, an0, an1)) {
          const cursors c = rewrite_quoted(in, len, out, p, o, target);
          p = c.p, o = c.o;
          if (!c.closed) return false;
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
        if (link != 0 && q == '"' && names_link(in, link, an0, an1)) {
          const cursors c = rewrite_quoted(in, len, out, p, o, target);
          p = c.p, o = c.o;
          if (!c.closed) return false;
        } else if (!copy_quoted(in, len, out, p, o, q)) {
          return false;
        }
        s = st::after_quoted;
      }
    }
  }
  return false;
}

// ---------------------------------------------------------------------------
// The state between tokens, in one word, kept in a register by squash_html.
// ---------------------------------------------------------------------------

constexpr std::uint32_t m_ws_pending = 1u << 0;    // a white-space run waits for its right-hand neighbour
constexpr std::uint32_t m_ws_lf = 1u << 1;         // … and it held a line feed
constexpr std::uint32_t m_prev_text = 1u << 2;     // the token before the run was text
constexpr std::uint32_t m_prev_block = 1u << 3;    // … or a tag whose far side is outside a block box
constexpr std::uint32_t m_prev_in_head = 1u << 4;  // … after which we were inside <head>
constexpr std::uint32_t m_in_head = 1u << 5;       // after <head>, until something that closes it
constexpr std::uint32_t m_head_allowed = 1u << 6;  // nothing yet makes a browser ignore a <head> tag
constexpr std::uint32_t m_doc_start = 1u << 7;     // no tag or text yet: a doctype here is block-like
constexpr std::uint32_t m_rewrite = 1u << 8;       // rewrite links: option on, a host, no <base> seen
constexpr std::uint32_t m_verbatim = 1u << 9;      // inside pre/listing (depth > 0)
constexpr std::uint32_t m_prev = m_prev_text | m_prev_block | m_prev_in_head;

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

// Decides the pending run now that its right-hand neighbour is known;
// returns the output cursor after it. Without branches on the decision,
// which follows the page's shape and predicts badly.
KB_INLINE size_t flush(state& st, u8* out, size_t o, kind next) noexcept {
  const std::uint32_t m = st.mode;
  if (!(m & m_ws_pending)) return o;
  st.mode = m & ~(m_ws_pending | m_ws_lf);
  const bool tags = ((m & m_prev_text) == 0) & (next != kind::text);
  const bool edge = ((m & (m_prev_block | m_prev_in_head)) != 0) | (next == kind::block);
  const bool drop = tags & edge & (st.formatting == 0);
  out[o] = (m & m_ws_lf) ? '\n' : ' ';  // in bounds: a pending run has consumed input, so o < p
  return o + !drop;
}

// A token copied as it is (doctype, bogus comment, kept comment, "</>").
KB_INLINE void opaque(state& st, const u8* in, size_t len, u8* out, size_t& p, size_t& o, size_t end,
                      kind k) noexcept {
  o = flush(st, out, o, k);
  copy_bytes(in, len, out, p, o, end);
  set_prev(st, k);
}

// A '<' that opens nothing: plain text.
KB_INLINE void text_lt(state& st, u8* out, size_t& p, size_t& o) noexcept {
  o = flush(st, out, o, kind::text);
  out[o++] = '<';
  ++p;
  saw_text(st);
}

// A tag whose name starts at p + 1 (start tag) or p + 2 (end tag).
KB_INLINE void tag(state& st, const u8* in, size_t len, u8* out, size_t& p, size_t& o, bool end_tag,
                   const link_target& target) noexcept {
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
  // White space before a block start tag or after a block end tag lies
  // outside the block's box, at a line edge. White space just inside a
  // block (after <div>, before </div>) may sit next to ::before/::after
  // content and render, so it is not removed for the block's sake.
  const bool block = (f & kBlock) != 0, void_block = (f & kVoid) != 0;
  const bool outside = block & (void_block | !end_tag);
  const bool outside_after = block & (void_block | end_tag);
  const bool verbatim = (st.mode & m_verbatim) != 0;
  o = flush(st, out, o, outside ? kind::block : kind::neutral);
  bool closed;
  if (n1 < len && in[n1] == '>') {  // no attributes: the tag in one copy
    copy_bytes(in, len, out, p, o, n1 + 1);
    closed = true;
  } else {
    copy_bytes(in, len, out, p, o, n1);
    const bool link = !end_tag && !verbatim && (st.mode & m_rewrite) && (f & (kAnchor | kImg));
    closed = tag_body(in, len, out, p, o, verbatim, link ? f : 0, target);
  }
  if (f & kFormatting) st.formatting = end_tag ? st.formatting - (st.formatting != 0) : st.formatting + 1;
  std::uint32_t m = (st.mode & ~m_prev) | (outside_after ? m_prev_block : 0u);
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
  if (!(f & (kPreLike | kRaw)) || !closed) return;
  if (end_tag) {
    if ((f & kPreLike) && st.depth != 0 && --st.depth == 0) st.mode &= ~m_verbatim;
    return;
  }
  if (f & kPreLike) {
    ++st.depth;
    st.mode |= m_verbatim;
  }
  if (f & kRaw) copy_bytes(in, len, out, p, o, raw_text_end(in, len, p, f));
}

// A '<' at p that is not the start of a tag: comment, doctype, bogus
// comment, "</>", or text.
KB_INLINE void other_markup(state& st, const u8* in, size_t len, u8* out, size_t& p, size_t& o) noexcept {
  const size_t s = p;
  if (s + 1 >= len) return text_lt(st, out, p, o);
  const u8 c = in[s + 1];
  if (c == '/') {
    if (s + 2 >= len) return text_lt(st, out, p, o);  // "</" at the end is text
    // "</>" is dropped by the parser; "</" + other is a bogus comment.
    return opaque(st, in, len, out, p, o, in[s + 2] == '>' ? s + 3 : after_gt(in, len, s + 2), kind::neutral);
  }
  if (c == '!') {
    if (s + 3 < len && in[s + 2] == '-' && in[s + 3] == '-') {
      const comment_span span = scan_comment(in, len, s);
      const size_t end = span.end;
      const bool verbatim = (st.mode & m_verbatim) != 0;
      // A removed comment is transparent: a pending run stays pending and
      // merges with what follows. Kept when plain text touches it on both
      // sides, since removing it could glue the two into new markup; and
      // when nothing is written yet and U+FEFF follows, which would become
      // a byte order mark at byte 0 (the decoder drops it: a lost character).
      const bool bom_next = o == 0 && !(st.mode & m_ws_pending) && end + 3 <= len && in[end] == 0xEF &&
                            in[end + 1] == 0xBB && in[end + 2] == 0xBF;
      if (!span.keep && !verbatim && !bom_next &&
          ((st.mode & m_ws_pending) || !(st.mode & m_prev_text) || end == len || is_ws(in[end]) || in[end] == '<')) {
        p = end;
        return;
      }
      return opaque(st, in, len, out, p, o, end, kind::neutral);
    }
    const bool doctype = s + 9 <= len && ieq(in + s + 2, "doctype", 7);
    // Before any tag or text, white space around a doctype is ignored by the parser.
    return opaque(st, in, len, out, p, o, after_gt(in, len, s + 2),
                  doctype && (st.mode & m_doc_start) ? kind::block : kind::neutral);
  }
  if (c == '?') return opaque(st, in, len, out, p, o, after_gt(in, len, s + 2), kind::neutral);
  text_lt(st, out, p, o);
}

KB_INLINE void markup(state& st, const u8* in, size_t len, u8* out, size_t& p, size_t& o,
                      const link_target& target) noexcept {
  // Start or end tag without a branch on which: "<a" or "</a".
  const size_t slash = (p + 1 < len && in[p + 1] == '/') ? 1 : 0;
  if (p + 1 + slash < len && is_alpha(in[p + 1 + slash])) return tag(st, in, len, out, p, o, slash != 0, target);
  other_markup(st, in, len, out, p, o);
}

size_t squash(const u8* in, size_t len, u8* out, const squash_options& opt) noexcept {
  const link_target target{opt.host, opt.host ? opt.host_len : 0, opt.path, opt.path ? opt.path_len : 0};
  state st{m_head_allowed | m_doc_start | (opt.rewrite_links && opt.host && opt.host_len > 0 ? m_rewrite : 0u), 0, 0};
  size_t p = 0, o = 0;
  // A UTF-8 byte order mark is not text: the decoder drops it before parsing.
  if (len >= 3 && in[0] == 0xEF && in[1] == 0xBB && in[2] == 0xBF) copy_bytes(in, len, out, p, o, 3);
  while (p < len) {
    const u8 b = in[p];
    if (st.mode & m_verbatim) {
      if (b == '<') {
        markup(st, in, len, out, p, o, target);
      } else {
        copy_bytes(in, len, out, p, o, find_byte(in, p, len, '<'));
        st.mode = (st.mode & ~m_prev) | m_prev_text;
      }
    } else if (is_ws(b)) {
      st.mode |= skip_ws(in, len, p) ? m_ws_pending | m_ws_lf : m_ws_pending;
    } else if (b == '<') {
      markup(st, in, len, out, p, o, target);
    } else {
      o = flush(st, out, o, kind::text);
      saw_text(st);
      st.mode |= copy_text(in, len, out, p, o);  // a run it stopped after is now pending
    }
  }
  return flush(st, out, o, kind::eof);
}

}  // namespace

std::size_t squash_html(const std::uint8_t* in, std::size_t len, std::uint8_t* out,
                        const squash_options& opt) noexcept {
  if (len == 0) return 0;
  if (opt.level == 0) {
    std::memcpy(out, in, len);
    return len;
  }
  return squash(in, len, out, opt);
}

}  // namespace kb
