// C++ tests of the HTML squasher core: hand-written rule cases, boundary
// lengths around the 16-byte scanner, malformed input, and seeded random
// inputs checked for the invariants (never longer, idempotent, text-only
// inputs equal to a one-line reference collapse); and the stream squasher
// (squash_stream.h) against the whole-body one over cuts at every byte.
// Runs under ASan/UBSan too.
#include "core/html_tables.h"
#include "core/squash.h"
#include "core/squash/tags_attributes.h"
#include "core/squash_stream.h"

#include <cstdint>
#include <cstring>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "test.h"

namespace {

std::string squash(const std::string& in, const kb::squash_options& opt = {}) {
  // Exactly len bytes, so ASan catches any write past the promised bound.
  std::vector<std::uint8_t> out(in.size());
  const std::size_t n = kb::squash_html(reinterpret_cast<const std::uint8_t*>(in.data()), in.size(), out.data(), opt);
  return std::string(reinterpret_cast<const char*>(out.data()), n);
}

kb::squash_options links(const char* host, const char* path = nullptr,
                         kb::request_scheme scheme = kb::request_scheme::http) {
  kb::squash_options opt;
  opt.rewrite_links = true;
  opt.scheme = scheme;
  opt.host = reinterpret_cast<const std::uint8_t*>(host);
  opt.host_len = std::strlen(host);
  if (path) {
    opt.path = reinterpret_cast<const std::uint8_t*>(path);
    opt.path_len = std::strlen(path);
  }
  return opt;
}

struct rule_case {
  const char* rule;
  const char* in;
  const char* expected;
};

// Each case names the rule it pins down. The TypeScript suite has the long
// table (test/native/squash/squash-rules.test.ts); these guard the core on its own.
const rule_case kRules[] = {
    {"text run without LF becomes one space", "a \t  b", "a b"},
    {"text run with LF becomes one LF", "a  \r\n\t b", "a\nb"},
    {"lone CR is a line break to the parser, becomes LF", "a\rb", "a\nb"},
    {"form feed is kept as it is (CSS draws it, it does not collapse)", "a\f\fb", "a\f\fb"},
    {"form feed ends no run: the runs on both sides collapse apart", "a  \f \t b", "a \f b"},
    {"form feed between block tags is content: kept, with its runs", "</div> \f <div>", "</div> \f <div>"},
    {"form feed in a tag is copied; the runs around it collapse", "<div \f  class=x\f>", "<div \f class=x\f>"},
    {"form feed still ends a tag name", "<div\fclass=x>\n<p>", "<div\fclass=x><p>"},
    {"a comment after white space with a form feed stays (Chromium may not draw that node)", "</div> \f <!-- c --> x",
     "</div> \f <!-- c --> x"},
    {"a comment before white space with a form feed stays", "<b>x</b> <!-- c --> \f <i>", "<b>x</b> <!-- c --> \f <i>"},
    {"a form feed inside other text does not keep a comment", "a\f<!-- c --> b", "a\f b"},
    {"a run holding only CR becomes LF", "a \r b", "a\nb"},
    {"CRLF runs between block tags go", "</p>\r\n\r\n<p>", "</p><p>"},
    {"CR in a tag is a line break", "<div\r   class=x>", "<div\nclass=x>"},
    {"white space just inside a block next to text stays", "<div>\n  text\n</div>", "<div>\ntext\n</div>"},
    {"white space just inside a block next to an inline tag stays", "<p>\n  <b>x</b>  </p>", "<p>\n<b>x</b> </p>"},
    {"vertical tab is not white space", "a\v\vb", "a\v\vb"},
    {"NBSP and non-ASCII bytes stay", "a \xC2\xA0 \xF0\x9F\x98\x80  b", "a \xC2\xA0 \xF0\x9F\x98\x80 b"},
    {"white space between two inline tags stays, collapsed", "<b>x</b>   <i>y</i>", "<b>x</b> <i>y</i>"},
    {"white space between text and a tag stays, collapsed", "<p>  x  </p>", "<p> x </p>"},
    {"white space before a block start tag goes", "<span>x</span>\n  <div>", "<span>x</span><div>"},
    {"white space after a block end tag goes", "</div>\n  <span>x</span>", "</div><span>x</span>"},
    {"white space just inside a block stays (::before/::after may touch it)", "<div>\n  <span>x</span>\n</div>",
     "<div>\n<span>x</span>\n</div>"},
    {"white space between a block start and a block start goes", "<ul>\n  <li>", "<ul><li>"},
    {"white space between a block end and a block end goes", "</li>\n</ul>", "</li></ul>"},
    {"white space inside an empty block stays", "<div>  </div>", "<div> </div>"},
    {"white space between two block tags goes", "</p>\n  <div>", "</p><div>"},
    {"between two list items one run stays (li may be inline-block: Home Docs Blog)", "</li>\n  <li>", "</li>\n<li>"},
    {"a navigation keeps a run between items only", "<ul>\n <li>Home</li>\n <li>Docs</li> <li>Blog</li>\n</ul>",
     "<ul><li>Home</li>\n<li>Docs</li> <li>Blog</li></ul>"},
    {"dt, dd, figure and form keep the run between siblings",
     "<dt>a</dt> <dd>b</dd> <figure></figure>\n<figure></figure> <form></form> <form>",
     "<dt>a</dt> <dd>b</dd> <figure></figure>\n<figure></figure> <form></form> <form>"},
    {"beside an inline-styled tag inline neighbours keep the run", "</li> <span>x</span> <li>y</li> <img>",
     "</li> <span>x</span> <li>y</li> <img>"},
    {"beside an inline-styled tag a line edge drops it", "\n<li>a</li>\n<div>\n<li>b</li>\n</div>\n<li>c</li>\n<br>\n",
     "<li>a</li><div><li>b</li></div><li>c</li><br>"},
    {"block structure still loses it", "</div> <div></div> <p></p> <section></section> <h2></h2> <td></td> <td>",
     "</div><div></div><p></p><section></section><h2></h2><td></td><td>"},
    {"a removed comment between two items leaves one run", "</li> <!-- c --> <li>", "</li> <li>"},
    {"br is block-like on both sides (void: no inside)", "<span>a</span> <br> <span>b</span>",
     "<span>a</span><br><span>b</span>"},
    {"hr is block-like on both sides", "<b>a</b>\n<hr>\n<b>b</b>", "<b>a</b><hr><b>b</b>"},
    {"block names are case-insensitive", "<SPAN>a</SPAN>\n<DIV>", "<SPAN>a</SPAN><DIV>"},
    {"end tags of block elements count too", "</DIV >\n<SPAN>", "</DIV ><SPAN>"},
    {"meta is transparent in body: its spaces stay", "<b>a</b> <meta itemprop=x> <b>b</b>",
     "<b>a</b> <meta itemprop=x> <b>b</b>"},
    {"inside head every inter-tag run goes", "<head>\n <meta a>\n <script></script>\n <link b>\n</head>",
     "<head><meta a><script></script><link b></head>"},
    {"a non-head tag ends the head state", "<head><meta a> <span>x</span> <b>y</b>",
     "<head><meta a><span>x</span> <b>y</b>"},
    {"script is transparent, not block-like", "a <script>x</script> b", "a <script>x</script> b"},
    {"a <head> after body content is ignored, as browsers do", "<b>a</b><head> <meta> <b>b</b>",
     "<b>a</b><head> <meta> <b>b</b>"},
    {"an open formatting element keeps every run (the parser re-creates it at white space)",
     "<p><em>x<p>y</p>\n<div>z</div>", "<p><em>x<p>y</p>\n<div>z</div>"},
    {"closing the formatting element re-enables removal", "<p><b>x</b></p>\n<div>", "<p><b>x</b></p><div>"},
    {"a link around blocks keeps the runs inside it", "<a href=x>\n<div>y</div>\n</a>\n<div>",
     "<a href=x>\n<div>y</div>\n</a><div>"},
    {"leading and trailing runs next to block tags go", "\n\n<html>\n<body>\n</body>\n</html>\n",
     "<html><body>\n</body></html>"},
    {"leading and trailing runs next to inline content stay", "\n <b>x</b> \n", "\n<b>x</b>\n"},
    {"all white space input becomes one byte", " \t \n ", "\n"},
    {"doctype at the start is block-like", "\n<!DOCTYPE html>\n<b>x</b>", "<!DOCTYPE html><b>x</b>"},
    {"doctype after content is neutral", "<b>x</b> <!doctype html> <b>y</b>", "<b>x</b> <!doctype html> <b>y</b>"},
    {"UTF-8 BOM is copied and counts as the start", "\xEF\xBB\xBF\n<!DOCTYPE html>\n", "\xEF\xBB\xBF<!DOCTYPE html>"},
    {"comments are removed", "a<!-- c -->\n", "a\n"},
    {"removed comment merges the runs around it", "a <!-- c -->  b", "a b"},
    {"removed comment merges runs between block tags", "</div> <!-- c --> <div>", "</div><div>"},
    {"runs merged across a comment keep an LF", "a  <!-- c -->\n b", "a\nb"},
    {"comment between two text bytes is kept (could glue markup)", "&am<!-- -->p;", "&am<!-- -->p;"},
    {"comment after '<' before letters is kept", "1 <<!---->div>", "1 <<!---->div>"},
    {"conditional comment is kept", "<!--[if IE]><p>  x  </p><![endif]-->", "<!--[if IE]><p>  x  </p><![endif]-->"},
    {"endif comment is kept", "<!--<![endif]-->", "<!--<![endif]-->"},
    {"bang comment is kept", "<!--! keep  me -->", "<!--! keep  me -->"},
    {"abrupt empty comments are comments", "a <!-->b <!--->c", "a b c"},
    {"comment ends at --!>", "x <!-- a --!> y", "x y"},
    {"unterminated comment is kept to the end", "x <!-- a  b", "x <!-- a  b"},
    {"pre content is verbatim", "<pre>  a\n\n  b  </pre>", "<pre>  a\n\n  b  </pre>"},
    {"pre end tag is case-insensitive", "<PRE> a  b </Pre >  <p>", "<PRE> a  b </Pre ><p>"},
    {"nested pre stays verbatim to the outer end", "<pre><pre>a</pre>  b  </pre>  c", "<pre><pre>a</pre>  b  </pre> c"},
    {"markup inside pre is verbatim", "<pre><b  class=x>  y </b><!-- c --></pre>",
     "<pre><b  class=x>  y </b><!-- c --></pre>"},
    {"textarea content is verbatim", "<textarea>  a\n  </textarea>", "<textarea>  a\n  </textarea>"},
    {"style content is verbatim", "<style>  a  {  }  </style>", "<style>  a  {  }  </style>"},
    {"script end tag is case-insensitive with a space", "<script> a  </SCRIPT >  <p>", "<script> a  </SCRIPT ><p>"},
    {"</scripts> does not end a script", "<script> a </scripts>  b</script>", "<script> a </scripts>  b</script>"},
    {"script escape: <script> inside <!-- hides </script>", "<script><!--  <script>  </script>  --></script>  <p>",
     "<script><!--  <script>  </script>  --></script><p>"},
    {"title is RCDATA: a tag inside is text", "<title> a  <div>  b </title>", "<title> a  <div>  b </title>"},
    {"unterminated script protects to the end", "<script>  a  <p>  b", "<script>  a  <p>  b"},
    {"plaintext protects to the end", "<plaintext>  <p>  </plaintext>  ", "<plaintext>  <p>  </plaintext>  "},
    {"white space inside a tag collapses", "<div\n   class=\"x\"   id=y  >", "<div\nclass=\"x\" id=y >"},
    {"quoted values are verbatim, > inside quotes too", "<a title=\"a  > b\"  x='c  d'>",
     "<a title=\"a  > b\" x='c  d'>"},
    {"a quote not after '=' is part of a name", "<a b\"c  d>  e", "<a b\"c d> e"},
    {"unterminated quote protects to the end", "<a title=\"a  <p>  b", "<a title=\"a  <p>  b"},
    {"'<' not followed by a letter is text", "a  <  b", "a < b"},
    {"'</>' is dropped by browsers, kept here as a neutral token", "<p> </> <p>", "<p> </><p>"},
    {"bogus comments are neutral and verbatim", "<b>a</b> <?php  x ?> <b>b</b>", "<b>a</b> <?php  x ?> <b>b</b>"},
    {"</ at the end is text", "<div> </", "<div> </"},
    {"tag cut by the end of input", "</p>  <a  href", "</p><a href"},
};

TEST(rule_cases) {
  for (const rule_case& c : kRules) {
    const std::string got = squash(c.in);
    if (got != c.expected) std::fprintf(stderr, "  rule: %s\n", c.rule);
    ASSERT_BYTES_EQ(got, c.expected);
  }
}

TEST(tag_table_classifies_every_listed_name_in_any_case_and_nothing_else) {
  for (const kb::html::tag_entry& e : kb::html::kTags) {
    std::string name = e.name;
    const auto cls = [](const std::string& s) {
      return kb::squash::classify_tag(reinterpret_cast<const std::uint8_t*>(s.data()), s.size());
    };
    ASSERT_EQ(cls(name), e.flags);
    std::string upper = name, mixed = name;
    for (std::size_t i = 0; i < name.size(); ++i) {
      if (name[i] >= 'a' && name[i] <= 'z') {
        upper[i] = static_cast<char>(name[i] - 32);
        if (i % 2 == 0) mixed[i] = static_cast<char>(name[i] - 32);
      }
    }
    ASSERT_EQ(cls(upper), e.flags);
    ASSERT_EQ(cls(mixed), e.flags);
    // Near misses: one byte more, one byte less, a control byte aliasing a digit or letter.
    ASSERT_EQ(cls(name + "x"), 0u);
    if (name.size() > 1) ASSERT_EQ(cls(name.substr(0, name.size() - 1)) == e.flags, false);
    std::string bent = name;
    bent.back() = static_cast<char>(bent.back() ^ 0x20 ^ 0x40);
    ASSERT_EQ(cls(bent) == e.flags, false);
  }
  for (const char* other :
       {"span", "h7", "div2", "search", "dialog", "select", "svg", "my-element", "scripts", "blockquotes"}) {
    ASSERT_EQ(kb::squash::classify_tag(reinterpret_cast<const std::uint8_t*>(other), std::strlen(other)), 0u);
  }
  const std::uint8_t h_control[] = {'h', 0x11};  // 0x11 | 0x20 == '1': must not pass for h1
  ASSERT_EQ(kb::squash::classify_tag(h_control, 2), 0u);
}

TEST(vector_and_scalar_tag_paths_agree) {
  // A tag near the end of input takes the scalar path, elsewhere the 16-byte
  // one; both must classify alike. Upper case and a control byte in the name.
  for (const char* tag : {"<DIV>", "<Li>", "<bLoCkQuOtE>", "<FIGCAPTION>", "<h\x11>", "<script>", "<SPAN>"}) {
    const std::string t = tag;
    const std::string near_end = "<b>x</b> " + t + " <i>";
    const std::string far = near_end + std::string(40, 'y');
    const std::string a = squash(near_end);
    const std::string b = squash(far);
    ASSERT_BYTES_EQ(b.substr(0, a.size()), a);
  }
}

TEST(link_rewriting) {
  const kb::squash_options opt = links("Example.com:8080", "/shop");
  struct {
    const char* in;
    const char* expected;
  } cases[] = {
      {"<a href=\"http://example.com:8080/a/b?c#d\">", "<a href=\"/a/b?c#d\">"},
      {"<A HREF=\"HTTP://EXAMPLE.COM:8080\">", "<A HREF=\"/\">"},
      // An https link on an http page keeps its scheme.
      {"<a href=\"https://example.com:8080/a\">", "<a href=\"https://example.com:8080/a\">"},
      {"<a href=\"//example.com:8080?x\">", "<a href=\"/?x\">"},
      {"<a href=\"http://example.com:8080/shop?page=2#top\">", "<a href=\"?page=2#top\">"},
      {"<a href=\"http://example.com:8080/shop#top\">", "<a href=\"/shop#top\">"},
      {"<a href=\"http://example.com:8080/shopping?x\">", "<a href=\"/shopping?x\">"},
      {"<img  src=\"http://example.com:8080/i.png\"  alt=x>", "<img src=\"/i.png\" alt=x>"},
      {"<a href=\"http://example.com/a\">", "<a href=\"http://example.com/a\">"},  // other port
      {"<a href=\"http://user@example.com:8080/\">", "<a href=\"http://user@example.com:8080/\">"},
      {"<a href='http://example.com:8080/a'>", "<a href='http://example.com:8080/a'>"},  // single quotes
      {"<a href=http://example.com:8080/a>", "<a href=http://example.com:8080/a>"},      // unquoted
      {"<img href=\"http://example.com:8080/a\">", "<img href=\"http://example.com:8080/a\">"},
      {"<a src=\"http://example.com:8080/a\">", "<a src=\"http://example.com:8080/a\">"},
      {"<link href=\"http://example.com:8080/a\">", "<link href=\"http://example.com:8080/a\">"},
      {"<a data-href=\"http://example.com:8080/a\">", "<a data-href=\"http://example.com:8080/a\">"},
      {"<a href = \"http://example.com:8080/a\">", "<a href = \"/a\">"},
      {"<pre><a href=\"http://example.com:8080/a\"></pre>", "<pre><a href=\"http://example.com:8080/a\"></pre>"},
      {"<base href=\"/x/\"><a href=\"http://example.com:8080/a\">",
       "<base href=\"/x/\"><a href=\"http://example.com:8080/a\">"},
  };
  for (const auto& c : cases) ASSERT_BYTES_EQ(squash(c.in, opt), c.expected);
  // Without rewriteLinks, or without a host, links stay.
  ASSERT_BYTES_EQ(squash("<a href=\"http://example.com:8080/a\">"), "<a href=\"http://example.com:8080/a\">");
  kb::squash_options no_host = links("");
  ASSERT_BYTES_EQ(squash("<a href=\"//x/a\">", no_host), "<a href=\"//x/a\">");
  // The scheme: a link is rewritten only when its scheme is the request's,
  // or absent; without a known scheme only "//" links are.
  const kb::request_scheme https = kb::request_scheme::https, unknown = kb::request_scheme::unknown;
  ASSERT_BYTES_EQ(squash("<a href=\"https://h/a\">", links("h", nullptr, https)), "<a href=\"/a\">");
  ASSERT_BYTES_EQ(squash("<a href=\"HTTPS://H/a\">", links("h", nullptr, https)), "<a href=\"/a\">");
  ASSERT_BYTES_EQ(squash("<a href=\"http://h/a\">", links("h", nullptr, https)), "<a href=\"http://h/a\">");
  ASSERT_BYTES_EQ(squash("<img src=\"//h/a\">", links("h", nullptr, https)), "<img src=\"/a\">");
  ASSERT_BYTES_EQ(squash("<a href=\"http://h/a\">", links("h", nullptr, unknown)), "<a href=\"http://h/a\">");
  ASSERT_BYTES_EQ(squash("<a href=\"https://h/a\">", links("h", nullptr, unknown)), "<a href=\"https://h/a\">");
  ASSERT_BYTES_EQ(squash("<a href=\"//h/a\">", links("h", nullptr, unknown)), "<a href=\"/a\">");
  // Path "/" matches an empty URL path.
  ASSERT_BYTES_EQ(squash("<a href=\"http://h?q\">", links("h", "/")), "<a href=\"?q\">");
}

TEST(level_zero_copies) {
  kb::squash_options opt;
  opt.level = 0;
  const std::string in = "  <div>  <!-- c -->  </div>  ";
  ASSERT_BYTES_EQ(squash(in, opt), in);
  opt.level = 2;
  ASSERT_BYTES_EQ(squash(in, opt), "<div> </div>");
}

// The reference for inputs without '<': collapse each white-space run.
std::string collapse_reference(const std::string& in) {
  std::string out;
  for (std::size_t i = 0; i < in.size();) {
    const unsigned char c = static_cast<unsigned char>(in[i]);
    const bool ws = c == ' ' || c == '\t' || c == '\n' || c == '\r';  // not form feed: it stays
    if (!ws) {
      out += in[i++];
      continue;
    }
    bool lf = false;
    // CR counts as LF: the parser turns it into one.
    for (; i < in.size() && std::strchr(" \t\n\r", in[i]) && in[i] != 0; ++i) lf |= in[i] == '\n' || in[i] == '\r';
    out += lf ? '\n' : ' ';
  }
  return out;
}

TEST(boundary_lengths_of_the_16_byte_scanner) {
  // Every white-space byte at every position of inputs of the lengths where
  // a 16-byte block begins, ends or straddles.
  const std::size_t lengths[] = {0, 1, 2, 15, 16, 17, 31, 32, 33, 47, 48, 49};
  const char ws_bytes[] = {' ', '\n', '\t', '\r', '\f'};
  for (std::size_t len : lengths) {
    for (std::size_t at = 0; at < len; ++at) {
      for (char w : ws_bytes) {
        for (std::size_t run = 1; run <= 3 && at + run <= len; ++run) {
          std::string in(len, 'x');
          for (std::size_t k = 0; k < run; ++k) in[at + k] = w;
          ASSERT_BYTES_EQ(squash(in), collapse_reference(in));
          // The same with an inline tag right after the run: the run keeps one byte.
          if (at + run < len) {
            std::string tagged = in;
            tagged[at + run] = '<';
            tagged.insert(at + run + 1, "b>");
            std::string expected =
                collapse_reference(in.substr(0, at + run)) + "<b>" + collapse_reference(in.substr(at + run + 1));
            ASSERT_BYTES_EQ(squash(tagged), expected);
          }
        }
      }
    }
  }
}

TEST(text_only_inputs_match_the_reference_collapse) {
  std::mt19937 rng(20240611);
  const char alphabet[] = {' ', ' ', '\n', '\t', '\r', '\f', 'a', 'b', '\xC2', '\xA0', '&', '>', '"', '\''};
  for (int round = 0; round < 20000; ++round) {
    const std::size_t len = rng() % 80;
    std::string in;
    for (std::size_t i = 0; i < len; ++i) in += alphabet[rng() % sizeof alphabet];
    ASSERT_BYTES_EQ(squash(in), collapse_reference(in));
  }
}

// Random HTML-ish soup: the invariants must hold for every input, garbage included.
std::string random_soup(std::mt19937& rng) {
  static const char* const pieces[] = {
      "<div>",
      "</div>",
      "<p>",
      "</p>",
      "<span>",
      "</span>",
      "<b>",
      "</b>",
      "<br>",
      "<pre>",
      "</pre>",
      "<PRE>",
      "<listing>",
      "</listing>",
      "<script>",
      "</script>",
      "</SCRIPT >",
      "<style>",
      "</style>",
      "<textarea>",
      "</textarea>",
      "<title>",
      "</title>",
      "<head>",
      "</head>",
      "<meta x>",
      "<body>",
      "<!--",
      "-->",
      "--!>",
      "<!-- c -->",
      "<!--[if IE]>",
      "<![endif]-->",
      "<!--!",
      "<!DOCTYPE html>",
      "<!",
      "<?",
      "</",
      "</>",
      "<",
      ">",
      "=",
      "\"",
      "'",
      "/",
      "-",
      "!",
      " ",
      "  ",
      "\n",
      "\r\n",
      "\t",
      "\f",
      "a",
      "bc",
      "&amp;",
      "\xC2\xA0",
      "\xF0\x9F\x98\x80",
      "<a href=\"http://h/x?y\">",
      "</a>",
      "<img src=\"//h/i\">",
      "<base href=/>",
      "<plaintext>",
      "<xmp>",
      "</xmp>",
      "<a b=c d='e f'>",
      "<script><!--",
      "<script>",
      "</script",
      "\xEF\xBB\xBF",
      "<svg><title/>",
      "<![CDATA[ x ]]>",
  };
  std::string s;
  const std::size_t n = rng() % 40;
  for (std::size_t i = 0; i < n; ++i) {
    if (rng() % 8 == 0) {
      s += static_cast<char>(rng() % 256);
    } else {
      s += pieces[rng() % (sizeof pieces / sizeof *pieces)];
    }
  }
  return s;
}

TEST(random_soup_is_never_longer_and_idempotent) {
  std::mt19937 rng(7);
  const kb::squash_options opt = links("h", "/x");
  for (int round = 0; round < 50000; ++round) {
    const std::string in = random_soup(rng);
    for (const kb::squash_options& o : {kb::squash_options{}, opt}) {
      const std::string once = squash(in, o);
      ASSERT_TRUE(once.size() <= in.size());
      const std::string twice = squash(once, o);
      if (twice != once) std::fprintf(stderr, "  input: %s\n", in.c_str());
      ASSERT_BYTES_EQ(twice, once);
    }
  }
}

TEST(every_prefix_of_a_page_is_safe) {
  // Cutting a page anywhere yields malformed input: unterminated tags,
  // quotes, comments and raw text. Each prefix must squash within bounds.
  const std::string page =
      "\xEF\xBB\xBF<!DOCTYPE html>\r\n<html>\r\n <head>\r\n  <title> T </title>\r\n  <script>if (a<b) "
      "x = '<!--<script>'</script>\r\n </head>\r\n <body class=\"a  b\">\r\n  <!-- c -->\r\n  <pre> p  </pre>\r\n"
      "  <p>x <a href=\"http://h/p?q\">l</a> y</p><textarea> t </textarea>\r\n </body>\r\n</html>\r\n";
  const kb::squash_options opt = links("h", "/p");
  for (std::size_t n = 0; n <= page.size(); ++n) {
    const std::string in = page.substr(0, n);
    const std::string once = squash(in, opt);
    ASSERT_TRUE(once.size() <= in.size());
    ASSERT_BYTES_EQ(squash(once, opt), once);
  }
}

TEST(look_ahead_bounds_of_comments_and_links) {
  // A comment is decided within kCommentLookahead bytes of its "<!--": one
  // whose end comes later is kept, as an unterminated one is.
  const std::size_t limit = kb::squash::kCommentLookahead;
  const std::string fits = "<p>a <!--" + std::string(limit - 7, 'x') + "--> b</p>";  // "<!--" … "-->": the limit
  ASSERT_BYTES_EQ(squash(fits), "<p>a b</p>");
  const std::string longer = "<p>a <!--" + std::string(limit - 6, 'x') + "--> b</p>";
  ASSERT_BYTES_EQ(squash(longer), longer);
  // A link value is shortened only when it is at most kLinkLookahead bytes long.
  const kb::squash_options opt = links("h");
  const std::string path = "/" + std::string(kb::squash::kLinkLookahead - 9, 'p');  // "http://h" + path: the limit
  ASSERT_BYTES_EQ(squash("<a href=\"http://h" + path + "\">", opt), "<a href=\"" + path + "\">");
  const std::string too_long = "<a href=\"http://h" + path + "p\">";
  ASSERT_BYTES_EQ(squash(too_long, opt), too_long);
  // A form feed past the run after a comment keeps it, whatever follows it.
  ASSERT_BYTES_EQ(squash("<b>x</b> <!-- c --> \f y"), "<b>x</b> <!-- c --> \f y");
  ASSERT_BYTES_EQ(squash("<b>x</b> <!-- c --> y \f"), "<b>x</b> y \f");
}

// The body fed to a squash_stream cut at `cuts` (positions in the input,
// ascending), through buffers of the exact sizes the stream promises to
// need, so ASan sees any byte written past them. Also checks the bound on
// what is held back.
std::string stream_squash(const std::string& in, const kb::squash_options& opt, const std::vector<std::size_t>& cuts) {
  const auto stream = std::make_unique<kb::squash_stream>(opt);
  std::string result;
  std::size_t at = 0;
  for (std::size_t i = 0; i <= cuts.size(); ++i) {
    const std::size_t end = i < cuts.size() ? std::min(std::max(cuts[i], at), in.size()) : in.size();
    const std::vector<std::uint8_t> chunk(in.begin() + static_cast<std::ptrdiff_t>(at),
                                          in.begin() + static_cast<std::ptrdiff_t>(end));
    std::vector<std::uint8_t> out(kb::squash_stream::feed_bound(chunk.size()));
    const std::size_t n = stream->feed(chunk.data(), chunk.size(), out.data(), out.size());
    if (n == kb::squash_stream::npos || stream->held() > kb::squash_stream::max_held) {
      KB_FAIL_AT("feed returned %zu, holding %zu bytes", n, stream->held());
      return {};
    }
    result.append(reinterpret_cast<const char*>(out.data()), n);
    at = end;
  }
  std::vector<std::uint8_t> out(kb::squash_stream::finish_bound());
  const std::size_t n = stream->finish(out.data(), out.size());
  if (n == kb::squash_stream::npos) {
    KB_FAIL_AT("finish refused a buffer of finish_bound() bytes");
    return {};
  }
  result.append(reinterpret_cast<const char*>(out.data()), n);
  return result;
}

const char* const kStreamPage =
    "\xEF\xBB\xBF<!DOCTYPE html>\r\n<html>\r\n <head>\r\n  <title> T </title>\r\n  <script>if (a<b) "
    "x = '<!--<script>'</script>\r\n </head>\r\n <body class=\"a  b\">\r\n  <!-- c -->\r\n  <pre> p  </pre>\r\n"
    "  <p>x <a href=\"http://h/p?q\">l</a> <A\n HREF = \"//h/\" >y</A></p><textarea> t </textarea>\r\n"
    "  <ul> <li>a</li> <li>b</li> </ul><?php x ?><!-- k --> \f <b>z</b><my-element-name "
    "x=1>\xC2\xA0</my-element-name>\r\n"
    "  <style>p{}</style><![CDATA[ x ]]></ p><!--[if IE]> <![endif]-->\r\n </body>\r\n</html>\r\n";

TEST(stream_equals_whole_cut_anywhere_once_or_twice) {
  const std::string page = kStreamPage;
  for (const kb::squash_options& opt : {kb::squash_options{}, links("h", "/p")}) {
    const std::string whole = squash(page, opt);
    ASSERT_BYTES_EQ(stream_squash(page, opt, {}), whole);
    for (std::size_t i = 0; i <= page.size(); ++i) {
      ASSERT_BYTES_EQ(stream_squash(page, opt, {i}), whole);
      for (std::size_t j = i; j <= page.size(); j += 7) ASSERT_BYTES_EQ(stream_squash(page, opt, {i, j}), whole);
    }
    std::vector<std::size_t> every;  // one byte at a time
    for (std::size_t i = 1; i < page.size(); ++i) every.push_back(i);
    ASSERT_BYTES_EQ(stream_squash(page, opt, every), whole);
  }
}

TEST(stream_equals_whole_on_random_soup_in_random_pieces) {
  std::mt19937 rng(11);
  const kb::squash_options opts[] = {kb::squash_options{}, links("h", "/x"),
                                     links("h", "/x", kb::request_scheme::https)};
  for (int round = 0; round < 20000; ++round) {
    std::string in = random_soup(rng);
    if (rng() % 100 == 0) {  // past the look-ahead of a comment, or of a link
      in += rng() % 2 ? "<!--" + std::string(kb::squash::kCommentLookahead - 8 + rng() % 16, '-') + "-->"
                      : "<a href=\"//h/" + std::string(kb::squash::kLinkLookahead - 8 + rng() % 16, 'y') + "\">";
      in += random_soup(rng);
    }
    const kb::squash_options& opt = opts[rng() % 3];
    std::vector<std::size_t> cuts;
    for (std::size_t at = 0; at < in.size();) {
      at += rng() % 4 == 0 ? 1 + rng() % 400 : rng() % 8;
      cuts.push_back(at);
    }
    const std::string whole = squash(in, opt), streamed = stream_squash(in, opt, cuts);
    if (streamed != whole) std::fprintf(stderr, "  input: %s\n", in.c_str());
    ASSERT_BYTES_EQ(streamed, whole);
  }
}

TEST(stream_holds_back_at_most_a_comment_and_refuses_small_buffers) {
  // A long unterminated comment: held up to the look-ahead, then written as it comes.
  const std::string page = "<p>a <!--" + std::string(3 * kb::squash::kCommentLookahead, 'x');
  std::vector<std::size_t> cuts;
  for (std::size_t at = 1000; at < page.size(); at += 1000) cuts.push_back(at);
  ASSERT_BYTES_EQ(stream_squash(page, {}, cuts), page);
  const auto stream = std::make_unique<kb::squash_stream>(kb::squash_options{});
  const std::uint8_t in[] = {'<', 'p', '>', 'a', ' '};
  std::vector<std::uint8_t> out(kb::squash_stream::feed_bound(sizeof in));
  ASSERT_TRUE(stream->feed(in, sizeof in, out.data(), out.size() - 1) == kb::squash_stream::npos);
  ASSERT_TRUE(stream->feed(in, sizeof in, out.data(), out.size()) == 4);  // the run after "a" is pending: state
  ASSERT_TRUE(stream->held() == 0);
  ASSERT_BYTES_EQ(std::string(reinterpret_cast<const char*>(out.data()), 4), "<p>a");
  ASSERT_TRUE(stream->finish(out.data(), kb::squash_stream::finish_bound()) == 1);
  ASSERT_TRUE(out[0] == ' ');
  ASSERT_TRUE(stream->finish(out.data(), kb::squash_stream::finish_bound()) == kb::squash_stream::npos);
  ASSERT_TRUE(stream->feed(in, sizeof in, out.data(), out.size()) == kb::squash_stream::npos);
}

TEST(stream_at_level_zero_copies) {
  kb::squash_options opt;
  opt.level = 0;
  const std::string in = "  <div>  <!-- c -->  </div>  ";
  ASSERT_BYTES_EQ(stream_squash(in, opt, {3, 9, 10}), in);
}

}  // namespace

KB_TEST_MAIN()
