// The HTML white-space squasher, one pass over bytes: the driver. It
// follows the HTML tokenizer closely enough to find the same tags, comments,
// quoted attribute values and raw-text elements a browser finds, and changes
// only ASCII white space, comments and (optionally) links. Each rule lives
// in the file of its stage, and the TypeScript twin has the same files:
//
//   native/core/squash/text_whitespace.h        src/native/twins/squash/text-whitespace.ts
//   native/core/squash/tags_attributes.h        src/native/twins/squash/tags-attributes.ts
//   native/core/squash/raw_text.{h,cc}          src/native/twins/squash/raw-text.ts
//   native/core/squash/comments.{h,cc}          src/native/twins/squash/comments.ts
//   native/core/squash/link_rewriting.{h,cc}    src/native/twins/squash/link-rewriting.ts
//   native/core/squash/state.h                  src/native/twins/squash/state.ts
//   native/core/squash/bytes.h                  src/native/twins/squash/bytes.ts
//   native/core/html_tables.h (generated)       src/native/twins/squash/html-tables.ts (generated)
//   native/core/squash.cc (this driver)         src/native/twins/squash-html.ts
//
// Also copied verbatim: everything inside pre/listing (depth-counted, since
// their content is ordinary markup), doctypes, bogus comments and "<?…>".
// Malformed input protects to its end: an unterminated quote, raw element or
// comment is copied to the last byte.
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
// squash_html(), hot helpers (the stage headers) are always inlined and take
// them by reference, and cold helpers (the stage .cc files) take values and
// return values.
#include "core/squash.h"

#include <cstring>

#include "core/squash/bytes.h"
#include "core/squash/comments.h"
#include "core/squash/link_rewriting.h"
#include "core/squash/state.h"
#include "core/squash/tags_attributes.h"
#include "core/squash/text_whitespace.h"
#include "core/squash_stream.h"

namespace kb {
namespace squash {
namespace {

// A token copied as it is (doctype, bogus comment, kept comment, "</>").
KB_INLINE void opaque(state& st, const u8* in, size_t len, u8* out, size_t& p, size_t& o, size_t end, kind k) noexcept {
  o = flush(st, out, o, k);
  copy_bytes(in, len, out, p, o, end);
  set_prev(st, k);
}

// The rest of a token that runs to the next '>' (a doctype, a bogus
// comment), from p. A stream's window that ends first stops inside it.
template <bool Final>
KB_INLINE bool opaque_rest(state& st, const u8* in, size_t len, u8* out, size_t& p, size_t& o, kind k,
                           window& w) noexcept {
  const size_t gt = find_byte(in, p, len, '>');
  copy_bytes(in, len, out, p, o, gt == len ? len : gt + 1);
  if (!Final && gt == len) {
    w.pr = progress{};
    w.pr.at = resume::opaque;
    w.pr.k = k;
    return true;
  }
  set_prev(st, k);
  return false;
}

// A token from p that runs to the next '>' after `from`.
template <bool Final>
KB_INLINE bool opaque_to_gt(state& st, const u8* in, size_t len, u8* out, size_t& p, size_t& o, size_t from, kind k,
                            window& w) noexcept {
  o = flush(st, out, o, k);
  copy_bytes(in, len, out, p, o, from);
  return opaque_rest<Final>(st, in, len, out, p, o, k, w);
}

// The rest of a comment kept because its end lies past kCommentLookahead:
// copied to its end. A stream's window keeps its last three bytes, which may
// begin "-->" or "--!>".
template <bool Final>
KB_INLINE bool long_comment_rest(state& st, const u8* in, size_t len, u8* out, size_t& p, size_t& o,
                                 window& w) noexcept {
  const size_t close = comment_close(in, len, p);
  if (close != kNotFound) {
    copy_bytes(in, len, out, p, o, after_close(in, close));
    set_prev(st, kind::neutral);
    return false;
  }
  if (Final) {
    copy_bytes(in, len, out, p, o, len);
    set_prev(st, kind::neutral);
    return false;
  }
  if (len - p > 3) copy_bytes(in, len, out, p, o, len - 3);
  w.pr = progress{};
  w.pr.at = resume::long_comment;
  return true;
}

// A '<' that opens nothing: plain text.
KB_INLINE void text_lt(state& st, u8* out, size_t& p, size_t& o) noexcept {
  o = flush(st, out, o, kind::text);
  out[o++] = '<';
  ++p;
  saw_text(st);
}

// "<!--" at p. The comment goes or stays by what is around it (comments.h).
// A stream's window stops before it (p unchanged) until its fate is known:
// its end, and what follows it; the white-space run after it is then kept
// as one byte (window::compact_from).
template <bool Final>
KB_INLINE bool comment(state& st, const u8* in, size_t len, u8* out, size_t& p, size_t& o, window& w) noexcept {
  const size_t s = p;
  const comment_span span = scan_comment(in, len, s, s == 0 ? w.clear_in : 0);
  // Held for the next window: no "-->" starts before where it need look.
  const auto hold = [&] {
    w.clear_out = span.closed ? span.close - s : len - s > 3 ? len - s - 3 : 0;
    return true;
  };
  if (!Final && !span.closed && len - s < kCommentLookahead) return hold();
  const bool long_one = !span.closed || span.end - s > kCommentLookahead;
  if (long_one && !span.closed) {  // kept: its end is too far to wait for (or there is none)
    o = flush(st, out, o, kind::neutral);
    copy_bytes(in, len, out, p, o, s + 4);
    return long_comment_rest<Final>(st, in, len, out, p, o, w);
  }
  if (span.keep || long_one || (st.mode & m_verbatim)) {
    opaque(st, in, len, out, p, o, span.end, kind::neutral);
    return false;
  }
  const size_t end = span.end;
  if (!Final && end == len) return hold();
  size_t r = end;
  while (r < len && is_collapsible(in[r])) ++r;
  if (!Final && r == len) {
    w.compact_from = end;
    return hold();
  }
  const bool ws_pending = (st.mode & m_ws_pending) != 0;
  const bool first = !w.wrote_before && o == 0 && !ws_pending;  // U+FEFF next would become a byte order mark
  if (!Final && first && in[end] == 0xEF && end + 3 > len) return hold();
  const bool bom_next = first && end + 3 <= len && in[end] == 0xEF && in[end + 1] == 0xBB && in[end + 2] == 0xBF;
  const bool prev_text = (st.mode & m_prev_text) != 0;
  // A removed comment is transparent: a pending run stays pending and
  // merges with what follows.
  if (comment_removable(end < len ? in[end] : -1, r < len && in[r] == '\f', bom_next, ws_pending, prev_text,
                        prev_text && form_feed_before(out, o, w.before))) {
    p = end;
    return false;
  }
  opaque(st, in, len, out, p, o, end, kind::neutral);
  return false;
}

// A '<' at p that is not the start of a tag: comment, doctype, bogus
// comment, "</>", or text.
template <bool Final>
KB_INLINE bool other_markup(state& st, const u8* in, size_t len, u8* out, size_t& p, size_t& o, window& w) noexcept {
  const size_t s = p;
  if (s + 1 >= len) {
    text_lt(st, out, p, o);
    return false;
  }
  const u8 c = in[s + 1];
  if (c == '/') {
    if (s + 2 >= len) {  // "</" at the end is text
      text_lt(st, out, p, o);
      return false;
    }
    // "</>" is dropped by the parser; "</" + other is a bogus comment.
    if (in[s + 2] == '>') {
      opaque(st, in, len, out, p, o, s + 3, kind::neutral);
      return false;
    }
    return opaque_to_gt<Final>(st, in, len, out, p, o, s + 2, kind::neutral, w);
  }
  if (c == '!') {
    if (!Final && s + 9 > len) return true;  // "<!--" or "<!doctype" may follow
    if (s + 3 < len && in[s + 2] == '-' && in[s + 3] == '-') return comment<Final>(st, in, len, out, p, o, w);
    const bool doctype = s + 9 <= len && ieq(in + s + 2, "doctype", 7);
    // Before any tag or text, white space around a doctype is ignored by the parser.
    return opaque_to_gt<Final>(st, in, len, out, p, o, s + 2,
                               doctype && (st.mode & m_doc_start) ? kind::block : kind::neutral, w);
  }
  if (c == '?') return opaque_to_gt<Final>(st, in, len, out, p, o, s + 2, kind::neutral, w);
  text_lt(st, out, p, o);
  return false;
}

// A '<' at p. Returns true when a stream's window stopped (before the token
// when what it is depends on bytes the window does not have).
template <bool Final>
KB_INLINE bool markup(state& st, const u8* in, size_t len, u8* out, size_t& p, size_t& o, window& w) noexcept {
  if (!Final && (p + 1 >= len || (in[p + 1] == '/' && p + 2 >= len))) return true;
  // Start or end tag without a branch on which: "<a" or "</a".
  const size_t slash = (p + 1 < len && in[p + 1] == '/') ? 1 : 0;
  if (p + 1 + slash < len && is_alpha(in[p + 1 + slash])) return tag<Final>(st, in, len, out, p, o, slash != 0, w);
  return other_markup<Final>(st, in, len, out, p, o, w);
}

// Tokens from p to the end of the window. Returns true when the window
// stopped early (a stream's, only): w.pr and p say where.
template <bool Final>
KB_INLINE bool tokens(state& st, const u8* in, size_t len, u8* out, size_t& p, size_t& o, window& w) noexcept {
  while (p < len) {
    const u8 b = in[p];
    if (st.mode & m_verbatim) {
      if (b == '<') {
        if (markup<Final>(st, in, len, out, p, o, w)) return true;
      } else {
        copy_bytes(in, len, out, p, o, find_byte(in, p, len, '<'));
        st.mode = (st.mode & ~m_prev) | m_prev_text;
      }
    } else if (is_collapsible(b)) {
      st.mode |= skip_ws(in, len, p) ? m_ws_pending | m_ws_lf : m_ws_pending;
    } else if (b == '<') {
      if (markup<Final>(st, in, len, out, p, o, w)) return true;
    } else {
      o = flush(st, out, o, kind::text);
      saw_text(st);
      st.mode |= copy_text(in, len, out, p, o);  // a run it stopped after is now pending
    }
  }
  return false;
}

// Where resume_token left the cursors and the state. They go in and out by
// value: a local whose address reached a call that is not inlined would be
// reloaded after every byte stored through `out`.
struct resumed {
  state st;
  size_t p, o;
  bool stopped;
};

// The token an earlier window of a stream stopped inside, from p.
template <bool Final>
resumed resume_token(state st, const u8* in, size_t len, u8* out, size_t p, size_t o, window& w) noexcept {
  const progress pr = w.pr;
  w.pr = progress{};
  bool stopped = false;
  switch (pr.at) {
    case resume::none:
      break;
    case resume::tag_name: {
      size_t n1 = p;
      while (n1 < len && !is_name_end(in[n1])) ++n1;
      stopped = tag_rest<Final>(st, in, len, out, p, o, n1, pr.f, pr.end_tag, w);
      break;
    }
    case resume::tag_body: {
      const bool verbatim = (st.mode & m_verbatim) != 0;
      const bool link = !pr.end_tag && !verbatim && (st.mode & m_rewrite) && (pr.f & (kAnchor | kImg));
      tag_cursor tc = pr.tag;
      const body b = tag_body<Final>(in, len, out, p, o, verbatim, link ? pr.f : 0, w, tc);
      if (!Final && b == body::stopped) {
        w.pr = pr;
        w.pr.tag = tc;
        stopped = true;
        break;
      }
      stopped = tag_end<Final>(st, in, len, out, p, o, pr.f, pr.end_tag, verbatim, b == body::closed, w);
      break;
    }
    case resume::raw_text:
      stopped = raw_text<Final>(in, len, out, p, o, pr.f, pr.script, w);
      break;
    case resume::opaque:
      stopped = opaque_rest<Final>(st, in, len, out, p, o, pr.k, w);
      break;
    case resume::long_comment:
      stopped = long_comment_rest<Final>(st, in, len, out, p, o, w);
      break;
  }
  return {st, p, o, stopped};
}

// One window: the byte order mark at the start of the input, the token an
// earlier window stopped in, the tokens, and in the last window the run
// left pending at the end. Writes from out[0] and sets *written; returns
// where the window stopped (len when it went through). The cursors are
// locals: a byte store through `out` may alias anything the caller holds.
template <bool Final>
size_t squash_window(stream_state& ss, const u8* in, size_t len, u8* out, size_t* written, window& w) noexcept {
  state st = ss.st;
  size_t p = 0, o = 0;
  if (!ss.started) {
    // A UTF-8 byte order mark is not text: the decoder drops it before parsing.
    static const u8 bom[3] = {0xEF, 0xBB, 0xBF};
    if (!Final && len < 3 && std::memcmp(in, bom, len) == 0) {
      *written = 0;
      return 0;
    }
    if (len >= 3 && std::memcmp(in, bom, 3) == 0) copy_bytes(in, len, out, p, o, 3);
    ss.started = true;
  }
  w.pr = ss.pr;
  bool stopped = false;
  if (w.pr.at != resume::none) {
    const resumed r = resume_token<Final>(st, in, len, out, p, o, w);
    st = r.st, p = r.p, o = r.o, stopped = r.stopped;
  }
  if (!stopped) tokens<Final>(st, in, len, out, p, o, w);
  if (Final) o = flush(st, out, o, kind::eof);
  ss.st = st;
  ss.pr = w.pr;
  *written = o;
  return p;
}

// A whole body: one final window, with the state in locals of its own.
size_t squash_document(const u8* in, size_t len, u8* out, const squash_options& opt) noexcept {
  state st{m_head_allowed | m_doc_start | (opt.rewrite_links && opt.host && opt.host_len > 0 ? m_rewrite : 0u), 0, 0};
  window w{link_target{opt.host, opt.host ? opt.host_len : 0, opt.path, opt.path ? opt.path_len : 0, opt.scheme},
           written_tail{},
           false,
           progress{},
           len,
           0,
           0};
  size_t p = 0, o = 0;
  // A UTF-8 byte order mark is not text: the decoder drops it before parsing.
  if (len >= 3 && in[0] == 0xEF && in[1] == 0xBB && in[2] == 0xBF) copy_bytes(in, len, out, p, o, 3);
  tokens<true>(st, in, len, out, p, o, w);
  return flush(st, out, o, kind::eof);
}

}  // namespace
}  // namespace squash

std::size_t squash_html(const std::uint8_t* in, std::size_t len, std::uint8_t* out,
                        const squash_options& opt) noexcept {
  if (len == 0) return 0;
  if (opt.level == 0) {
    std::memcpy(out, in, len);
    return len;
  }
  return squash::squash_document(in, len, out, opt);
}

}  // namespace kb

namespace kb {

squash_stream::squash_stream(const squash_options& opt) noexcept
    : level_(opt.level),
      target_{opt.host, opt.host ? opt.host_len : 0, opt.path, opt.path ? opt.path_len : 0, opt.scheme} {
  using namespace squash;
  ss_.st =
      state{m_head_allowed | m_doc_start | (opt.rewrite_links && opt.host && opt.host_len > 0 ? m_rewrite : 0u), 0, 0};
}

// One window over `in`, writing at out + o; returns where it stopped.
std::size_t squash_stream::window(const std::uint8_t* in, std::size_t len, std::uint8_t* out, std::size_t& o,
                                  bool final, std::size_t& compact_from) noexcept {
  squash::window w{target_, ss_.tail, ss_.wrote, squash::progress{}, len, ss_.clear, 0};
  std::size_t n = 0;
  const std::size_t p = final ? squash::squash_window<true>(ss_, in, len, out + o, &n, w)
                              : squash::squash_window<false>(ss_, in, len, out + o, &n, w);
  ss_.clear = p < len ? w.clear_out : 0;
  ss_.tail = squash::tail_after(ss_.tail, out + o, n);
  ss_.wrote = ss_.wrote || n != 0;
  o += n;
  compact_from = w.compact_from;
  return p;
}

// Keeps from[p, len) for the next window, a white-space run from
// compact_from on as one byte (squash::window says why that is enough).
void squash_stream::keep(const std::uint8_t* from, std::size_t len, std::size_t p, std::size_t compact_from) noexcept {
  bool lf = false;
  for (std::size_t i = compact_from; i < len; ++i) lf |= from[i] == '\n' || from[i] == '\r';
  const std::size_t n = (compact_from < len ? compact_from : len) - p;
  std::memmove(carry_, from + p, n);
  carry_len_ = n;
  if (compact_from < len) carry_[carry_len_++] = lf ? '\n' : ' ';
}

std::size_t squash_stream::feed(const std::uint8_t* in, std::size_t len, std::uint8_t* out,
                                std::size_t out_cap) noexcept {
  if (finished_ || out_cap < feed_bound(len)) return npos;
  if (level_ == 0) {
    if (len != 0) std::memcpy(out, in, len);
    return len;
  }
  std::size_t o = 0;
  // What was held back goes first, with as much of `in` after it as fits.
  while (carry_len_ != 0 && len != 0) {
    const std::size_t old = carry_len_;
    const std::size_t t = len < kCarry - old ? len : kCarry - old;
    std::memcpy(carry_ + old, in, t);
    carry_len_ = old + t;
    in += t;
    len -= t;
    std::size_t compact_from;
    const std::size_t p = window(carry_, carry_len_, out, o, false, compact_from);
    if (p >= old) {  // past what was held: the rest is read in place from `in`
      const std::size_t back = carry_len_ - p;
      in -= back;
      len += back;
      carry_len_ = 0;
    } else {
      keep(carry_, carry_len_, p, compact_from);
    }
  }
  if (len != 0) {
    std::size_t compact_from;
    const std::size_t p = window(in, len, out, o, false, compact_from);
    keep(in, len, p, compact_from);
  }
  return o;
}

std::size_t squash_stream::finish(std::uint8_t* out, std::size_t out_cap) noexcept {
  if (finished_ || out_cap < finish_bound()) return npos;
  finished_ = true;
  if (level_ == 0) return 0;
  std::size_t o = 0, compact_from;
  window(carry_, carry_len_, out, o, true, compact_from);
  carry_len_ = 0;
  return o;
}

}  // namespace kb
