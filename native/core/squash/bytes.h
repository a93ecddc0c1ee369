// Bytes for every stage of the HTML squasher: byte classes, case folding,
// searching and copying, and the SSE2 helpers the scanners share. The
// TypeScript twin's counterpart is src/native/twins/squash/bytes.ts.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

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

namespace kb::squash {

using u8 = std::uint8_t;
using std::size_t;

enum : u8 {
  // The HTML tokenizer's white space (\t \n \f \r and space, not \v): it ends
  // tag names and separates attributes.
  kWs = 1,
  // White space the squasher collapses: \t \n \r and space. Form feed is
  // tokenizer white space but not CSS white space (a browser draws it as a
  // glyph that does not collapse), so it is never touched.
  kCollapsible = 2,
  kAlpha = 4,      // A-Z a-z: what may follow '<' or '</' to open a tag
  kNameEnd = 8,    // ends a tag name: white space, '/' or '>'
  kEndDelim = 16,  // may follow "</name" in an end tag: white space, '/' or '>'
};

struct byte_table {
  u8 v[256];
};

constexpr byte_table make_byte_table() {
  byte_table t{};
  const char ws[] = {'\t', '\n', '\f', '\r', ' '};
  for (char c : ws) t.v[static_cast<u8>(c)] |= kWs | kNameEnd | kEndDelim | (c == '\f' ? 0 : kCollapsible);
  for (int c = 'a'; c <= 'z'; ++c) t.v[c] |= kAlpha;
  for (int c = 'A'; c <= 'Z'; ++c) t.v[c] |= kAlpha;
  t.v[static_cast<u8>('/')] |= kNameEnd | kEndDelim;
  t.v[static_cast<u8>('>')] |= kNameEnd | kEndDelim;
  return t;
}

inline constexpr byte_table kBytes = make_byte_table();

inline bool is_ws(u8 b) noexcept { return kBytes.v[b] & kWs; }
inline bool is_collapsible(u8 b) noexcept { return kBytes.v[b] & kCollapsible; }
inline bool is_alpha(u8 b) noexcept { return kBytes.v[b] & kAlpha; }
inline bool is_name_end(u8 b) noexcept { return kBytes.v[b] & kNameEnd; }
inline bool is_end_delim(u8 b) noexcept { return kBytes.v[b] & kEndDelim; }
inline u8 lower(u8 b) noexcept { return (b >= 'A' && b <= 'Z') ? static_cast<u8>(b | 0x20) : b; }

// ASCII case-insensitive comparison of `n` input bytes with a lowercase literal.
inline bool ieq(const u8* a, const char* lower_literal, size_t n) noexcept {
  for (size_t i = 0; i < n; ++i) {
    if (lower(a[i]) != static_cast<u8>(lower_literal[i])) return false;
  }
  return true;
}

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

// Where a token running to the next '>' ends (after it), or len.
inline size_t after_gt(const u8* in, size_t len, size_t from) noexcept {
  const size_t gt = find_byte(in, from, len, '>');
  return gt == len ? len : gt + 1;
}

#if KB_SQUASH_SSE2
KB_INLINE __m128i load16(const u8* p) noexcept { return _mm_loadu_si128(reinterpret_cast<const __m128i*>(p)); }
KB_INLINE void store16(u8* p, __m128i v) noexcept { _mm_storeu_si128(reinterpret_cast<__m128i*>(p), v); }
KB_INLINE __m128i eq(__m128i v, char c) noexcept { return _mm_cmpeq_epi8(v, _mm_set1_epi8(c)); }
KB_INLINE unsigned bits(__m128i m) noexcept { return static_cast<unsigned>(_mm_movemask_epi8(m)); }
// The collapsible white space: space, \n, \t, \r (not \f).
KB_INLINE __m128i ws16(__m128i v) noexcept {
  return _mm_or_si128(_mm_or_si128(eq(v, ' '), eq(v, '\n')), _mm_or_si128(eq(v, '\t'), eq(v, '\r')));
}
// Bytes that end a tag name: the tokenizer's white space (with \f), '/' and '>'.
KB_INLINE unsigned name_end16(__m128i v) noexcept {
  return bits(_mm_or_si128(_mm_or_si128(ws16(v), eq(v, '\f')), _mm_or_si128(eq(v, '/'), eq(v, '>'))));
}
// Bytes <= 0x20: white space and the other control bytes, in two operations.
KB_INLINE __m128i control_or_space16(__m128i v) noexcept {
  return _mm_cmpeq_epi8(_mm_min_epu8(v, _mm_set1_epi8(0x20)), v);
}
// A superset of name_end16, in fewer operations: every byte <= 0x20 (white
// space and the other control bytes), '/' and '>'. Callers check the byte
// found when it is below 0x20 and not white space.
KB_INLINE unsigned name_end_or_control16(__m128i v) noexcept {
  return bits(_mm_or_si128(control_or_space16(v), _mm_or_si128(eq(v, '/'), eq(v, '>'))));
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

// The scanners work over (in, len) writing to out, with the cursors p and o
// passed by reference so that callers keep them in registers. All keep
// o <= p, which makes a 16-byte store at o safe whenever a 16-byte load at p is.
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

}  // namespace kb::squash
