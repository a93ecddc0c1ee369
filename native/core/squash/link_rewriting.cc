// Stage: link rewriting (link_rewriting.h).
#include "core/squash/link_rewriting.h"

#include <cstring>

#include "core/html_tables.h"

namespace kb::squash {
namespace {

// Case-insensitive on both sides (the Host option may be written in any case).
inline bool ieq_both(const u8* a, const u8* b, size_t n) noexcept {
  for (size_t i = 0; i < n; ++i) {
    if (lower(a[i]) != lower(b[i])) return false;
  }
  return true;
}

// Where the authority of the absolute link v (n bytes) starts, when its
// scheme is one a rewritten link keeps: the request's, or none ("//").
// 0 when the link is not to be rewritten.
inline size_t authority_start(const u8* v, size_t n, request_scheme scheme) noexcept {
  if (n >= 7 && ieq(v, "http://", 7)) return scheme == request_scheme::http ? 7 : 0;
  if (n >= 8 && ieq(v, "https://", 8)) return scheme == request_scheme::https ? 8 : 0;
  if (n >= 2 && v[0] == '/' && v[1] == '/') return 2;
  return 0;
}

// Writes the link value v (n bytes) at out + o, shortened when it points at
// this site; returns the output cursor after it.
// http://host/p?q#f (http request), https://host/p?q#f (https request) or
// //host/p?q#f with host == Host → /p?q#f ("/" for an empty path); and when
// p is the request path and a query is present → ?q#f. Anything else is
// kept, and so is a link whose path, alone, would read as another host:
// "//x", "/\x", "/<tab or line feed>/x" (URL parsing treats a backslash as
// '/' and drops tabs and line feeds), test/native/squash/squash-link-double-slash.test.ts.
size_t rewrite_url(const u8* v, size_t n, u8* out, size_t o, const link_target& t) noexcept {
  const auto emit = [&](const u8* a, size_t k) {
    std::memcpy(out + o, a, k);
    return o + k;
  };
  const size_t a = authority_start(v, n, t.scheme);
  if (a == 0) return emit(v, n);
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

}  // namespace

// The value's closing quote is looked for within kLinkLookahead bytes: a
// stream must decide a link before it writes it, and holds back at most that.
KB_COLD cursors rewrite_quoted(const u8* in, size_t len, u8* out, size_t p, size_t o, const link_target& t, bool final,
                               size_t clear) noexcept {
  const size_t v0 = p + 1;
  const bool long_enough = len - v0 > kLinkLookahead;
  const size_t limit = long_enough ? v0 + kLinkLookahead + 1 : len;
  const size_t from = p + clear > v0 ? p + clear : v0;
  const size_t v1 = find_byte(in, from < limit ? from : limit, limit, '"');
  if (v1 == limit) {
    if (long_enough) return {p, o, link_outcome::plain};
    if (!final) return {p, o, link_outcome::held};
    std::memcpy(out + o, in + p, len - p);
    return {len, o + (len - p), link_outcome::open};
  }
  out[o++] = '"';
  o = rewrite_url(in + v0, v1 - v0, out, o, t);
  out[o++] = '"';
  return {v1 + 1, o, link_outcome::closed};
}

bool names_link(const u8* in, std::uint32_t link, size_t an0, size_t an1) noexcept {
  const size_t n = an1 - an0;
  if (link & html::kAnchor) return n == 4 && ieq(in + an0, "href", 4);
  return n == 3 && ieq(in + an0, "src", 3);
}

}  // namespace kb::squash
