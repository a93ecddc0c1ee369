/**
 * The squasher's rules (docs/decisions/0005-squasher-white-space-rules.md,
 * docs/decisions/0021-html-squasher-stages-and-tables.md), one small input →
 * expected case each, written by hand, run on the native addon and on the twin. The case's
 * `rule` says what it pins down; the corpus tests cover whole pages.
 */
import test from 'ava';
import { impls } from '../../helpers/impls.ts';
import type { CoreImplementation, SquashOptions } from '../../../src/native/types.ts';

interface RuleCase {
  rule: string;
  input: string;
  expected: string;
  options?: SquashOptions;
}

const link = (path?: string, scheme: SquashOptions['scheme'] = 'http'): SquashOptions => ({
  rewriteLinks: true,
  host: 'Example.com:8080',
  scheme,
  ...(path ? { path } : {}),
});

const cases: RuleCase[] = [
  // --- White space in text: one byte per run, LF when the run held one ---
  { rule: 'a run of spaces and tabs becomes one space', input: 'a \t  b', expected: 'a b' },
  { rule: 'a run holding a line feed becomes one line feed', input: 'a  \r\n\t b', expected: 'a\nb' },
  {
    rule: 'a lone CR is a line break to the parser and becomes a line feed (next to U+200B a break vanishes, a space does not)',
    input: 'a\rb',
    expected: 'a\nb',
  },
  { rule: 'form feed is kept as it is (CSS draws it, it does not collapse)', input: 'a\f\fb', expected: 'a\f\fb' },
  {
    rule: 'form feed ends no run: the runs on both sides collapse apart',
    input: 'a  \f \t b',
    expected: 'a \f b',
  },
  {
    rule: 'form feed between block tags is content: kept, with the runs around it',
    input: '</div> \f <div>',
    expected: '</div> \f <div>',
  },
  {
    rule: 'form feed in a tag is copied; the runs around it collapse',
    input: '<div \f  class=x\f>',
    expected: '<div \f class=x\f>',
  },
  { rule: 'form feed still ends a tag name', input: '<div\fclass=x>\n<p>', expected: '<div\fclass=x><p>' },
  {
    rule: 'a comment after white space with a form feed stays (Chromium may not draw that node)',
    input: '</div> \f <!-- c --> x',
    expected: '</div> \f <!-- c --> x',
  },
  {
    rule: 'a comment before white space with a form feed stays',
    input: '<b>x</b> <!-- c --> \f <i>',
    expected: '<b>x</b> <!-- c --> \f <i>',
  },
  { rule: 'a form feed inside other text does not keep a comment', input: 'a\f<!-- c --> b', expected: 'a\f b' },
  {
    rule: 'a form feed first past the run after a comment keeps it, whatever follows (a stream looks no further)',
    input: '<b>x</b> <!-- c --> \f y',
    expected: '<b>x</b> <!-- c --> \f y',
  },
  {
    rule: 'a comment whose end lies past 32 KiB is kept, as an unterminated one is',
    input: `<p>a <!--${'x'.repeat(32 * 1024 - 6)}--> b</p>`,
    expected: `<p>a <!--${'x'.repeat(32 * 1024 - 6)}--> b</p>`,
  },
  {
    rule: 'a comment of 32 KiB goes',
    input: `<p>a <!--${'x'.repeat(32 * 1024 - 7)}--> b</p>`,
    expected: '<p>a b</p>',
  },
  {
    rule: 'a link value longer than 4 KiB is not shortened (its end decides it)',
    input: `<a href="http://example.com:8080/${'p'.repeat(4096 - 23)}">`,
    expected: `<a href="http://example.com:8080/${'p'.repeat(4096 - 23)}">`,
    options: link(),
  },
  {
    rule: 'a link value of 4 KiB is shortened',
    input: `<a href="http://example.com:8080/${'p'.repeat(4096 - 24)}">`,
    expected: `<a href="/${'p'.repeat(4096 - 24)}">`,
    options: link(),
  },
  { rule: 'a run holding only a CR becomes a line feed', input: 'a \r b', expected: 'a\nb' },
  { rule: 'CR in a tag is a line break', input: '<div\r   class=x>', expected: '<div\nclass=x>' },
  { rule: 'a lone tab becomes a space', input: 'a\tb', expected: 'a b' },
  { rule: 'a lone space or line feed is left as it is', input: 'a b\nc', expected: 'a b\nc' },
  { rule: 'vertical tab is not HTML white space', input: 'a\v\vb', expected: 'a\v\vb' },
  {
    rule: 'NBSP is not ASCII white space: it and its neighbours stay',
    input: 'a \u00a0 b\u00a0\u00a0c',
    expected: 'a \u00a0 b\u00a0\u00a0c',
  },
  { rule: 'other Unicode spaces stay', input: 'a\u2003\u3000\u202f\u200bb', expected: 'a\u2003\u3000\u202f\u200bb' },
  { rule: 'emoji and non-ASCII text pass through', input: 'ＡＢ  👩‍👩‍👧  é', expected: 'ＡＢ 👩‍👩‍👧 é' },
  { rule: 'an input of only white space becomes one byte', input: ' \t \n ', expected: '\n' },
  { rule: 'the empty input stays empty', input: '', expected: '' },

  // --- Between tags: removed where one side is outside a block box ---
  {
    rule: 'white space between two inline tags stays, collapsed',
    input: '<b>x</b>   <i>y</i>',
    expected: '<b>x</b> <i>y</i>',
  },
  { rule: 'white space between text and a tag stays, collapsed', input: '<p>  x  </p>', expected: '<p> x </p>' },
  {
    rule: 'white space before a block start tag goes',
    input: '<span>x</span>\n  <div>',
    expected: '<span>x</span><div>',
  },
  {
    rule: 'white space after a block end tag goes',
    input: '</div>\n  <span>x</span>',
    expected: '</div><span>x</span>',
  },
  {
    rule: 'white space just inside a block stays (it may touch ::before/::after content)',
    input: '<div>\n  <span>x</span>\n</div>',
    expected: '<div>\n<span>x</span>\n</div>',
  },
  {
    rule: 'white space in an empty block stays (:empty must not start matching)',
    input: '<div>  </div>',
    expected: '<div> </div>',
  },
  {
    rule: 'at the start and end of a list it goes; between its items one stays (they may be inline-block)',
    input: '<ul>\n  <li>a</li>\n  <li>b</li>\n</ul>',
    expected: '<ul><li>a</li>\n<li>b</li></ul>',
  },
  // --- Inline-styled elements: li, dt, dd, figure, form (html-elements.json, inlineStyled) ---
  {
    rule: 'a navigation of list items keeps one space between items: li { display: inline-block } reads "Home Docs Blog"',
    input:
      '<nav>\n  <ul>\n    <li><a href="/">Home</a></li>\n    <li><a href="/docs">Docs</a></li>  <li>Blog</li>\n  </ul>\n</nav>',
    expected: '<nav><ul><li><a href="/">Home</a></li>\n<li><a href="/docs">Docs</a></li> <li>Blog</li></ul></nav>',
  },
  {
    rule: 'a removed comment between two items merges into the one run that stays',
    input: '</li>\n  <!-- active -->\n  <li>',
    expected: '</li>\n<li>',
  },
  {
    rule: 'dt and dd, figures and forms keep the run between siblings too',
    input: '<dl>\n<dt>a</dt>\n<dd>b</dd>\n</dl>\n<figure>x</figure>  <figure>y</figure>\n<form></form> <form></form>',
    expected: '<dl><dt>a</dt>\n<dd>b</dd></dl><figure>x</figure> <figure>y</figure>\n<form></form> <form></form>',
  },
  {
    rule: 'beside an inline-styled tag, inline neighbours keep the run',
    input: '</li> <span>x</span> <li>y</li> <script></script>\n<li>z</li> <img>',
    expected: '</li> <span>x</span> <li>y</li> <script></script>\n<li>z</li> <img>',
  },
  {
    rule: 'beside an inline-styled tag a line edge still drops it: after a block start tag, before a block end tag, a block edge, the ends of the input',
    input: '\n<li>a</li>\n<div>\n<li>b</li>\n</div>\n<li>c</li>\n<br>\n<form>\n<li>\n<li>d</li>\n</form>\n',
    expected: '<li>a</li><div><li>b</li></div><li>c</li><br><form><li><li>d</li></form>',
  },
  {
    rule: 'document and block structure still lose it: div, p, sections, headings, table parts',
    input: '</div> <div></div> <p></p>\n<section></section> <h2></h2> <nav></nav>\n<td></td> <td></td>',
    expected: '</div><div></div><p></p><section></section><h2></h2><nav></nav><td></td><td></td>',
  },
  {
    rule: 'inline-styled names are matched without regard to case',
    input: '<UL>\n<LI>a</Li>\n<li>b</LI >\n</UL>',
    expected: '<UL><LI>a</Li>\n<li>b</LI ></UL>',
  },
  {
    rule: 'table structure loses its indentation',
    input: '<table>\n <tr>\n  <td>1</td>\n  <td>2</td>\n </tr>\n</table>',
    expected: '<table><tr><td>1</td><td>2</td></tr></table>',
  },
  {
    rule: 'br is block-like on both sides (a void element has no inside)',
    input: '<span>a</span> <br> <span>b</span>',
    expected: '<span>a</span><br><span>b</span>',
  },
  { rule: 'hr is block-like on both sides', input: '<b>a</b>\n<hr>\n<b>b</b>', expected: '<b>a</b><hr><b>b</b>' },
  {
    rule: 'tag names are matched without regard to case',
    input: '<SPAN>a</SPAN>\n<DIV>\n</Div >\n<I>',
    expected: '<SPAN>a</SPAN><DIV>\n</Div ><I>',
  },
  {
    rule: 'headings, sections and friends are block-level',
    input: '<h2>t</h2>\n<section>\n<p>x</p>\n</section>\n<footer>',
    expected: '<h2>t</h2><section><p>x</p></section><footer>',
  },
  {
    rule: 'options and optgroups are block-level, select is not',
    input: '<b>a</b> <select>\n <option>1</option>\n</select> <b>b</b>',
    expected: '<b>a</b> <select><option>1</option></select> <b>b</b>',
  },
  {
    rule: 'a custom element is inline',
    input: '<my-card>\n<b>x</b>\n</my-card>\n<my-card>',
    expected: '<my-card>\n<b>x</b>\n</my-card>\n<my-card>',
  },
  {
    rule: 'white space at the very start and end stays next to inline content',
    input: '\n <b>x</b> \n',
    expected: '\n<b>x</b>\n',
  },
  {
    rule: 'white space at the very start and end goes next to block tags',
    input: '\n\n<p>x</p>\n',
    expected: '<p>x</p>',
  },
  {
    rule: 'html/head/body tags are block-level',
    input: '<html>\n<head>\n</head>\n<body>\n<b>x</b>\n</body>\n</html>\n',
    expected: '<html><head></head><body>\n<b>x</b>\n</body></html>',
  },

  // --- display:none elements are transparent, not block-level ---
  {
    rule: 'meta in body is transparent: its spaces stay',
    input: '<b>a</b> <meta itemprop=x> <b>b</b>',
    expected: '<b>a</b> <meta itemprop=x> <b>b</b>',
  },
  {
    rule: 'script is transparent: the spaces around it stay',
    input: 'a <script>x</script> b',
    expected: 'a <script>x</script> b',
  },
  {
    rule: 'between two scripts in body one byte stays',
    input: '<script></script>\n\n<script></script>',
    expected: '<script></script>\n<script></script>',
  },
  {
    rule: 'inside <head> every run between tags goes',
    input: '<head>\n <meta a>\n <title>t</title>\n <script></script>\n <link b>\n</head>',
    expected: '<head><meta a><title>t</title><script></script><link b></head>',
  },
  {
    rule: 'a tag that cannot be in head ends the head state',
    input: '<head><meta a> <span>x</span> <b>y</b>',
    expected: '<head><meta a><span>x</span> <b>y</b>',
  },
  {
    rule: 'text ends the head state',
    input: '<head><meta a> x <meta b> <b>y</b>',
    expected: '<head><meta a> x <meta b> <b>y</b>',
  },
  {
    rule: 'a <head> tag after body content is ignored, as browsers do',
    input: '<b>a</b><head> <meta> <b>b</b>',
    expected: '<b>a</b><head> <meta> <b>b</b>',
  },
  {
    rule: 'a <head> tag after text is ignored too',
    input: 'x<head> <meta> <b>b</b>',
    expected: 'x<head> <meta> <b>b</b>',
  },

  // --- Mis-nested formatting elements: runs kept while one is open ---
  {
    rule: 'an open formatting element keeps every run (the parser re-creates it at white space)',
    input: '<p><em>x<p>y</p>\n<div>z</div>',
    expected: '<p><em>x<p>y</p>\n<div>z</div>',
  },
  {
    rule: 'closing the formatting element makes runs removable again',
    input: '<p><b>x</b></p>\n<div>',
    expected: '<p><b>x</b></p><div>',
  },
  {
    rule: 'a link wrapping blocks keeps the runs inside it',
    input: '<a href=x>\n<div>y</div>\n</a>\n<div>',
    expected: '<a href=x>\n<div>y</div>\n</a><div>',
  },

  // --- Doctype and byte order mark ---
  {
    rule: 'a doctype at the start is block-like',
    input: '\n<!DOCTYPE html>\n<b>x</b>',
    expected: '<!DOCTYPE html><b>x</b>',
  },
  {
    rule: 'a doctype after content is neutral',
    input: '<b>x</b> <!doctype html> <b>y</b>',
    expected: '<b>x</b> <!doctype html> <b>y</b>',
  },
  {
    rule: 'a UTF-8 BOM is copied and still counts as the start',
    input: '\ufeff\n<!DOCTYPE html>\n',
    expected: '\ufeff<!DOCTYPE html>',
  },
  {
    rule: 'an XML declaration before the doctype is kept',
    input: '<?xml version="1.0"?>\n<!DOCTYPE html>\n<html>',
    expected: '<?xml version="1.0"?><!DOCTYPE html><html>',
  },

  // --- Comments ---
  { rule: 'a comment is removed', input: 'a<!-- c -->\n', expected: 'a\n' },
  { rule: 'a removed comment merges the runs on its two sides', input: 'a <!-- c -->  b', expected: 'a b' },
  {
    rule: 'runs merged across a comment keep a line feed from either side',
    input: 'a  <!-- c -->\n b',
    expected: 'a\nb',
  },
  { rule: 'several comments in a run merge into one run', input: 'a <!--1--> <!--2-->\n<!--3--> b', expected: 'a\nb' },
  {
    rule: 'a removed comment between block tags leaves nothing',
    input: '</div> <!-- c --> <div>',
    expected: '</div><div>',
  },
  {
    rule: 'a comment touching text on both sides is kept (removal could glue "&am"+"p;")',
    input: '&am<!-- -->p;',
    expected: '&am<!-- -->p;',
  },
  {
    rule: 'a comment after "<" before letters is kept (removal would make a tag)',
    input: '1 <<!---->div>',
    expected: '1 <<!---->div>',
  },
  { rule: 'a comment touching text on one side only goes', input: 'a<!-- c --> b<!-- d --><i>', expected: 'a b<i>' },
  {
    rule: 'conditional comments are kept verbatim',
    input: '<!--[if IE]><p>  x  </p><![endif]-->',
    expected: '<!--[if IE]><p>  x  </p><![endif]-->',
  },
  { rule: 'an endif comment is kept', input: '<p> <!--<![endif]--> </p>', expected: '<p> <!--<![endif]--> </p>' },
  { rule: 'a <!--! comment is kept verbatim', input: '<!--! keep  me -->', expected: '<!--! keep  me -->' },
  { rule: 'abrupt comments <!--> and <!---> are comments', input: 'a <!-->b <!--->c', expected: 'a b c' },
  { rule: 'a comment ends at --!>', input: 'x <!-- a --!> y', expected: 'x y' },
  {
    rule: 'a comment ends at the first -->, not at a nested one',
    input: 'x <!-- a <!-- b --> c --> y',
    expected: 'x c --> y',
  },
  { rule: 'an unterminated comment is kept to the end', input: 'x <!-- a  b', expected: 'x <!-- a  b' },
  {
    rule: 'bogus comments are kept verbatim and neutral',
    input: '<b>a</b> <! x  y > <?php  z ?> <b>b</b>',
    expected: '<b>a</b> <! x  y > <?php  z ?> <b>b</b>',
  },
  {
    rule: 'CDATA outside SVG/MathML is a bogus comment up to ">"',
    input: '<![CDATA[ a  > b  ]]>',
    expected: '<![CDATA[ a  > b ]]>',
  },

  // --- Protected content: copied byte for byte ---
  { rule: 'pre content is verbatim', input: '<pre>  a\n\n\t b  </pre>', expected: '<pre>  a\n\n\t b  </pre>' },
  {
    rule: 'the pre end tag is found without regard to case',
    input: '<PRE> a  b </Pre >  <p>',
    expected: '<PRE> a  b </Pre ><p>',
  },
  {
    rule: 'markup and comments inside pre are verbatim',
    input: '<pre><b  class=x>  y </b><!-- c --></pre>',
    expected: '<pre><b  class=x>  y </b><!-- c --></pre>',
  },
  {
    rule: 'nested pre stays verbatim up to the outer end',
    input: '<pre><pre>a</pre>  b  </pre>  c',
    expected: '<pre><pre>a</pre>  b  </pre> c',
  },
  { rule: 'listing is a pre', input: '<listing>  a  </listing>', expected: '<listing>  a  </listing>' },
  {
    rule: 'textarea content is verbatim',
    input: '<textarea>  a\n  <b> </textarea>',
    expected: '<textarea>  a\n  <b> </textarea>',
  },
  { rule: 'style content is verbatim', input: '<style>  a  {  }  </style>', expected: '<style>  a  {  }  </style>' },
  {
    rule: 'script content is verbatim, "<" comparisons included',
    input: '<script> if (a  < b) x = "</div>  "; </script>',
    expected: '<script> if (a  < b) x = "</div>  "; </script>',
  },
  {
    rule: 'a script end tag is found without regard to case, with a space',
    input: '<script> a  </SCRIPT >  <p>',
    expected: '<script> a  </SCRIPT ><p>',
  },
  {
    rule: '</scripts> does not end a script',
    input: '<script> a </scripts>  b</script>',
    expected: '<script> a </scripts>  b</script>',
  },
  {
    rule: 'the <!-- <script> escape hides a </script>',
    input: '<script><!--  <script>  </script>  --></script>  <p>',
    expected: '<script><!--  <script>  </script>  --></script><p>',
  },
  {
    rule: 'an escaped </script> outside the double escape does end the script',
    input: '<script><!-- a  </script>  <p>',
    expected: '<script><!-- a  </script><p>',
  },
  {
    rule: 'title is RCDATA: a tag inside is text',
    input: '<title> a  <div>  b </title>',
    expected: '<title> a  <div>  b </title>',
  },
  {
    rule: 'xmp, iframe, noembed, noframes and noscript content is verbatim',
    input:
      '<xmp> a  </xmp><iframe> b  </iframe><noembed> c  </noembed><noframes> d  </noframes><noscript> e  </noscript>',
    expected:
      '<xmp> a  </xmp><iframe> b  </iframe><noembed> c  </noembed><noframes> d  </noframes><noscript> e  </noscript>',
  },
  { rule: 'an unterminated script protects to the end', input: '<script>  a  <p>  b', expected: '<script>  a  <p>  b' },
  {
    rule: 'a "</script" at the very end does not end it',
    input: '<script> a  </script',
    expected: '<script> a  </script',
  },
  {
    rule: 'plaintext protects to the end',
    input: '<plaintext>  <p>  </plaintext>  ',
    expected: '<plaintext>  <p>  </plaintext>  ',
  },

  // --- Inside tags ---
  {
    rule: 'white space inside a tag collapses like text',
    input: '<div\n   class="x"   id=y  >',
    expected: '<div\nclass="x" id=y >',
  },
  {
    rule: 'quoted values are verbatim, ">" inside quotes too',
    input: '<a title="a  > b"  x=\'c  d\'>',
    expected: '<a title="a  > b" x=\'c  d\'>',
  },
  { rule: 'a quote not after "=" is part of a name, not a value', input: '<a b"c  d>  e', expected: '<a b"c d> e' },
  {
    rule: 'an unquoted value runs to white space or ">"',
    input: '<a href=/x/y?a=1&b="2"  c>',
    expected: '<a href=/x/y?a=1&b="2" c>',
  },
  { rule: 'an unterminated quote protects to the end', input: '<a title="a  <p>  b', expected: '<a title="a  <p>  b' },
  { rule: 'a tag cut by the end of input keeps its collapsed runs', input: '</p>  <a  href', expected: '</p><a href' },

  // --- Things that look like tags but are text ---
  { rule: '"<" not followed by a letter is text', input: 'a  <  b', expected: 'a < b' },
  { rule: '"</" at the end of input is text', input: '<div> </', expected: '<div> </' },
  { rule: '"</>" is dropped by browsers; kept here as a neutral token', input: '<p> </> <p>', expected: '<p> </><p>' },

  // --- Link rewriting (double-quoted a href / img src, host Example.com:8080) ---
  {
    rule: 'an absolute self link becomes root-relative',
    input: '<a href="http://example.com:8080/a/b?c#d">',
    expected: '<a href="/a/b?c#d">',
    options: link(),
  },
  {
    rule: 'scheme and host are matched without regard to case; an empty path becomes /',
    input: '<A HREF="HTTP://EXAMPLE.COM:8080">',
    expected: '<A HREF="/">',
    options: link(),
  },
  {
    rule: 'a protocol-relative self link becomes root-relative',
    input: '<a href="//example.com:8080?x">',
    expected: '<a href="/?x">',
    options: link(),
  },
  {
    rule: 'a link to the current path with a query becomes just the query',
    input: '<a href="http://example.com:8080/shop?page=2#top">',
    expected: '<a href="?page=2#top">',
    options: link('/shop'),
  },
  {
    rule: 'a link to the current path without a query stays root-relative',
    input: '<a href="http://example.com:8080/shop#top">',
    expected: '<a href="/shop#top">',
    options: link('/shop'),
  },
  {
    rule: 'a longer path is another path',
    input: '<a href="http://example.com:8080/shopping?x">',
    expected: '<a href="/shopping?x">',
    options: link('/shop'),
  },
  {
    rule: 'path "/" matches an empty URL path',
    input: '<a href="http://example.com:8080?q">',
    expected: '<a href="?q">',
    options: link('/'),
  },
  {
    rule: 'img src is rewritten too',
    input: '<img  src="http://example.com:8080/i.png"  alt=x>',
    expected: '<img src="/i.png" alt=x>',
    options: link(),
  },
  {
    rule: 'on an http request an https self link keeps its scheme',
    input: '<a href="https://example.com:8080/a">',
    expected: '<a href="https://example.com:8080/a">',
    options: link(),
  },
  {
    rule: 'on an https request an https self link becomes root-relative',
    input: '<a href="HTTPS://example.com:8080/a?q">',
    expected: '<a href="/a?q">',
    options: link(undefined, 'https'),
  },
  {
    rule: 'on an https request an http self link keeps its scheme',
    input: '<a href="http://example.com:8080/a"><img src="http://example.com:8080/i">',
    expected: '<a href="http://example.com:8080/a"><img src="http://example.com:8080/i">',
    options: link(undefined, 'https'),
  },
  {
    rule: 'on an https request a protocol-relative self link becomes root-relative',
    input: '<img src="//example.com:8080/i.png">',
    expected: '<img src="/i.png">',
    options: link(undefined, 'https'),
  },
  {
    rule: 'without a scheme only protocol-relative self links are rewritten',
    input: '<a href="http://example.com:8080/a"><a href="https://example.com:8080/b"><a href="//example.com:8080/c">',
    expected: '<a href="http://example.com:8080/a"><a href="https://example.com:8080/b"><a href="/c">',
    options: { rewriteLinks: true, host: 'Example.com:8080' },
  },
  {
    rule: 'another port is another host',
    input: '<a href="http://example.com/a">',
    expected: '<a href="http://example.com/a">',
    options: link(),
  },
  {
    rule: 'user info in the authority is another host',
    input: '<a href="http://u@example.com:8080/">',
    expected: '<a href="http://u@example.com:8080/">',
    options: link(),
  },
  {
    rule: 'single-quoted links are left alone',
    input: "<a href='http://example.com:8080/a'>",
    expected: "<a href='http://example.com:8080/a'>",
    options: link(),
  },
  {
    rule: 'unquoted links are left alone',
    input: '<a href=http://example.com:8080/a>',
    expected: '<a href=http://example.com:8080/a>',
    options: link(),
  },
  {
    rule: 'only a/href and img/src are rewritten',
    input:
      '<img href="http://example.com:8080/a"><a src="http://example.com:8080/a"><link href="http://example.com:8080/a"><a data-href="http://example.com:8080/a">',
    expected:
      '<img href="http://example.com:8080/a"><a src="http://example.com:8080/a"><link href="http://example.com:8080/a"><a data-href="http://example.com:8080/a">',
    options: link(),
  },
  {
    rule: 'white space around "=" does not hide a link',
    input: '<a href = "http://example.com:8080/a">',
    expected: '<a href = "/a">',
    options: link(),
  },
  {
    rule: 'links inside pre are verbatim',
    input: '<pre><a href="http://example.com:8080/a"></pre>',
    expected: '<pre><a href="http://example.com:8080/a"></pre>',
    options: link(),
  },
  {
    rule: 'after a <base> tag links are left alone (they would resolve elsewhere)',
    input: '<a href="//example.com:8080/x"><base href="/y/"><a href="http://example.com:8080/a">',
    expected: '<a href="/x"><base href="/y/"><a href="http://example.com:8080/a">',
    options: link(),
  },
  {
    rule: 'without rewriteLinks links are left alone',
    input: '<a href="http://example.com:8080/a">',
    expected: '<a href="http://example.com:8080/a">',
    options: { host: 'example.com:8080' },
  },
  {
    rule: 'without a host links are left alone',
    input: '<a href="//x/a">',
    expected: '<a href="//x/a">',
    options: { rewriteLinks: true },
  },

  // --- Levels ---
  {
    rule: 'level 0 returns the input unchanged',
    input: '  <div>  <!-- c -->  </div>  ',
    expected: '  <div>  <!-- c -->  </div>  ',
    options: { level: 0 },
  },
  {
    rule: 'level 0 does not rewrite links either',
    input: '<a href="http://h/a">',
    expected: '<a href="http://h/a">',
    options: { level: 0, rewriteLinks: true, host: 'h' },
  },
  {
    rule: "level 2 squashes like level 1 here (CSS/JS minification is the middleware's)",
    input: '<p>\n<b>x</b>  y</p>\n<style> a  { } </style>',
    expected: '<p>\n<b>x</b> y</p><style> a  { } </style>',
    options: { level: 2 },
  },
];

const squashes = test.macro({
  exec(t, impl: CoreImplementation, c: RuleCase) {
    const out = impl.squashHtml(Buffer.from(c.input, 'utf8'), c.options);
    t.true(Buffer.isBuffer(out), 'the result is a Buffer');
    t.is(out.toString('utf8'), c.expected, c.rule);
    t.true(out.equals(Buffer.from(c.expected, 'utf8')), 'the bytes match, not only the decoded text');
  },
  title: (_provided, impl: CoreImplementation, c: RuleCase) =>
    `${impl === impls[0]![1] ? impls[0]![0] : 'twin'}: ${c.rule}`,
});

for (const [, impl] of impls) {
  for (const c of cases) test(squashes, impl, c);
}

test('every rule case has a distinct name', (t) => {
  const names = cases.map((c) => c.rule);
  t.is(new Set(names).size, names.length, 'no two cases share a rule text');
});
