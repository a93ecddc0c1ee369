/**
 * Level 2 finds a large page's inline <script> and <style> blocks a window
 * at a time (optimiseHtml's inlineBlocks): exactly the blocks the one-call
 * search finds, whatever the window cuts (an opening tag, an end tag, a
 * block, `</script   >`, an unclosed tag, upper case), and the event loop
 * turns while a 10 MiB page is searched.
 */
import test from 'ava';
import { htmlPage } from '../../support/pages.ts';
import { inlineBlocks, type InlineBlock } from '../../src/encoding/optimise.ts';
import { loopTurns } from '../helpers/loop-turns.ts';

async function all(html: Buffer, window?: number): Promise<InlineBlock[]> {
  const found: InlineBlock[] = [];
  for await (const b of inlineBlocks(html, window)) found.push(b);
  return found;
}

/** A page of random text and blocks, from a seed. */
function page(seed: number, length: number): Buffer {
  let state = seed;
  const next = (n: number): number => {
    state = (state * 1103515245 + 12345) % 2147483648;
    return state % n;
  };
  const pieces = [
    () => 'text and <b>tags</b> ',
    () => `<script>var x${next(99)} = "</scrip" + 't>';</script>`,
    () => `<Style type="text/css">p { color: red }</STYLe   >`,
    () => `<script src="a.js" data-long="${'x'.repeat(next(40))}"></script>`,
    () => '<script>if (a < b) { f(); }</SCRIPT>',
    () => '<scripts>not a block</scripts>',
    () => '<style>',
    () => '</style>',
    () => '<script',
    () => ' '.repeat(next(30)),
    () => '<style media="print">\n  .a { b: c }\n</style\n>',
  ];
  let out = '';
  while (out.length < length) out += pieces[next(pieces.length)]!();
  return Buffer.from(out.slice(0, length), 'latin1');
}

test('a window at a time finds the very blocks the one-call search finds', async (t) => {
  for (let seed = 1; seed <= 40; seed++) {
    const html = page(seed, 600 + seed * 37);
    const expected = await all(html, Number.MAX_SAFE_INTEGER);
    for (const window of [17, 32, 64, 100, 256]) {
      t.deepEqual(await all(html, window), expected, `seed ${seed}, window ${window}`);
    }
  }
  // Ends: an unclosed opening tag at the end, a block at the very end, no blocks at all.
  for (const text of ['<p>x</p><script>var a', '<p>x</p><script>var a</script>', 'plain text '.repeat(20), '<script']) {
    const html = Buffer.from(text);
    t.deepEqual(await all(html, 16), await all(html, Number.MAX_SAFE_INTEGER), text);
  }
});

test('the event loop turns while a 10 MiB page is searched', async (t) => {
  const html = Buffer.from(htmlPage(10 * 1024 * 1024, 3) + '<script>var a = 1;</script>');
  const turns = loopTurns();
  const found = await all(html);
  turns.stop();
  t.true(turns.count() > 0);
  t.is(found.length, 1);
  t.is(html.toString('latin1', found[0]!.start, found[0]!.end), 'var a = 1;');
});
