// Stage: raw text (raw_text.h).
#include "core/squash/raw_text.h"

#include <cstring>

#include "core/html_tables.h"

namespace kb::squash {
namespace {

// Whether the bytes from q to len (fewer than `n`) begin the lowercase
// literal `lit`, ignoring ASCII case: a token the window cut may still be it.
inline bool could_be(const u8* in, size_t len, size_t q, const char* lit, size_t n) noexcept {
  for (size_t i = 0; i < n && q + i < len; ++i) {
    if (lower(in[q + i]) != static_cast<u8>(lit[i])) return false;
  }
  return true;
}

// The end tag "</name" + white space, '/' or '>' at the '<' at q, for a name
// of n bytes written as "</name" in `tag` (n + 2 bytes).
inline bool end_tag_at(const u8* in, size_t len, size_t q, const char* tag, size_t n) noexcept {
  return q + 2 + n < len && ieq(in + q, tag, n + 2) && is_end_delim(in[q + 2 + n]);
}

// The next "</name" followed by white space, '/' or '>'.
raw_scan raw_end(const u8* in, size_t len, size_t q, const char* name, size_t n, bool final) noexcept {
  char tag[16] = "</";
  std::memcpy(tag + 2, name, n);
  for (;; ++q) {
    q = find_byte(in, q, len, '<');
    if (q == len) return {len, false, s_data};
    if (end_tag_at(in, len, q, tag, n)) return {q, true, s_data};
    if (!final && q + 2 + n >= len && could_be(in, len, q, tag, n + 2)) return {q, false, s_data};
  }
}

constexpr const char kScriptEnd[] = "</script";

inline bool script_close_at(const u8* in, size_t len, size_t q) noexcept {
  return end_tag_at(in, len, q, kScriptEnd, 6);
}

// Whether a window that is not the last cut "</script" + delimiter at q.
inline bool close_cut(const u8* in, size_t len, size_t q, bool final) noexcept {
  return !final && q + 8 >= len && could_be(in, len, q, kScriptEnd, 8);
}

// Past a word of letters at `from` in the escaped script states: *q moves
// past it (and past the delimiter after it), and the state becomes
// `on_script` when the word is "script" followed by a delimiter, else
// `otherwise`. Returns false when the letters run to the end of the window:
// in a final window the content then runs to the end; in another, a word of
// up to six letters may still become "script" (the scan stops before its
// '<'), and a longer one is not it (it is passed, in state `otherwise`).
inline bool past_word(const u8* in, size_t len, size_t from, size_t* q, u8* s, u8 on_script, u8 otherwise, bool final,
                      bool* cut) noexcept {
  size_t r = from;
  while (r < len && is_alpha(in[r])) ++r;
  if (r == len) {
    if (final || r - from <= 6) {
      *cut = !final;
      return false;
    }
    *s = otherwise;
    *q = len;
    return true;
  }
  const bool script = r - from == 6 && ieq(in + from, "script", 6);
  const bool delim = is_end_delim(in[r]);
  *s = delim && script ? on_script : otherwise;
  *q = delim ? r + 1 : r;
  return true;
}

// The end of script content: the tokenizer's script data states, with the
// "<!--" escape and the "<script>" double escape inside it, in which
// "</script>" does not end the element.
raw_scan script_end(const u8* in, size_t len, size_t q, u8 s, bool final) noexcept {
  while (q < len) {
    if (s == s_data) {
      q = find_byte(in, q, len, '<');
      if (q == len) return {len, false, s};
      if (script_close_at(in, len, q)) return {q, true, s};
      if (close_cut(in, len, q, final) || (!final && q + 3 >= len && could_be(in, len, q, "<!--", 4)))
        return {q, false, s};
      if (q + 3 < len && in[q + 1] == '!' && in[q + 2] == '-' && in[q + 3] == '-') {
        s = s_esc_dash_dash;
        q += 4;
      } else {
        ++q;
      }
      continue;
    }
    const u8 b = in[q];
    if (b == '<') {
      if (!final && q + 1 >= len) return {q, false, s};
      const bool next = q + 1 < len;
      const size_t at = q;
      bool cut = false;
      if (s <= s_esc_dash_dash) {
        if (script_close_at(in, len, q)) return {q, true, s};
        if (close_cut(in, len, q, final)) return {q, false, s};
        if (next && in[q + 1] == '/') {
          s = s_esc;
          q += 2;
        } else if (next && is_alpha(in[q + 1])) {
          if (!past_word(in, len, q + 1, &q, &s, s_desc, s_esc, final, &cut)) return {cut ? at : len, false, s};
        } else {
          s = s_esc;
          ++q;
        }
      } else {
        if (next && in[q + 1] == '/') {
          if (!past_word(in, len, q + 2, &q, &s, s_esc, s_desc, final, &cut)) return {cut ? at : len, false, s};
        } else {
          s = s_desc;
          ++q;
        }
      }
      continue;
    }
    switch (s) {
      case s_esc:
        s = b == '-' ? s_esc_dash : s_esc;
        break;
      case s_esc_dash:
        s = b == '-' ? s_esc_dash_dash : s_esc;
        break;
      case s_esc_dash_dash:
        s = b == '>' ? s_data : b == '-' ? s_esc_dash_dash : s_esc;
        break;
      case s_desc:
        s = b == '-' ? s_desc_dash : s_desc;
        break;
      case s_desc_dash:
        s = b == '-' ? s_desc_dash_dash : s_desc;
        break;
      case s_desc_dash_dash:
        s = b == '>' ? s_data : b == '-' ? s_desc_dash_dash : s_desc;
        break;
      default:
        break;
    }
    ++q;
  }
  return {len, false, s};
}

}  // namespace

KB_COLD raw_scan raw_text_scan(const u8* in, size_t len, size_t q, std::uint32_t f, u8 script, bool final) noexcept {
  using namespace html;
  if (f & kPlaintext) return {len, false, s_data};
  if (f & kScript) return script_end(in, len, q, script, final);
  const char* name = raw_name(f);
  return raw_end(in, len, q, name, std::strlen(name), final);
}

}  // namespace kb::squash
