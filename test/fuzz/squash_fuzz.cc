// libFuzzer target for the HTML squasher (native/core/squash.cc), checking
// its guarantees (docs/decisions/0005-squasher-white-space-rules.md) on every input:
//   - the output is never longer than the input (level 0: equal to it);
//   - squashing the output again gives it back (idempotence);
//   - bytes >= 0x80 (so U+00A0 too) come out in order, all of them when the
//     input holds no comment (a removed comment takes its bytes with it);
//   - text without '<' collapses exactly like a one-line model;
//   - in structured inputs (below), every pre/textarea/script/style/title/
//     xmp/listing content and every quoted attribute value comes out byte for
//     byte, in order;
//   - streamed = whole: the page fed to kb::squash_stream in pieces cut at
//     positions derived from the input (one byte at a time, a few bytes,
//     larger pieces, or one cut; empty pieces included) gives the bytes
//     squash_html gives the whole page, and never holds back more than
//     squash_stream::max_held bytes;
//   - native = twin: the TypeScript twin (scripts/twin-oracle.ts, one Node
//     child per process) squashes the same bytes with the same options, whole
//     and fed in the same pieces to its SquashStream, and must return the same
//     bytes both ways (on a hash-chosen sample, see twin_oracle.h).
//
// The first byte chooses the options and the input's shape:
//   bits 0-1  level 0, 1, 2 (3 counts as 1)
//   bit  2    rewriteLinks
//   bits 3-4  host: none, "example.com", "Example.COM:8080", from the input
//   bits 5-6  path: none, "/", "/a/page", from the input
//   bit  7    structured: the rest is a program that assembles a page from
//             well-formed pieces and protected regions (so the regions can
//             be found again); otherwise the rest is the page itself.
// "From the input": one length byte (mod 24), then that many bytes, folded to
// ASCII (the twin takes host and path as strings; ASCII keeps the bytes the
// core sees and the bytes the twin sees the same).
// The request's scheme is the input's length mod 3: unknown, http, https (so
// a mutation that grows or shrinks the input tries every scheme).
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "core/squash.h"
#include "core/squash_stream.h"
#include "twin_oracle.h"

namespace {

using kb::fuzz::bytes;
using kb::fuzz::fail;
using u8 = std::uint8_t;

// Every input goes to the twin: the round trip costs about a quarter of the
// executions per second here (test/fuzz/README.md), a price worth a
// comparison on every input the fuzzer tries.
constexpr unsigned kOracleEvery = 1;

struct reader {
  const u8* p;
  std::size_t n;
  bool empty() const { return n == 0; }
  u8 next() {
    if (n == 0) return 0;
    --n;
    return *p++;
  }
};

struct squash_case {
  kb::squash_options opt;
  bool has_host = false, has_path = false;
  std::string host, path;
  bytes page;
  std::vector<std::pair<std::size_t, std::size_t>> kept;  // protected ranges of `page`
};

std::string ascii_from(reader& r) {
  const std::size_t n = r.next() % 24;
  std::string s;
  for (std::size_t i = 0; i < n && !r.empty(); ++i) s.push_back(static_cast<char>(r.next() & 0x7F));
  return s;
}

// Well-formed pieces: none leaves a tag, a quote or a removable comment
// open, so a protected region that follows is still one when squashed.
// Unclosed raw-text and pre elements are fine: their content is verbatim.
const char* const kContext[] = {
    "<div>",
    "</div>",
    "<p>",
    "</p>",
    "<span>",
    "</span>",
    "<b>",
    "</b>",
    "<i>",
    "</i>",
    "<em>",
    "</em>",
    "<a href=x>",
    "</a>",
    "<br>",
    "<br/>",
    "<hr>",
    "<ul>",
    "</ul>",
    "<li>",
    "</li>",
    "<table>",
    "<tr>",
    "<td>",
    "</td>",
    "</tr>",
    "</table>",
    "<select>",
    "<option>",
    "</select>",
    "<head>",
    "</head>",
    "<html>",
    "</html>",
    "<body>",
    "</body>",
    "<meta charset=utf-8>",
    "<link rel=x>",
    "<base href=/>",
    "<!DOCTYPE html>",
    "<!-- c -->",
    "<!---->",
    "<!-->",
    "<!--->",
    "<!-- a --!>",
    "<!--[if IE]><b> x </b><![endif]-->",
    "<!--! keep  -->",
    "<?php x ?>",
    "</>",
    "</ bogus >",
    "&amp;",
    "&nbsp;",
    "\xC2\xA0",
    "\xC3\xA9",
    "\xF0\x9F\x98\x80",
    "\xEF\xBB\xBF",
    "<a href=\"http://example.com/a/page?q=1\">",
    "<img src=\"//EXAMPLE.com/i.png\">",
    "<a href=\"https://Example.COM:8080/x\">",
    "<a href='http://example.com/'>",
    "<a HREF=\"http://example.com\">",
    "<svg><title>t</title></svg>",
    "<my-el>",
    "</my-el>",
    "<input value=x>",
    "<label>",
    "<form>",
    "</form>",
    "<h1>",
    "</h1>",
    "<pre>",
    "</pre>",
    "<textarea>",
    "<script>",
    "<style>",
    "<xmp>",
    "<noscript>",
    "<title>",
    "<plaintext>",
    "<listing>",
    "<iframe>",
    "</iframe>",
    "<template>",
    "</template>",
    "<font>",
    "<nobr>",
    "<DIV\n  class=\"a  b\"\n>",
    "<P >",
    "</P\n>",
    "<center>",
    "</center>",
    "<dl>",
    "<dt>",
    "<dd>",
};
const char* const kSpace[] = {" ", "  ", "\n", "\r\n", "\t", "\f", "\r", "\n    ", " \n\t ", "\n\n"};
const char* const kProtected[] = {"pre", "textarea", "script", "style", "title", "xmp", "listing"};
const char* const kElement[] = {"span", "div", "input", "img", "p", "a", "td", "option", "b"};
const char* const kAttribute[] = {"title", "alt", "class", "data-x", "value", "style", "onclick", "Title"};

void append(bytes& page, const char* s) { page.insert(page.end(), s, s + std::strlen(s)); }

template <std::size_t N>
const char* pick(const char* const (&list)[N], reader& r) {
  return list[r.next() % N];
}

bool is_alpha(u8 c) { return (c | 0x20) >= 'a' && (c | 0x20) <= 'z'; }

// Protected content: any bytes, except that a '<' which could open markup
// ('<' + letter, '/', '!' or '?') becomes '(' so the region ends where it
// was written to end. `quote`, when given, cannot appear either.
std::pair<std::size_t, std::size_t> add_content(bytes& page, reader& r, u8 quote) {
  const std::size_t n = r.next() % 64;
  const std::size_t at = page.size();
  for (std::size_t i = 0; i < n && !r.empty(); ++i) page.push_back(r.next());
  for (std::size_t i = at; i < page.size(); ++i) {
    u8& c = page[i];
    if (quote != 0 && c == quote) c = '_';
    if (c == '<' && i + 1 < page.size()) {
      const u8 d = page[i + 1];
      if (is_alpha(d) || d == '/' || d == '!' || d == '?') c = '(';
    }
  }
  return {at, page.size() - at};
}

void add_name(bytes& page, const char* name, u8 style) {
  for (std::size_t i = 0; name[i] != 0; ++i) {
    const char c = name[i];
    page.push_back(static_cast<u8>((style >> (i % 8)) & 1 ? (c >= 'a' && c <= 'z' ? c - 32 : c) : c));
  }
}

void build_structured(reader& r, squash_case& c) {
  bytes& page = c.page;
  while (!r.empty()) {
    switch (r.next() % 10) {
      case 0:
      case 1:
      case 2:
        append(page, pick(kContext, r));
        break;
      case 3:
      case 4:
        append(page, pick(kSpace, r));
        break;
      case 5: {  // text
        const std::size_t n = r.next() % 16;
        for (std::size_t i = 0; i < n && !r.empty(); ++i) {
          const u8 b = r.next();
          page.push_back(b == '<' ? '(' : b);
        }
        break;
      }
      case 6:
      case 7: {  // <tag …>content</tag …>
        const char* name = pick(kProtected, r);
        const u8 style = r.next();
        page.push_back('<');
        add_name(page, name, style);
        const char* const start_end[] = {">", " class=\"a  b\">", "\n  id=x >", "/>"};
        append(page, start_end[r.next() % 4]);
        c.kept.push_back(add_content(page, r, 0));
        append(page, "</");
        add_name(page, name, static_cast<u8>(style >> 3));
        append(page, (style & 0x40) ? " >" : (style & 0x80) ? "\n>" : ">");
        break;
      }
      default: {  // <element attr="value"> or '…'
        const u8 quote = (r.next() & 1) ? '"' : '\'';
        page.push_back('<');
        append(page, pick(kElement, r));
        page.push_back(' ');
        append(page, pick(kAttribute, r));
        append(page, (r.next() & 1) ? " = " : "=");
        const std::size_t at = page.size();
        page.push_back(quote);
        add_content(page, r, quote);
        page.push_back(quote);
        c.kept.push_back({at, page.size() - at});
        page.push_back('>');
        break;
      }
    }
  }
}

squash_case decode(const u8* data, std::size_t size) {
  squash_case c;
  reader r{data, size};
  const kb::request_scheme schemes[] = {kb::request_scheme::unknown, kb::request_scheme::http,
                                        kb::request_scheme::https};
  c.opt.scheme = schemes[size % 3];
  const u8 mode = r.next();
  c.opt.level = (mode & 3) == 3 ? 1 : (mode & 3);
  c.opt.rewrite_links = (mode >> 2) & 1;
  switch ((mode >> 3) & 3) {
    case 0:
      break;
    case 1:
      c.has_host = true, c.host = "example.com";
      break;
    case 2:
      c.has_host = true, c.host = "Example.COM:8080";
      break;
    default:
      c.has_host = true, c.host = ascii_from(r);
      break;
  }
  switch ((mode >> 5) & 3) {
    case 0:
      break;
    case 1:
      c.has_path = true, c.path = "/";
      break;
    case 2:
      c.has_path = true, c.path = "/a/page";
      break;
    default:
      c.has_path = true, c.path = ascii_from(r);
      break;
  }
  if (mode & 0x80) {
    build_structured(r, c);
  } else {
    c.page.assign(r.p, r.p + r.n);
  }
  if (c.has_host) c.opt.host = reinterpret_cast<const u8*>(c.host.data()), c.opt.host_len = c.host.size();
  if (c.has_path) c.opt.path = reinterpret_cast<const u8*>(c.path.data()), c.opt.path_len = c.path.size();
  return c;
}

// Squashes through buffers of the exact size, so ASan sees any byte read or
// written past either end.
bytes squash(const u8* in, std::size_t len, const kb::squash_options& opt) {
  std::unique_ptr<u8[]> src(new u8[len]);
  std::unique_ptr<u8[]> dst(new u8[len]);
  if (len != 0) std::memcpy(src.get(), in, len);
  const std::size_t n = kb::squash_html(src.get(), len, dst.get(), opt);
  if (n > len) {
    std::fprintf(stderr, "squash_html returned %zu for %zu input bytes\n", n, len);
    std::abort();
  }
  return bytes(dst.get(), dst.get() + n);
}

// The sizes of the pieces a page of `len` bytes is fed in, from a hash of
// the whole fuzz input, so that a failing input cuts the same way when it is
// replayed alone, and each mutation tries other cuts: one in sixteen inputs
// one byte at a time, three in sixteen with one cut anywhere, the rest in
// pieces of up to 8 bytes (empty ones included) or up to 512. (A piece costs
// the twin a call: feeding every input a byte at a time halved the rate.)
std::vector<std::size_t> piece_sizes(const u8* data, std::size_t size, std::size_t len) {
  std::uint32_t h = 2166136261u;  // FNV-1a
  for (std::size_t i = 0; i < size; ++i) h = (h ^ data[i]) * 16777619u;
  const auto next = [&h] {
    h ^= h << 13, h ^= h >> 17, h ^= h << 5;  // xorshift32
    return h;
  };
  std::vector<std::size_t> sizes;
  const unsigned mode = next() % 16;
  if (mode >= 1 && mode <= 3) {
    if (len != 0) sizes.push_back(next() % (len + 1));
    return sizes;
  }
  for (std::size_t at = 0; at < len;) {
    const std::uint32_t r = next();
    const std::size_t n = mode == 0 ? 1 : r % 4 == 0 ? (r >> 2) % 9 : 1 + (r >> 2) % 512;
    sizes.push_back(n);
    at += n;
  }
  return sizes;
}

// The page fed to a squash_stream in pieces of `sizes` (then the rest),
// each in a buffer of its exact size, writing to one buffer of the size the
// stream asks for the largest piece (so ASan sees any byte read past a piece
// or written past that bound).
bytes squash_streamed(const bytes& in, const kb::squash_options& opt, const std::vector<std::size_t>& sizes) {
  const auto stream = std::make_unique<kb::squash_stream>(opt);
  std::size_t largest = in.size();
  for (std::size_t n : sizes) largest = std::max(largest, n);
  const std::size_t cap = kb::squash_stream::feed_bound(largest);
  const std::unique_ptr<u8[]> out(new u8[cap]);
  bytes result;
  std::size_t at = 0;
  for (std::size_t i = 0; i <= sizes.size(); ++i) {
    const std::size_t n = i < sizes.size() ? std::min(sizes[i], in.size() - at) : in.size() - at;
    const std::unique_ptr<u8[]> chunk(new u8[n]);
    if (n != 0) std::memcpy(chunk.get(), in.data() + at, n);
    const std::size_t written = stream->feed(chunk.get(), n, out.get(), cap);
    if (written == kb::squash_stream::npos || written > cap || stream->held() > kb::squash_stream::max_held) {
      std::fprintf(stderr, "squash_stream::feed returned %zu for %zu bytes, holding %zu\n", written, n, stream->held());
      std::abort();
    }
    result.insert(result.end(), out.get(), out.get() + written);
    at += n;
  }
  const std::size_t written = stream->finish(out.get(), kb::squash_stream::finish_bound());
  if (written == kb::squash_stream::npos || written > kb::squash_stream::finish_bound()) {
    std::fprintf(stderr, "squash_stream::finish returned %zu\n", written);
    std::abort();
  }
  result.insert(result.end(), out.get(), out.get() + written);
  return result;
}

bytes high_bytes(const bytes& b) {
  bytes h;
  for (u8 c : b)
    if (c >= 0x80) h.push_back(c);
  return h;
}

bool contains(const bytes& hay, const char* needle) {
  const std::size_t n = std::strlen(needle);
  for (std::size_t i = 0; i + n <= hay.size(); ++i)
    if (std::memcmp(hay.data() + i, needle, n) == 0) return true;
  return false;
}

// Form feed is not here: it is kept as it is.
bool is_ws(u8 c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

// Text without markup: every run of collapsible white space becomes "\n" if
// it held a line feed or a CR, else " " (the model of test/native/squash/properties).
bytes text_model(const bytes& in) {
  bytes out;
  for (std::size_t i = 0; i < in.size();) {
    if (!is_ws(in[i])) {
      out.push_back(in[i++]);
      continue;
    }
    bool lf = false;
    for (; i < in.size() && is_ws(in[i]); ++i) lf |= in[i] == '\n' || in[i] == '\r';  // CR: a line feed to the parser
    out.push_back(lf ? '\n' : ' ');
  }
  return out;
}

void check_twin(const squash_case& c, const bytes& out, const std::vector<std::size_t>& sizes) {
  bytes req{
      'C', static_cast<u8>(c.opt.level), static_cast<u8>(c.opt.rewrite_links),
      static_cast<u8>((c.has_host ? 1 : 0) | (c.has_path ? 2 : 0) | (c.opt.scheme == kb::request_scheme::http ? 4 : 0) |
                      (c.opt.scheme == kb::request_scheme::https ? 8 : 0))};
  kb::fuzz::put_u32(req, static_cast<std::uint32_t>(c.host.size()));
  req.insert(req.end(), c.host.begin(), c.host.end());
  kb::fuzz::put_u32(req, static_cast<std::uint32_t>(c.path.size()));
  req.insert(req.end(), c.path.begin(), c.path.end());
  kb::fuzz::put_u32(req, static_cast<std::uint32_t>(sizes.size()));
  for (std::size_t n : sizes) kb::fuzz::put_u32(req, static_cast<std::uint32_t>(n));
  req.insert(req.end(), c.page.begin(), c.page.end());
  const bytes reply = kb::fuzz::oracle_call(req);
  // The reply: u32 length of the whole page squashed, those bytes, then the page streamed in the pieces.
  const std::size_t n = reply.size() < 4 ? 0
                                         : std::size_t(reply[0]) | std::size_t(reply[1]) << 8 |
                                               std::size_t(reply[2]) << 16 | std::size_t(reply[3]) << 24;
  if (reply.size() < 4 || 4 + n > reply.size()) {
    std::fprintf(stderr, "twin oracle: a malformed reply to C (%zu bytes)\n", reply.size());
    std::abort();
  }
  const bytes whole(reply.begin() + 4, reply.begin() + 4 + static_cast<std::ptrdiff_t>(n));
  const bytes streamed(reply.begin() + 4 + static_cast<std::ptrdiff_t>(n), reply.end());
  if (whole != out) fail("native != twin (expected: twin, actual: native)", c.page.data(), c.page.size(), whole, out);
  if (streamed != out)
    fail("twin streamed != native whole (expected: native, actual: twin streamed)", c.page.data(), c.page.size(), out,
         streamed);
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  kb::fuzz::oracle_init(kOracleEvery);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const u8* data, std::size_t size) {
  const squash_case c = decode(data, size);
  const bytes& in = c.page;
  const bytes out = squash(in.data(), in.size(), c.opt);

  if (c.opt.level == 0 && out != in) fail("level 0 must copy the input", in.data(), in.size(), in, out);

  const bytes again = squash(out.data(), out.size(), c.opt);
  if (again != out) fail("not idempotent (expected: once, actual: twice)", in.data(), in.size(), out, again);

  const bytes hi_in = high_bytes(in), hi_out = high_bytes(out);
  if (!contains(in, "<!--")) {
    if (hi_in != hi_out) fail("bytes >= 0x80 changed", in.data(), in.size(), hi_in, hi_out);
  } else {
    std::size_t j = 0;  // hi_out must be a subsequence of hi_in
    for (std::size_t i = 0; i < hi_in.size() && j < hi_out.size(); ++i) j += hi_in[i] == hi_out[j];
    if (j != hi_out.size()) fail("bytes >= 0x80 changed or reordered", in.data(), in.size(), hi_in, hi_out);
  }

  if (c.opt.level != 0 && !in.empty() && std::memchr(in.data(), '<', in.size()) == nullptr) {
    const bytes model = text_model(in);
    if (model != out) fail("text without '<' differs from the one-line model", in.data(), in.size(), model, out);
  }

  std::size_t from = 0;
  for (const auto& [at, n] : c.kept) {
    const bytes region(in.begin() + static_cast<std::ptrdiff_t>(at), in.begin() + static_cast<std::ptrdiff_t>(at + n));
    std::size_t found = n == 0 ? from : std::string::npos;
    for (std::size_t i = from; n != 0 && i + n <= out.size(); ++i) {
      if (std::memcmp(out.data() + i, region.data(), n) == 0) {
        found = i;
        break;
      }
    }
    if (found == std::string::npos)
      fail("a protected region did not come out byte for byte", in.data(), in.size(), region, out);
    from = found + n;
  }

  const std::vector<std::size_t> sizes = piece_sizes(data, size, in.size());
  const bytes streamed = squash_streamed(in, c.opt, sizes);
  if (streamed != out)
    fail("streamed != whole (expected: whole, actual: streamed)", in.data(), in.size(), out, streamed);

  if (kb::fuzz::oracle_wants(data, size)) check_twin(c, out, sizes);
  return 0;
}
