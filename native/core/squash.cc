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
// Speed: plain text is copied 16 bytes at a time (SSE2) until a byte needs a
// decision; raw text and quoted values are skipped with memchr.
#include "squash.h"

#include <cstring>

#include "html_tables.h"

#if defined(__SSE2__) || defined(_M_X64)
#include <emmintrin.h>
#define KB_SQUASH_SSE2 1
#endif

namespace kb {
namespace {

using u8 = std::uint8_t;
using std::size_t;
using namespace html;

// What a white-space run touches on each side.
enum class kind : u8 { bof, text, neutral, block, eof };

inline unsigned lowest_bit(unsigned x) noexcept { return static_cast<unsigned>(__builtin_ctz(x)); }

inline size_t find_byte(const u8* in, size_t from, size_t len, u8 c) noexcept {
  if (from >= len) return len;
  const void* hit = std::memchr(in + from, c, len - from);
  return hit ? static_cast<size_t>(static_cast<const u8*>(hit) - in) : len;
}

// Case-insensitive on both sides (the Host option may be written in any case).
inline bool ieq_both(const u8* a, const u8* b, size_t n) noexcept {
  for (size_t i = 0; i < n; ++i) {
    if (lower(a[i]) != lower(b[i])) return false;
  }
  return true;
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
    // A UTF-8 byte order mark is not text: the decoder drops it before parsing.
    if (len_ >= 3 && in_[0] == 0xEF && in_[1] == 0xBB && in_[2] == 0xBF) copy_to(3);
    while (p_ < len_) {
      const u8 b = in_[p_];
      if (depth_ != 0) {
        if (b == '<') {
          markup();
        } else {
          copy_to(find_byte(in_, p_, len_, '<'));
          prev_ = kind::text;
        }
      } else if (is_ws(b)) {
        scan_ws();
      } else if (b == '<') {
        markup();
      } else {
        flush(kind::text);
        saw_text();
        text();
      }
    }
    flush(kind::eof);
    return o_;
  }

 private:
  const u8* in_;
  size_t len_;
  u8* out_;
  size_t p_ = 0;  // next input byte
  size_t o_ = 0;  // next output byte; o_ <= p_ always
  const u8* host_;
  size_t host_len_;
  const u8* path_;
  size_t path_len_;
  bool rewrite_;

  bool ws_pending_ = false;  // a white-space run waits for its right-hand neighbour
  bool ws_lf_ = false;       // … and it held a line feed
  kind prev_ = kind::bof;    // the token before the pending run
  bool prev_in_head_ = false;
  bool in_head_ = false;     // after <head>, until something that closes it
  bool head_allowed_ = true; // nothing yet that makes a browser ignore a <head> tag
  bool doc_start_ = true;    // no tag or text yet: a doctype here is block-like
  size_t depth_ = 0;         // open pre/listing elements: their content is verbatim
  size_t formatting_ = 0;    // formatting start tags not yet matched by end tags

  void copy_to(size_t end) noexcept {
    std::memcpy(out_ + o_, in_ + p_, end - p_);
    o_ += end - p_;
    p_ = end;
  }

  void saw_text() noexcept {
    prev_ = kind::text;
    in_head_ = false;
    head_allowed_ = false;
    doc_start_ = false;
  }

  // Decides the pending run now that its right-hand neighbour is known.
  void flush(kind next) noexcept {
    if (!ws_pending_) return;
    ws_pending_ = false;
    const bool lf = ws_lf_;
    ws_lf_ = false;
    if (prev_ != kind::text && next != kind::text && formatting_ == 0 &&
        (prev_ == kind::block || next == kind::block || prev_in_head_)) {
      return;
    }
    out_[o_++] = lf ? '\n' : ' ';
  }

  void scan_ws() noexcept {
    ws_pending_ = true;
#if KB_SQUASH_SSE2
    const __m128i sp = _mm_set1_epi8(' '), lf = _mm_set1_epi8('\n'), tab = _mm_set1_epi8('\t');
    const __m128i ff = _mm_set1_epi8('\f'), cr = _mm_set1_epi8('\r');
    while (p_ + 16 <= len_) {
      const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in_ + p_));
      const __m128i is_lf = _mm_cmpeq_epi8(v, lf);
      const __m128i is_ws = _mm_or_si128(
          _mm_or_si128(_mm_cmpeq_epi8(v, sp), is_lf),
          _mm_or_si128(_mm_cmpeq_epi8(v, tab), _mm_or_si128(_mm_cmpeq_epi8(v, ff), _mm_cmpeq_epi8(v, cr))));
      const unsigned other = ~static_cast<unsigned>(_mm_movemask_epi8(is_ws)) & 0xFFFFu;
      const unsigned lfs = static_cast<unsigned>(_mm_movemask_epi8(is_lf));
      if (other == 0) {
        if (lfs) ws_lf_ = true;
        p_ += 16;
        continue;
      }
      const unsigned n = lowest_bit(other);
      if (lfs & ((1u << n) - 1)) ws_lf_ = true;
      p_ += n;
      return;
    }
#endif
    while (p_ < len_ && is_ws(in_[p_])) {
      if (in_[p_] == '\n') ws_lf_ = true;
      ++p_;
    }
  }

  // Copies text up to the next byte that needs a decision: '<', white space
  // other than a lone space or line feed, or a space/LF followed by white
  // space or '<' or the end. Starts on a text byte, so it always advances.
  void text() noexcept {
#if KB_SQUASH_SSE2
    const __m128i sp = _mm_set1_epi8(' '), lf = _mm_set1_epi8('\n'), lt = _mm_set1_epi8('<');
    const __m128i tab = _mm_set1_epi8('\t'), ff = _mm_set1_epi8('\f'), cr = _mm_set1_epi8('\r');
    while (p_ + 16 <= len_) {
      const __m128i v = _mm_loadu_si128(reinterpret_cast<const __m128i*>(in_ + p_));
      const unsigned soft =
          static_cast<unsigned>(_mm_movemask_epi8(_mm_or_si128(_mm_cmpeq_epi8(v, sp), _mm_cmpeq_epi8(v, lf))));
      const unsigned hard = static_cast<unsigned>(_mm_movemask_epi8(
          _mm_or_si128(_mm_cmpeq_epi8(v, tab), _mm_or_si128(_mm_cmpeq_epi8(v, ff), _mm_cmpeq_epi8(v, cr)))));
      const unsigned lts = static_cast<unsigned>(_mm_movemask_epi8(_mm_cmpeq_epi8(v, lt)));
      // A soft byte in the last lane stops too: its neighbour is in the next
      // block, and the main loop then treats it as a one-byte run, which
      // writes the same byte.
      const unsigned stop = lts | hard | (soft & (((soft | hard | lts) >> 1) | 0x8000u));
      // Writing all 16 bytes is safe: o_ + 16 <= p_ + 16 <= len_.
      _mm_storeu_si128(reinterpret_cast<__m128i*>(out_ + o_), v);
      if (stop == 0) {
        p_ += 16;
        o_ += 16;
        continue;
      }
      const unsigned n = lowest_bit(stop);
      p_ += n;
      o_ += n;
      return;
    }
#endif
    while (p_ < len_) {
      const u8 b = in_[p_];
      if (b == '<') return;
      if (is_ws(b)) {
        if ((b != ' ' && b != '\n') || p_ + 1 >= len_) return;
        const u8 next = in_[p_ + 1];
        if (is_ws(next) || next == '<') return;
      }
      out_[o_++] = b;
      ++p_;
    }
  }

  // A '<' that opens nothing: plain text.
  void text_lt() noexcept {
    flush(kind::text);
    out_[o_++] = '<';
    ++p_;
    saw_text();
  }

  // A token copied as it is (doctype, bogus comment, kept comment, "</>").
  void opaque(size_t end, kind k) noexcept {
    flush(k);
    copy_to(end);
    prev_ = k;
    prev_in_head_ = in_head_;
  }

  size_t after_gt(size_t from) const noexcept {
    const size_t gt = find_byte(in_, from, len_, '>');
    return gt == len_ ? len_ : gt + 1;
  }

  void markup() noexcept {
    const size_t s = p_;
    if (s + 1 >= len_) return text_lt();
    const u8 c = in_[s + 1];
    if (is_alpha(c)) return tag(false);
    if (c == '/') {
      if (s + 2 >= len_) return text_lt();  // "</" at the end is text
      const u8 c2 = in_[s + 2];
      if (is_alpha(c2)) return tag(true);
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

  static bool starts_with(const u8* a, size_t n, const char* lit, size_t m) noexcept {
    return n >= m && std::memcmp(a, lit, m) == 0;
  }
  static bool ends_with(const u8* a, size_t n, const char* lit, size_t m) noexcept {
    return n >= m && std::memcmp(a + n - m, lit, m) == 0;
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

  void tag(bool end_tag) noexcept {
    const size_t n0 = p_ + (end_tag ? 2 : 1);
    size_t n1 = n0 + 1;
    while (n1 < len_ && !is_name_end(in_[n1])) ++n1;
    const std::uint32_t f = classify_tag(in_ + n0, n1 - n0);
    // White space before a block start tag or after a block end tag lies
    // outside the block's box, at a line edge. White space just inside a
    // block (after <div>, before </div>) may sit next to ::before/::after
    // content and render, so it is not removed for the block's sake.
    const bool outside = (f & kBlock) && ((f & kVoid) || !end_tag);
    const bool outside_after = (f & kBlock) && ((f & kVoid) || end_tag);
    const bool verbatim = depth_ != 0;
    flush(outside ? kind::block : kind::neutral);
    copy_to(n1);
    const bool link = !end_tag && !verbatim && rewrite_ && (f & (kAnchor | kImg));
    const bool closed = tag_body(verbatim, link ? f : 0);
    prev_ = outside_after ? kind::block : kind::neutral;
    if (f & kFormatting) {
      if (!end_tag) {
        ++formatting_;
      } else if (formatting_ != 0) {
        --formatting_;
      }
    }
    if (!verbatim) {
      // Head state changes from inside pre/listing are ignored: their opening
      // tag already cleared doc_start_ and in_head_, and nothing there sets them.
      doc_start_ = false;
      if (f & kHead) {
        in_head_ = !end_tag && head_allowed_;
      } else if (!(f & kHeadOk)) {
        in_head_ = false;
      }
      if (end_tag || !(f & kHtml)) head_allowed_ = false;
      if (!end_tag && (f & kBase)) rewrite_ = false;
    }
    prev_in_head_ = in_head_;
    if (!closed) return;
    if (end_tag) {
      if ((f & kPreLike) && depth_ != 0) --depth_;
      return;
    }
    if (f & kPreLike) ++depth_;
    if (f & kRaw) raw_text(f);
  }

  enum class tag_state : u8 { before_name, attr_name, after_name, before_value, unquoted, after_quoted, self_closing };

  // The attributes and the closing '>' of a tag, after its name. Returns
  // false when the input ends first (the browser drops such a tag).
  bool tag_body(bool verbatim, std::uint32_t link) noexcept {
    using st = tag_state;
    st s = st::before_name;
    size_t an0 = 0, an1 = 0;  // the current attribute name
    while (p_ < len_) {
      const u8 b = in_[p_];
      if (is_ws(b)) {
        if (s == st::attr_name) {
          an1 = p_;
          s = st::after_name;
        } else if (s == st::unquoted || s == st::after_quoted || s == st::self_closing) {
          s = st::before_name;
        }
        if (verbatim) {
          out_[o_++] = b;
          ++p_;
        } else {
          bool lf = false;
          do {
            lf |= in_[p_] == '\n';
            ++p_;
          } while (p_ < len_ && is_ws(in_[p_]));
          out_[o_++] = lf ? '\n' : ' ';
        }
        continue;
      }
      if (b == '>') {  // closes the tag in every state outside a quoted value
        out_[o_++] = b;
        ++p_;
        return true;
      }
      switch (s) {
        case st::before_name:
          if (b == '/') {
            s = st::self_closing;
          } else {
            an0 = p_;  // includes a leading '=' (part of the name there)
            s = st::attr_name;
          }
          break;
        case st::attr_name:
          if (b == '/') {
            an1 = p_;
            s = st::self_closing;
          } else if (b == '=') {
            an1 = p_;
            s = st::before_value;
          }
          break;
        case st::after_name:
          if (b == '/') {
            s = st::self_closing;
          } else if (b == '=') {
            s = st::before_value;
          } else {
            an0 = p_;
            s = st::attr_name;
          }
          break;
        case st::before_value:
          if (b == '"' || b == '\'') {
            if (!quoted(b, link != 0 && b == '"' && names_link(link, an0, an1))) return false;
            s = st::after_quoted;
            continue;
          }
          s = st::unquoted;
          break;
        case st::unquoted:
          break;
        case st::after_quoted:
        case st::self_closing:
          if (b == '/') {
            s = st::self_closing;
            break;
          }
          s = st::before_name;  // reconsume
          continue;
      }
      out_[o_++] = b;
      ++p_;
    }
    return false;
  }

  bool names_link(std::uint32_t link, size_t an0, size_t an1) const noexcept {
    const size_t n = an1 - an0;
    if (link & kAnchor) return n == 4 && ieq(in_ + an0, "href", 4);
    return n == 3 && ieq(in_ + an0, "src", 3);
  }

  // A quoted value at p_ (on its opening quote). Returns false when it is
  // unterminated: then it has been copied to the end of the input.
  bool quoted(u8 quote, bool rewrite) noexcept {
    const size_t v0 = p_ + 1;
    const size_t v1 = find_byte(in_, v0, len_, quote);
    if (v1 == len_) {
      copy_to(len_);
      return false;
    }
    if (!rewrite) {
      copy_to(v1 + 1);
      return true;
    }
    out_[o_++] = quote;
    rewrite_url(in_ + v0, v1 - v0);
    out_[o_++] = quote;
    p_ = v1 + 1;
    return true;
  }

  void emit(const u8* a, size_t n) noexcept {
    std::memcpy(out_ + o_, a, n);
    o_ += n;
  }

  // http://host/p?q#f, https://host/p?q#f or //host/p?q#f with host == Host
  // (ASCII case-insensitive) → /p?q#f ("/" for an empty path); and when p is
  // the request path and a query is present → ?q#f. Anything else is kept.
  void rewrite_url(const u8* v, size_t n) noexcept {
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
    if (j - a != host_len_ || !ieq_both(v + a, host_, host_len_)) return emit(v, n);
    size_t k = j;
    while (k < n && v[k] != '?' && v[k] != '#') ++k;
    if (k < n && v[k] == '?' && path_len_ != 0) {
      const bool same = (k == j) ? (path_len_ == 1 && path_[0] == '/')
                                 : (k - j == path_len_ && std::memcmp(v + j, path_, path_len_) == 0);
      if (same) return emit(v + k, n - k);
    }
    if (j == k) out_[o_++] = '/';
    emit(v + j, n - j);
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
