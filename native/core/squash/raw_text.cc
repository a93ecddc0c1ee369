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

// The end of script content: the tokenizer's script data states, with the
// "<!--" escape and the "<script>" double escape inside it, in which
// "</script>" does not end the element.
size_t script_end(const u8* in, size_t len, size_t q) noexcept {
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
