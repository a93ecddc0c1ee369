/**
 * The squasher over the real-world-shaped corpus in support/squash-corpus:
 * every page against its reviewed golden, on the native addon and the twin,
 * plus the squasher's guarantees page by page.
 */
import test from 'ava';
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { impls } from '../../helpers/impls.ts';
import type { CoreImplementation, SquashOptions } from '../../../src/native/types.ts';

const dir = fileURLToPath(new URL('../../../support/squash-corpus/', import.meta.url));
const options = JSON.parse(readFileSync(`${dir}cases.json`, 'utf8')) as Record<string, SquashOptions>;
const names = readdirSync(dir)
  .filter((f) => f.endsWith('.html') && !f.endsWith('.expected.html'))
  .sort();
const pages = names.map((name) => ({
  name,
  input: readFileSync(dir + name),
  golden: readFileSync(dir + name.replace(/\.html$/, '.expected.html')),
  options: options[name] ?? {},
}));

/** Where two byte strings first differ, with a little context, for a readable failure. */
function firstDifference(a: Buffer, b: Buffer): string {
  let i = 0;
  while (i < a.length && i < b.length && a[i] === b[i]) i++;
  const around = (x: Buffer) => JSON.stringify(x.subarray(Math.max(0, i - 30), i + 30).toString('latin1'));
  return `first difference at byte ${i}: got ${around(a)}, want ${around(b)}`;
}

const nonAscii = (bytes: Buffer): Buffer => Buffer.from(bytes.filter((b) => b >= 0x80));

const matchesGolden = test.macro({
  exec(t, impl: CoreImplementation, page: (typeof pages)[number]) {
    const out = impl.squashHtml(page.input, page.options);
    t.true(out.equals(page.golden), `${page.name}: ${firstDifference(out, page.golden)}`);
  },
  title: (_p, impl: CoreImplementation, page: (typeof pages)[number]) =>
    `${impl === impls[0]![1] ? impls[0]![0] : 'twin'}: ${page.name} squashes to its golden`,
});

for (const [, impl] of impls) {
  for (const page of pages) test(matchesGolden, impl, page);
}

test('the corpus holds at least 20 pages, each with a golden', (t) => {
  t.true(pages.length >= 20, `${pages.length} pages`);
  for (const page of pages) t.true(page.golden.length > 0, `${page.name} has a non-empty golden`);
});

test('the corpus README describes every page, and only pages that exist', (t) => {
  const readme = readFileSync(`${dir}README.md`, 'utf8');
  const listed = [...readme.matchAll(/^\| `([\w-]+)` \|/gm)].map((m) => `${m[1]}.html`);
  t.deepEqual([...listed].sort(), names, 'README table rows = fixture files');
  for (const name of Object.keys(options).filter((k) => !k.startsWith('$'))) {
    t.true(names.includes(name), `cases.json names an existing page: ${name}`);
  }
});

for (const [name, impl] of impls) {
  test(`${name}: every page is never longer, and squashing its golden changes nothing`, (t) => {
    for (const page of pages) {
      const out = impl.squashHtml(page.input, page.options);
      t.true(out.length <= page.input.length, `${page.name} is not longer`);
      const again = impl.squashHtml(out, page.options);
      t.true(again.equals(out), `${page.name} is a fixed point: ${firstDifference(again, out)}`);
    }
  });

  test(`${name}: pre, textarea, script and style contents survive byte for byte`, (t) => {
    let checked = 0;
    for (const page of pages) {
      const out = impl.squashHtml(page.input, page.options).toString('latin1');
      const src = page.input.toString('latin1');
      for (const m of src.matchAll(/<(pre|textarea|script|style)\b[^>]*>([\s\S]*?)<\/\1\s*>/gi)) {
        t.true(out.includes(m[2]!), `${page.name}: <${m[1]}> content ${JSON.stringify(m[2]!.slice(0, 40))} is intact`);
        checked++;
      }
    }
    t.true(checked > 40, `${checked} protected elements checked`);
  });

  test(`${name}: quoted attribute values holding runs of white space survive byte for byte`, (t) => {
    let checked = 0;
    for (const page of pages) {
      const out = impl.squashHtml(page.input, page.options).toString('latin1');
      const src = page.input.toString('latin1').replace(/<!--[\s\S]*?-->/g, '');
      for (const m of src.matchAll(/\s[\w:-]+\s*=\s*("[^"]*[ \t\r\n\f]{2,}[^"]*"|'[^']*[ \t\r\n\f]{2,}[^']*')/g)) {
        t.true(out.includes(m[1]!), `${page.name}: ${JSON.stringify(m[1]!.slice(0, 50))} is intact`);
        checked++;
      }
    }
    t.true(checked > 10, `${checked} quoted values checked`);
  });

  test(`${name}: every non-ASCII byte of the corpus survives, in order`, (t) => {
    // No page of the corpus has non-ASCII bytes inside a removed comment, so
    // the non-ASCII bytes of input and output are the same sequence.
    for (const page of pages) {
      const out = impl.squashHtml(page.input, page.options);
      t.true(nonAscii(out).equals(nonAscii(page.input)), `${page.name}: non-ASCII bytes unchanged`);
    }
  });
}

test('native and twin give identical bytes for every page, with and without link rewriting', (t) => {
  if (impls.length < 2) return t.pass('the native addon is not loaded; nothing to compare');
  const [[, native], [, twin]] = impls as [[string, CoreImplementation], [string, CoreImplementation]];
  const variants: SquashOptions[] = [
    {},
    { level: 2 },
    { rewriteLinks: true, host: 'shop.example.com', path: '/catalog' },
  ];
  for (const page of pages) {
    for (const opts of [page.options, ...variants]) {
      const a = native.squashHtml(page.input, opts);
      const b = twin.squashHtml(page.input, opts);
      t.true(a.equals(b), `${page.name} ${JSON.stringify(opts)}: ${firstDifference(a, b)}`);
    }
  }
});
