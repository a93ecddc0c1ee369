/**
 * The stream squasher against the whole-body one: a body fed in pieces, cut
 * anywhere (inside a tag, a quoted value, a comment, raw text, a run of white
 * space, a multi-byte character, a link being shortened), gives the bytes
 * squashHtml gives the whole body, on the native addon and the twin, and
 * never holds back more than SquashStream.maxHeld bytes
 * (docs/decisions/0049-squashing-streams.md).
 */
import test from 'ava';
import fc from 'fast-check';
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { impls } from '../../helpers/impls.ts';
import type { CoreImplementation, SquashOptions } from '../../../src/native/types.ts';

const dir = fileURLToPath(new URL('../../../support/squash-corpus/', import.meta.url));
const cases = JSON.parse(readFileSync(`${dir}cases.json`, 'utf8')) as Record<string, SquashOptions>;
const pages = readdirSync(dir)
  .filter((f) => f.endsWith('.html') && !f.endsWith('.expected.html'))
  .sort()
  .map((name) => ({ name, input: readFileSync(dir + name), options: cases[name] ?? {} }));

/**
 * `input` fed to a new SquashStream in pieces of the `sizes` given, over and
 * over (a 0 feeds an empty piece), then finished; fails the test when the
 * stream holds back more than its bound.
 */
function streamed(impl: CoreImplementation, input: Buffer, options: SquashOptions, sizes: readonly number[]): Buffer {
  const stream = new impl.SquashStream(options);
  const out: Buffer[] = [];
  const steps = sizes.some((n) => n > 0) ? sizes : [1];
  for (let at = 0, i = 0; at < input.length; i++) {
    const n = steps[i % steps.length]!;
    out.push(stream.feed(input.subarray(at, at + n)));
    if (stream.held > impl.SquashStream.maxHeld) throw new Error(`held ${stream.held} bytes`);
    at += n;
  }
  out.push(stream.finish());
  return Buffer.concat(out);
}

/** Where two byte strings first differ, with a little context. */
function firstDifference(a: Buffer, b: Buffer): string {
  let i = 0;
  while (i < a.length && i < b.length && a[i] === b[i]) i++;
  const around = (x: Buffer): string => JSON.stringify(x.subarray(Math.max(0, i - 30), i + 30).toString('latin1'));
  return `first difference at byte ${i}: got ${around(a)}, want ${around(b)}`;
}

// Pieces of generated pages, malformed ones included, with the tokens whose
// fate waits for later bytes: comments, links, tag names, runs.
const PIECES = [
  '<div>',
  '</div>',
  '<p>',
  '</p>',
  '<b>',
  '</b>',
  '<li>',
  '</li>',
  '<ul>',
  '<pre>',
  '</pre>',
  '<script>',
  '</script>',
  '<script><!--',
  '<script>',
  '--></script>',
  '</SCRIPT >',
  '<style>',
  '</style>',
  '<textarea>',
  '</textarea>',
  '<title>',
  '<plaintext>',
  '<head>',
  '</head>',
  '<base href=/>',
  '<!--',
  '-->',
  '--!>',
  '<!-- c -->',
  '<!---->',
  '<!-->',
  '<!--[if IE]>',
  '<![endif]-->',
  '<!--!',
  '<!DOCTYPE html>',
  '<!doctype',
  '<!',
  '<?x?>',
  '<![CDATA[ x ]]>',
  '</',
  '</>',
  '<',
  '>',
  '=',
  '"',
  "'",
  '-',
  '&amp;',
  'a',
  'bc',
  '\u00a0',
  '😀',
  'é',
  '\ufeff',
  '<a href="http://h/x?q#f">',
  '<img src="//H/i.png">',
  '<a HREF = "https://h/">',
  ' href="//h/a"',
  '<a href=',
  '<a ',
  ' hre',
  'f="//h/',
  'x"',
  '<my-custom-element x=1>',
  '</my-custom-element>',
  '<!-- x -->\f',
  '\f<!-- y -->',
];
const WS = [' ', '  ', '\n', '\r\n', '\t', '\f', '\r', '\n    ', ' \n\t '];

const soup = fc
  .array(
    fc.oneof(
      { arbitrary: fc.constantFrom(...PIECES), weight: 12 },
      { arbitrary: fc.constantFrom(...WS), weight: 6 },
      { arbitrary: fc.string({ maxLength: 5 }), weight: 2 },
      { arbitrary: fc.uint8Array({ minLength: 1, maxLength: 3 }), weight: 1 },
    ),
    { maxLength: 60 },
  )
  .map((parts) => Buffer.concat(parts.map((p) => (typeof p === 'string' ? Buffer.from(p, 'utf8') : Buffer.from(p)))));

const OPTIONS: SquashOptions[] = [
  {},
  { rewriteLinks: true, host: 'h', path: '/x', scheme: 'http' },
  { rewriteLinks: true, host: 'h', path: '/x', scheme: 'https' },
  { rewriteLinks: true, host: 'h', path: '/x' },
  { level: 0 },
];
const options = fc.constantFrom(...OPTIONS);
// Piece sizes: one byte, a few, or larger, empty pieces included.
const sizes = fc.array(fc.oneof(fc.integer({ min: 0, max: 8 }), fc.integer({ min: 1, max: 600 })), {
  minLength: 1,
  maxLength: 12,
});

const RUNS = 2000;

// Short pages whose bytes hang on a few bytes near a cut: a byte order mark
// after a leading comment, a form feed past the run after a comment, a tag
// name or "<!" split, a link whose end decides it, a script's end tag.
const EDGES: Array<[string, SquashOptions]> = [
  ['<!-- c -->\ufeffx', {}],
  [' <!-- c -->\ufeff x', {}],
  ['\ufeff<!-- c -->\ufeff<p> a </p>', {}],
  ['\ufeff\ufeff <!-- a --><!-- b -->\ufeff', {}],
  ['<b>x</b> <!-- c --> \f y', {}],
  ['x\f <!-- c -->  <!-- d -->\n\f<i>', {}],
  ['<p>a<!--b-->c <!--->d<!---->e<!-- f --!> g</p>', {}],
  ['<!doctype html> <!-x> <?p?> </ x> </> <a', {}],
  ['<div\n class=" a  b "  id=x>  <br/>  </div >  <pre> a  </pre>', {}],
  ['<script> a <!-- <script> </script> b --> </script> <p> x', {}],
  ['<a href="http://h/x?q">l</a> <img src="//h/i"> <a href="/y">', { rewriteLinks: true, host: 'h', path: '/x' }],
  ['<A HREF = "https://h/x?q" >l</A><a href="https://h/', { rewriteLinks: true, host: 'h', scheme: 'https' }],
];

for (const [name, impl] of impls) {
  test(`${name}: every corpus page, one byte at a time, squashes to its whole-body bytes`, (t) => {
    for (const page of pages) {
      const whole = impl.squashHtml(page.input, page.options);
      // The large page (700 KB) a byte at a time costs seconds: its first 64 KiB stand for it.
      const input = page.input.length > 65536 ? page.input.subarray(0, 65536) : page.input;
      const want = input === page.input ? whole : impl.squashHtml(input, page.options);
      const got = streamed(impl, input, page.options, [1]);
      t.true(got.equals(want), `${page.name}: ${firstDifference(got, want)}`);
    }
  });

  test(`${name}: every corpus page, in random pieces, squashes to its whole-body bytes`, (t) => {
    const variants: SquashOptions[] = [{}, { rewriteLinks: true, host: 'shop.example.com', path: '/catalog' }];
    fc.assert(
      fc.property(fc.constantFrom(...pages), fc.constantFrom(...variants), sizes, (page, variant, cut) => {
        const opts = { ...page.options, ...variant };
        const whole = impl.squashHtml(page.input, opts);
        const got = streamed(impl, page.input, opts, cut);
        if (!got.equals(whole))
          throw new Error(`${page.name} in pieces ${cut.join(',')}: ${firstDifference(got, whole)}`);
      }),
      { seed: 41, numRuns: 300 },
    );
    t.pass();
  });

  test(`${name}: short edge pages cut at every position and every pair of positions`, (t) => {
    for (const [page, opts] of EDGES) {
      const input = Buffer.from(page);
      const whole = impl.squashHtml(input, opts);
      for (let i = 0; i <= input.length; i++) {
        for (let j = i; j <= input.length; j++) {
          const got = streamed(impl, input, opts, [i, j - i, input.length]);
          if (!got.equals(whole)) {
            t.fail(`${JSON.stringify(page)} cut at ${i} and ${j}: ${firstDifference(got, whole)}`);
            return;
          }
        }
      }
      t.true(streamed(impl, input, opts, [1]).equals(whole), JSON.stringify(page));
    }
  });

  test(`${name}: generated pages in random pieces squash to their whole-body bytes`, (t) => {
    fc.assert(
      fc.property(soup, options, sizes, (input, opts, cut) => {
        const whole = impl.squashHtml(input, opts);
        for (const pieces of [cut, [1]]) {
          const got = streamed(impl, input, opts, pieces);
          if (!got.equals(whole)) throw new Error(`pieces ${pieces.join(',')}: ${firstDifference(got, whole)}`);
        }
      }),
      { seed: 42, numRuns: RUNS },
    );
    t.pass();
  });

  test(`${name}: past the look-ahead, a comment is kept and a link is not shortened, streamed or whole`, (t) => {
    const { maxHeld } = impl.SquashStream;
    const comment = `<p>a <!--${'-'.repeat(maxHeld)}--> b</p>`;
    const link = `<a href="//h/${'y'.repeat(4096)}">x</a>`;
    const opts: SquashOptions = { rewriteLinks: true, host: 'h' };
    for (const page of [comment, link, `${link}<!--${'x'.repeat(40000)}`]) {
      const input = Buffer.from(page);
      const whole = impl.squashHtml(input, opts);
      t.true(whole.includes(page.slice(5, 40)), 'kept as it is');
      for (const pieces of [[1000], [7], [1, 65536]]) t.true(streamed(impl, input, opts, pieces).equals(whole));
    }
  });
}

test('native and twin streams give the same bytes for the same pieces', (t) => {
  if (impls.length < 2) return t.pass('the native addon is not loaded; nothing to compare');
  const [[, native], [, twin]] = impls as [[string, CoreImplementation], [string, CoreImplementation]];
  fc.assert(
    fc.property(soup, options, sizes, (input, opts, cut) =>
      streamed(native, input, opts, cut).equals(streamed(twin, input, opts, cut)),
    ),
    { seed: 43, numRuns: RUNS },
  );
  t.pass();
});
