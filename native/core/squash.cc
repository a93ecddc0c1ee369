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

namespace kb {
namespace squash {
namespace {

// A token copied as it is (doctype, bogus comment, kept comment, "</>").
KB_INLINE void opaque(state& st, const u8* in, size_t len, u8* out, size_t& p, size_t& o, size_t end, kind k) noexcept {
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
      // A removed comment is transparent: a pending run stays pending and
      // merges with what follows.
      if (!span.keep && !(st.mode & m_verbatim) &&
          comment_removable(in, len, span.end, (st.mode & m_ws_pending) != 0, (st.mode & m_prev_text) != 0, out, o)) {
        p = span.end;
        return;
      }
      return opaque(st, in, len, out, p, o, span.end, kind::neutral);
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

size_t squash_document(const u8* in, size_t len, u8* out, const squash_options& opt) noexcept {
  const link_target target{opt.host, opt.host ? opt.host_len : 0, opt.path, opt.path ? opt.path_len : 0, opt.scheme};
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
    } else if (is_collapsible(b)) {
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
