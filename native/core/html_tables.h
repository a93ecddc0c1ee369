// Byte classes and tag-name classes for the HTML squasher (squash.cc). Kept
// apart so the TypeScript twin (src/native/twins/squash-html.ts) can be
// checked against one list: both must classify every name identically.
#pragma once

#include <cstddef>
#include <cstdint>

namespace kb::html {

// ---------------------------------------------------------------------------
// Bytes
// ---------------------------------------------------------------------------

enum : std::uint8_t {
  kWs = 1,         // ASCII white space of the HTML tokenizer: \t \n \f \r and space (not \v)
  kAlpha = 2,      // A-Z a-z: what may follow '<' or '</' to open a tag
  kNameEnd = 4,    // ends a tag name: white space, '/' or '>'
  kEndDelim = 8,   // may follow "</name" in an end tag: white space, '/' or '>'
};

struct byte_table {
  std::uint8_t v[256];
};

constexpr byte_table make_byte_table() {
  byte_table t{};
  const char ws[] = {'\t', '\n', '\f', '\r', ' '};
  for (char c : ws) t.v[static_cast<std::uint8_t>(c)] |= kWs | kNameEnd | kEndDelim;
  for (int c = 'a'; c <= 'z'; ++c) t.v[c] |= kAlpha;
  for (int c = 'A'; c <= 'Z'; ++c) t.v[c] |= kAlpha;
  t.v[static_cast<std::uint8_t>('/')] |= kNameEnd | kEndDelim;
  t.v[static_cast<std::uint8_t>('>')] |= kNameEnd | kEndDelim;
  return t;
}

inline constexpr byte_table kBytes = make_byte_table();

inline bool is_ws(std::uint8_t b) noexcept { return kBytes.v[b] & kWs; }
inline bool is_alpha(std::uint8_t b) noexcept { return kBytes.v[b] & kAlpha; }
inline bool is_name_end(std::uint8_t b) noexcept { return kBytes.v[b] & kNameEnd; }
inline bool is_end_delim(std::uint8_t b) noexcept { return kBytes.v[b] & kEndDelim; }
inline std::uint8_t lower(std::uint8_t b) noexcept {
  return (b >= 'A' && b <= 'Z') ? static_cast<std::uint8_t>(b | 0x20) : b;
}

// ASCII case-insensitive comparison of `n` input bytes with a lowercase literal.
inline bool ieq(const std::uint8_t* a, const char* lower_literal, std::size_t n) noexcept {
  for (std::size_t i = 0; i < n; ++i) {
    if (lower(a[i]) != static_cast<std::uint8_t>(lower_literal[i])) return false;
  }
  return true;
}

// ---------------------------------------------------------------------------
// Tag names
// ---------------------------------------------------------------------------

enum : std::uint32_t {
  // Generates a block-level box (or a forced break) under the default UA
  // style sheet, so white space next to its tag is at a line edge and never
  // renders. display:none elements (meta, link, script, …) are NOT here:
  // they are transparent, and white space around them renders as if they
  // were absent ("Foo <meta itemprop=x> bar" keeps its space).
  kBlock = 1 << 0,
  kHead = 1 << 1,       // <head>: white space up to the end of the head never renders
  kHeadOk = 1 << 2,     // may sit in <head> without implicitly closing it
  kRaw = 1 << 3,        // raw text / RCDATA: content copied verbatim up to "</name"
  kScript = 1 << 4,     // <script>: raw text with the <!-- … <script> escape states
  kPlaintext = 1 << 5,  // <plaintext>: raw text to the end of the input
  kPreLike = 1 << 6,    // pre, listing: content (markup included) copied verbatim
  kBase = 1 << 7,       // <base href>: relative links would resolve elsewhere, stop rewriting
  kAnchor = 1 << 8,     // <a>: href may be rewritten
  kImg = 1 << 9,        // <img>: src may be rewritten
  kVoid = 1 << 10,      // a block-level void element (br, hr, col, frame): no inside
  // A formatting element (HTML "list of active formatting elements"). When
  // one is left open across a block boundary, the parser re-creates it at
  // the next character token, white space included, so removing white space
  // would move it; runs are kept while any is open.
  kFormatting = 1 << 11,
  kHtml = 1 << 12,  // <html>: may precede <head> without closing the chance of one
};

// Raw-text elements carry an index into kRawNames in bits 16..19 (1-based).
constexpr int kRawShift = 16;

inline constexpr const char* kRawNames[] = {
    nullptr, "script", "style", "textarea", "title", "xmp", "iframe", "noembed", "noframes", "noscript", "plaintext",
};

inline const char* raw_name(std::uint32_t flags) noexcept { return kRawNames[flags >> kRawShift]; }

constexpr std::uint64_t pack(const char* s) {
  std::uint64_t v = 0;
  for (int i = 0; s[i] != 0; ++i) v |= static_cast<std::uint64_t>(static_cast<std::uint8_t>(s[i])) << (8 * i);
  return v;
}

constexpr std::uint32_t raw(int index) { return kRaw | (static_cast<std::uint32_t>(index) << kRawShift); }

// The class of a tag name (any case). Unknown names, custom elements, SVG
// and MathML names are 0: inline and transparent to nothing.
inline std::uint32_t classify_tag(const std::uint8_t* name, std::size_t n) noexcept {
  if (n == 0 || n > 10) return 0;
  if (n <= 8) {
    std::uint64_t key = 0;
    for (std::size_t i = 0; i < n; ++i) key |= static_cast<std::uint64_t>(lower(name[i])) << (8 * i);
    switch (key) {
      case pack("a"): return kAnchor | kFormatting;
      case pack("img"): return kImg;
      case pack("b"):
      case pack("i"):
      case pack("s"):
      case pack("u"):
      case pack("em"):
      case pack("tt"):
      case pack("big"):
      case pack("code"):
      case pack("font"):
      case pack("nobr"):
      case pack("small"):
      case pack("strike"):
      case pack("strong"): return kFormatting;
      case pack("br"):
      case pack("hr"):
      case pack("col"):
      case pack("frame"): return kBlock | kVoid;
      case pack("p"):
      case pack("dd"):
      case pack("dl"):
      case pack("dt"):
      case pack("h1"):
      case pack("h2"):
      case pack("h3"):
      case pack("h4"):
      case pack("h5"):
      case pack("h6"):
      case pack("li"):
      case pack("ol"):
      case pack("td"):
      case pack("th"):
      case pack("tr"):
      case pack("ul"):
      case pack("dir"):
      case pack("div"):
      case pack("nav"):
      case pack("body"):
      case pack("form"):
      case pack("main"):
      case pack("menu"):
      case pack("aside"):
      case pack("table"):
      case pack("tbody"):
      case pack("tfoot"):
      case pack("thead"):
      case pack("center"):
      case pack("figure"):
      case pack("footer"):
      case pack("header"):
      case pack("hgroup"):
      case pack("legend"):
      case pack("option"):
      case pack("address"):
      case pack("article"):
      case pack("caption"):
      case pack("details"):
      case pack("section"):
      case pack("summary"):
      case pack("colgroup"):
      case pack("fieldset"):
      case pack("frameset"):
      case pack("optgroup"): return kBlock;
      case pack("pre"):
      case pack("listing"): return kBlock | kPreLike;
      case pack("xmp"): return kBlock | raw(5);
      case pack("html"): return kBlock | kHtml;
      case pack("head"): return kBlock | kHead | kHeadOk;
      case pack("base"): return kHeadOk | kBase;
      case pack("link"):
      case pack("meta"):
      case pack("bgsound"):
      case pack("basefont"):
      case pack("template"): return kHeadOk;
      case pack("script"): return kHeadOk | kScript | raw(1);
      case pack("style"): return kHeadOk | raw(2);
      case pack("title"): return kHeadOk | raw(4);
      case pack("noscript"): return kHeadOk | raw(9);
      case pack("textarea"): return raw(3);
      case pack("iframe"): return raw(6);
      case pack("noembed"): return raw(7);
      case pack("noframes"): return raw(8);
      default: return 0;
    }
  }
  if (n == 9 && ieq(name, "plaintext", 9)) return kBlock | kPlaintext | raw(10);
  if (n == 10 && (ieq(name, "blockquote", 10) || ieq(name, "figcaption", 10))) return kBlock;
  return 0;
}

}  // namespace kb::html
