/**
 * The squasher's guarantees as properties over generated input (fast-check, fixed
 * seeds): never longer, idempotent, protected regions byte-identical,
 * non-ASCII untouched, text collapsing equal to a one-line model, and the
 * native addon equal to the twin byte for byte, garbage included.
 */
import test from 'ava';
import fc from 'fast-check';
import { impls } from '../../helpers/impls.ts';
import type { CoreImplementation, SquashOptions } from '../../../src/native/types.ts';

const RUNS = 3000;

// Pieces a page is made of, malformed ones included, so that concatenations
// reach every state: unterminated quotes, comments, raw text and tags.
const PIECES = [
  '<div>',
  '</div>',
  '<DIV class="a  b">',
  '<p>',
  '</p>',
  '<span>',
  '</span>',
  '<b>',
  '</b>',
  '<em>',
  '<a href=x>',
  '</a>',
  '<br>',
  '<br/>',
  '<hr>',
  '<li>',
  '</li>',
  '<ul>',
  '</ul>',
  '<td>',
  '<tr>',
  '<table>',
  '<option>',
  '<select>',
  '<pre>',
  '</pre>',
  '<PRE >',
  '</Pre\n>',
  '<listing>',
  '</listing>',
  '<xmp>',
  '</xmp>',
  '<plaintext>',
  '<script>',
  '</script>',
  '</SCRIPT >',
  '<script><!--',
  '--></script>',
  '</script',
  '<style>',
  '</style>',
  '<textarea>',
  '</textarea>',
  '<title>',
  '</title>',
  '<noscript>',
  '</noscript>',
  '<iframe>',
  '</iframe>',
  '<head>',
  '</head>',
  '<meta x>',
  '<link y>',
  '<base href=/>',
  '<html>',
  '</html>',
  '<body>',
  '</body>',
  '<!--',
  '-->',
  '--!>',
  '<!-- c -->',
  '<!---->',
  '<!-->',
  '<!--->',
  '<!--[if IE]>',
  '<![endif]-->',
  '<!--!',
  '<!--<![endif]-->',
  '<!DOCTYPE html>',
  '<!doctype',
  '<!',
  '<?',
  '?>',
  '<![CDATA[',
  ']]>',
  '</',
  '</>',
  '<',
  '>',
  '/>',
  '=',
  '"',
  "'",
  '/',
  '-',
  '!',
  '&',
  '&amp;',
  'a',
  'bc',
  'x y',
  '\u00a0',
  '😀',
  'é',
  '\ufeff',
  '<svg><title/>',
  ' title="a  b"',
  " x='c  d'",
  ' href="http://h/x?y"',
  ' src="//H/i"',
  ' src="https://h"',
  '<a href="http://h/x?q#f">',
  '<img src="http://h/i.png">',
  '<a href="//h">',
  '<a b"c d>',
  ' = ',
  '<i\n\tclass=x\n>',
];
const WS = [' ', '  ', '\n', '\r\n', '\t', '\f', '\r', '\n    ', ' \n\t '];

const bytes = (s: string | Uint8Array): Buffer => (typeof s === 'string' ? Buffer.from(s, 'utf8') : Buffer.from(s));

const soup = fc
  .array(
    fc.oneof(
      { arbitrary: fc.constantFrom(...PIECES), weight: 12 },
      { arbitrary: fc.constantFrom(...WS), weight: 6 },
      { arbitrary: fc.string({ maxLength: 5 }), weight: 2 },
      { arbitrary: fc.string({ unit: 'binary', maxLength: 3 }), weight: 1 },
      { arbitrary: fc.uint8Array({ minLength: 1, maxLength: 3 }), weight: 1 },
    ),
    { maxLength: 60 },
  )
  .map((parts) => Buffer.concat(parts.map(bytes)));

const OPTIONS: SquashOptions[] = [
  {},
  { rewriteLinks: true, host: 'h', path: '/x', scheme: 'http' },
  { rewriteLinks: true, host: 'h', path: '/x', scheme: 'https' },
  { rewriteLinks: true, host: 'h', path: '/x' },
  { level: 2, rewriteLinks: true, host: 'H', scheme: 'https' },
];
const options = fc.constantFrom(...OPTIONS);

const nonAscii = (b: Buffer): Buffer => Buffer.from(b.filter((x) => x >= 0x80));

for (const [name, impl] of impls) {
  test(`${name}: the output is never longer than the input`, (t) => {
    fc.assert(
      fc.property(soup, options, (input, opts) => impl.squashHtml(input, opts).length <= input.length),
      { seed: 1, numRuns: RUNS },
    );
    t.pass();
  });

  test(`${name}: squashing is idempotent, garbage included`, (t) => {
    fc.assert(
      fc.property(soup, options, (input, opts) => {
        const once = impl.squashHtml(input, opts);
        return impl.squashHtml(once, opts).equals(once);
      }),
      { seed: 2, numRuns: RUNS },
    );
    t.pass();
  });

  test(`${name}: without comments in the input, its non-ASCII bytes all survive in order`, (t) => {
    const noComments = soup.filter((b) => !b.includes('<!--'));
    fc.assert(
      fc.property(noComments, options, (input, opts) => nonAscii(impl.squashHtml(input, opts)).equals(nonAscii(input))),
      { seed: 3, numRuns: RUNS },
    );
    t.pass();
  });

  test(`${name}: text without markup collapses exactly like a one-line model`, (t) => {
    // The model: every run of \t \n \r or space becomes "\n" if it held a line feed (or a CR, which the parser
    // makes one), else " "; a form feed is text and stays.
    const model = (s: Buffer) =>
      Buffer.from(
        s.toString('latin1').replace(/[\t\n\r ]+/g, (run) => (/[\n\r]/.test(run) ? '\n' : ' ')),
        'latin1',
      );
    const text = fc
      .array(
        fc.oneof(fc.constantFrom(...WS, 'a', 'b', '\v', '>', '&', '"', '\u00a0', '😀'), fc.string({ maxLength: 4 })),
        { maxLength: 40 },
      )
      .map((parts) => Buffer.from(parts.join('').replace(/</g, '('), 'utf8'));
    fc.assert(
      fc.property(text, (input) => impl.squashHtml(input).equals(model(input))),
      { seed: 4, numRuns: RUNS },
    );
    t.pass();
  });

  test(`${name}: pre, textarea, script, style contents and quoted values come out byte for byte`, (t) => {
    // A page of well-formed context with protected regions holding random
    // text (white space heavy, no '<', no closing quote).
    const unit = fc.constantFrom(
      ' ',
      '  ',
      '\n',
      '\r\n',
      '\t',
      '\f',
      'a',
      'é',
      '\u00a0',
      '😀',
      '>',
      '=',
      '&',
      '-',
      '!',
      '/',
      '"',
      "'",
    );
    const content = fc.string({ unit, maxLength: 20 });
    const context = fc.constantFrom(
      ' ',
      '\n  ',
      '<div>',
      '</div>',
      '<p>',
      '</p>',
      'text',
      '<b>x</b>',
      '<!-- c -->',
      '<br>',
      '<li>',
      '<span class="k">',
      '</span>',
      '&amp;',
      'é',
    );
    type Part = { html: string; kept?: string };
    const element = fc
      .tuple(fc.constantFrom('pre', 'textarea', 'script', 'style', 'PRE', 'Script', 'title'), content)
      .map(([tag, c]): Part => ({ html: `<${tag}>${c}</${tag}>`, kept: c }));
    const attribute = fc.tuple(fc.constantFrom('"', "'"), content).map(([q, c]): Part => {
      const value = q + c.split(q).join('') + q;
      return { html: `<span title=${value}>`, kept: value };
    });
    const page = fc.array(
      fc.oneof(
        context.map((html): Part => ({ html })),
        element,
        attribute,
      ),
      { maxLength: 25 },
    );
    fc.assert(
      fc.property(page, options, (parts, opts) => {
        const out = impl.squashHtml(Buffer.from(parts.map((p) => p.html).join(''), 'utf8'), opts).toString('utf8');
        let at = 0;
        for (const part of parts) {
          if (part.kept === undefined) continue;
          const found = out.indexOf(part.kept, at);
          if (found < 0) return false;
          at = found + part.kept.length;
        }
        return true;
      }),
      { seed: 5, numRuns: RUNS },
    );
    t.pass();
  });
}

test('native and twin give identical bytes on generated input, garbage included', (t) => {
  if (impls.length < 2) return t.pass('the native addon is not loaded; nothing to compare');
  const [[, native], [, twin]] = impls as [[string, CoreImplementation], [string, CoreImplementation]];
  fc.assert(
    fc.property(soup, options, (input, opts) => native.squashHtml(input, opts).equals(twin.squashHtml(input, opts))),
    { seed: 6, numRuns: RUNS * 3 },
  );
  t.pass();
});

test('native and twin agree on every input length from 0 to 80 around the 16-byte blocks', (t) => {
  if (impls.length < 2) return t.pass('the native addon is not loaded; nothing to compare');
  const [[, native], [, twin]] = impls as [[string, CoreImplementation], [string, CoreImplementation]];
  // Each position of a 16-byte block holding each kind of byte the vector
  // code looks at, with a run or a tag crossing the block edge.
  const specials = [' ', '  ', '\n', '\t', '<', '<b>', '</p>', '"', '=', '<a x="', '>', '\r\n', '<div ', '<!--'];
  for (let len = 0; len <= 80; len++) {
    for (const special of specials) {
      for (let at = 0; at <= len; at += 3) {
        const base = 'x'.repeat(len).split('');
        base.splice(at, 0, special);
        const input = Buffer.from(base.join('').slice(0, len + special.length));
        t.true(native.squashHtml(input).equals(twin.squashHtml(input)), JSON.stringify(input.toString()));
      }
    }
  }
});
