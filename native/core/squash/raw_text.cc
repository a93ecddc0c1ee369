// Stage: raw text (raw_text.h).
#include "core/squash/raw_text.h"

#include <cstring>

#include "core/html_tables.h"

namespace kb::squash {
namespace {

// The next "</name" followed by white space, '/' or '>', or len.
size_t raw_end(const u8* in, size_t len, size_t q, const char* name, size_t n) noexcept {
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

// Past a word of letters at `from` in the escaped script states: *q moves past
// it (and past the delimiter after it), and the state becomes `on_script` when
// the word is "script" followed by a delimiter, else `otherwise`. False when the
// letters run to the end of the input.
template <typename State>
inline bool past_word(const u8* in, size_t len, size_t from, size_t* q, State* s, State on_script,
                      State otherwise) noexcept {
  size_t r;
  const bool script = script_word(in, len, from, &r);
  if (r == len) return false;
  const bool delim = is_end_delim(in[r]);
  *s = delim && script ? on_script : otherwise;
  *q = delim ? r + 1 : r;
  return true;
}

// The end of script content: the tokenizer's script data states, with the
// "<!--" escape and the "<script>" double escape inside it, in which
// "</script>" does not end the element.
size_t script_end(const u8* in, size_t len, size_t q) noexcept {
  enum state { data, esc, esc_dash, esc_dash_dash, desc, desc_dash, desc_dash_dash } s = data;
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
          if (!past_word(in, len, q + 1, &q, &s, desc, esc)) return len;
        } else {
          s = esc;
          ++q;
        }
      } else {
        if (next && in[q + 1] == '/') {
          if (!past_word(in, len, q + 2, &q, &s, esc, desc)) return len;
        } else {
          s = desc;
          ++q;
        }
      }
      continue;
    }
    switch (s) {
      case esc:
        s = b == '-' ? esc_dash : esc;
        break;
      case esc_dash:
        s = b == '-' ? esc_dash_dash : esc;
        break;
      case esc_dash_dash:
        s = b == '>' ? data : b == '-' ? esc_dash_dash : esc;
        break;
      case desc:
        s = b == '-' ? desc_dash : desc;
        break;
      case desc_dash:
        s = b == '-' ? desc_dash_dash : desc;
        break;
      case desc_dash_dash:
        s = b == '>' ? data : b == '-' ? desc_dash_dash : desc;
        break;
      default:
        break;
    }
    ++q;
  }
  return len;
}

}  // namespace

KB_COLD size_t raw_text_end(const u8* in, size_t len, size_t q, std::uint32_t f) noexcept {
  using namespace html;
  if (f & kPlaintext) return len;
  if (f & kScript) return script_end(in, len, q);
  const char* name = raw_name(f);
  return raw_end(in, len, q, name, std::strlen(name));
}

}  // namespace kb::squash
