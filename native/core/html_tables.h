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

constexpr std::uint32_t raw(int index) { return kRaw | (static_cast<std::uint32_t>(index) << kRawShift); }

struct tag_entry {
  const char* name;  // lowercase, at most 10 bytes
  std::uint32_t flags;
};

// Every tag name with a class; any other name is 0 (inline, transparent to
// nothing): unknown names, custom elements, SVG and MathML names.
inline constexpr tag_entry kTags[] = {
    {"a", kAnchor | kFormatting}, {"img", kImg},
    // Formatting elements (HTML "list of active formatting elements").
    {"b", kFormatting}, {"i", kFormatting}, {"s", kFormatting}, {"u", kFormatting}, {"em", kFormatting},
    {"tt", kFormatting}, {"big", kFormatting}, {"code", kFormatting}, {"font", kFormatting},
    {"nobr", kFormatting}, {"small", kFormatting}, {"strike", kFormatting}, {"strong", kFormatting},
    // Block-level under the default UA style sheet.
    {"br", kBlock | kVoid}, {"hr", kBlock | kVoid}, {"col", kBlock | kVoid}, {"frame", kBlock | kVoid},
    {"p", kBlock}, {"dd", kBlock}, {"dl", kBlock}, {"dt", kBlock}, {"h1", kBlock}, {"h2", kBlock},
    {"h3", kBlock}, {"h4", kBlock}, {"h5", kBlock}, {"h6", kBlock}, {"li", kBlock}, {"ol", kBlock},
    {"td", kBlock}, {"th", kBlock}, {"tr", kBlock}, {"ul", kBlock}, {"dir", kBlock}, {"div", kBlock},
    {"nav", kBlock}, {"body", kBlock}, {"form", kBlock}, {"main", kBlock}, {"menu", kBlock},
    {"aside", kBlock}, {"table", kBlock}, {"tbody", kBlock}, {"tfoot", kBlock}, {"thead", kBlock},
    {"center", kBlock}, {"figure", kBlock}, {"footer", kBlock}, {"header", kBlock}, {"hgroup", kBlock},
    {"legend", kBlock}, {"option", kBlock}, {"address", kBlock}, {"article", kBlock}, {"caption", kBlock},
    {"details", kBlock}, {"section", kBlock}, {"summary", kBlock}, {"colgroup", kBlock},
    {"fieldset", kBlock}, {"frameset", kBlock}, {"optgroup", kBlock}, {"blockquote", kBlock},
    {"figcaption", kBlock}, {"html", kBlock | kHtml},
    {"pre", kBlock | kPreLike}, {"listing", kBlock | kPreLike}, {"xmp", kBlock | raw(5)},
    {"plaintext", kBlock | kPlaintext | raw(10)},
    // The head and what may sit in it.
    {"head", kBlock | kHead | kHeadOk}, {"base", kHeadOk | kBase}, {"link", kHeadOk}, {"meta", kHeadOk},
    {"bgsound", kHeadOk}, {"basefont", kHeadOk}, {"template", kHeadOk},
    {"script", kHeadOk | kScript | raw(1)}, {"style", kHeadOk | raw(2)}, {"title", kHeadOk | raw(4)},
    {"noscript", kHeadOk | raw(9)},
    // Other raw text and RCDATA elements.
    {"textarea", raw(3)}, {"iframe", raw(6)}, {"noembed", raw(7)}, {"noframes", raw(8)},
};

// A name as two little-endian words of lowercase bytes: 0..7 and 8..9.
struct name_key {
  std::uint64_t lo = 0;
  std::uint16_t hi = 0;
};

constexpr name_key key_of(const char* s, std::size_t n) {
  name_key k;
  for (std::size_t i = 0; i < n && i < 8; ++i) k.lo |= static_cast<std::uint64_t>(static_cast<std::uint8_t>(s[i])) << (8 * i);
  for (std::size_t i = 8; i < n; ++i) k.hi = static_cast<std::uint16_t>(k.hi | (static_cast<std::uint8_t>(s[i]) << (8 * (i - 8))));
  return k;
}

// A perfect hash, found at compile time: every listed name has a slot of its
// own, so a lookup is one hash, one load and one compare, with no probing
// and no branch that depends on the name.
constexpr unsigned kTagBits = 10;
constexpr unsigned kTagSlots = 1u << kTagBits;

constexpr unsigned slot_of(std::uint64_t lo, std::uint64_t hi_len, std::uint64_t mul) {
  return static_cast<unsigned>(((lo ^ (hi_len * 0xC2B2AE3D27D4EB4Full)) * mul) >> (64 - kTagBits));
}

struct tag_slot {
  std::uint64_t lo;      // name bytes 0..7, lowercase
  std::uint64_t hi_len;  // name bytes 8..9, and the length in bits 16..23; 0: empty
  std::uint32_t flags;
};

struct tag_table {
  std::uint64_t mul;
  tag_slot s[kTagSlots];
};

constexpr std::size_t name_length(const char* s) {
  std::size_t n = 0;
  while (s[n] != 0) ++n;
  return n;
}

constexpr tag_table make_tag_table() {
  tag_table t{};
  for (std::uint64_t mul = 0x9E3779B97F4A7C15ull;; mul += 0x2545F4914F6CDD1Dull) {
    t = tag_table{};
    t.mul = mul;
    bool clash = false;
    for (const tag_entry& e : kTags) {
      const std::size_t n = name_length(e.name);
      const name_key k = key_of(e.name, n);
      const std::uint64_t hi_len = k.hi | (static_cast<std::uint64_t>(n) << 16);
      tag_slot& slot = t.s[slot_of(k.lo, hi_len, mul)];
      if (slot.hi_len != 0) {
        clash = true;
        break;
      }
      slot = tag_slot{k.lo, hi_len, e.flags};
    }
    if (!clash) return t;
  }
}

inline constexpr tag_table kTagTable = make_tag_table();

// The class of a lowercase name given as its key and length (1..10).
inline std::uint32_t lookup_tag(std::uint64_t lo, std::uint16_t hi, std::size_t n) noexcept {
  const std::uint64_t hi_len = hi | (static_cast<std::uint64_t>(n) << 16);
  const tag_slot& t = kTagTable.s[slot_of(lo, hi_len, kTagTable.mul)];
  const std::uint32_t match = static_cast<std::uint32_t>((t.lo == lo) & (t.hi_len == hi_len));
  return t.flags & (0u - match);  // no branch: which names come is unpredictable
}

// The class of a tag name (any case).
inline std::uint32_t classify_tag(const std::uint8_t* name, std::size_t n) noexcept {
  if (n == 0 || n > 10) return 0;
  std::uint64_t lo = 0;
  std::uint16_t hi = 0;
  for (std::size_t i = 0; i < n && i < 8; ++i) lo |= static_cast<std::uint64_t>(lower(name[i])) << (8 * i);
  for (std::size_t i = 8; i < n; ++i) hi = static_cast<std::uint16_t>(hi | (lower(name[i]) << (8 * (i - 8))));
  return lookup_tag(lo, hi, n);
}

}  // namespace kb::html
