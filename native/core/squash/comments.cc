// Stage: comments (comments.h).
#include "core/squash/comments.h"

namespace kb::squash {
namespace {

inline bool starts_with(const u8* a, size_t n, const char* lit, size_t m) noexcept {
  return n >= m && std::memcmp(a, lit, m) == 0;
}
inline bool ends_with(const u8* a, size_t n, const char* lit, size_t m) noexcept {
  return n >= m && std::memcmp(a + n - m, lit, m) == 0;
}

}  // namespace

KB_COLD size_t comment_close(const u8* in, size_t len, size_t from) noexcept {
  for (size_t i = from;; ++i) {
    i = find_byte(in, i, len, '-');
    if (i + 2 >= len) return kNotFound;
    if (in[i + 1] != '-') continue;
    if (in[i + 2] == '>' || (in[i + 2] == '!' && i + 3 < len && in[i + 3] == '>')) return i;
  }
}

KB_COLD comment_span scan_comment(const u8* in, size_t len, size_t p, size_t clear) noexcept {
  const size_t c0 = p + 4;
  size_t c1 = len, end = len;
  bool closed = false;
  if (c0 < len && in[c0] == '>') {
    c1 = c0, end = c0 + 1, closed = true;
  } else if (c0 + 1 < len && in[c0] == '-' && in[c0 + 1] == '>') {
    c1 = c0, end = c0 + 2, closed = true;
  } else {
    const size_t i = comment_close(in, len, p + clear > c0 ? p + clear : c0);
    if (i != kNotFound) c1 = i, end = after_close(in, i), closed = true;
  }
  const u8* body = in + c0;
  const size_t n = c1 - c0;
  const bool keep =
      !closed || starts_with(body, n, "[if", 3) || starts_with(body, n, "!", 1) || ends_with(body, n, "[endif]", 7);
  return {end, c1, closed, keep};
}

}  // namespace kb::squash
