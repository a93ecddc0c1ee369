/**
 * Whole-body work in slices (src/native/slices.ts) and the memo's large
 * bodies: the same results as the one-call forms (Buffer.from, equals,
 * ===), the event loop turning meanwhile (a setImmediate counter advances:
 * a one-call form lets none run), and over HTTP a large body the memo
 * compares in slices is never confused with a near twin.
 */
import test from 'ava';
import Koa from 'koa';
import { htmlPage } from '../../support/pages.ts';
import { serve } from '../helpers/serve.ts';
import { buffer } from '../../src/index.ts';
import { squashHtml } from '../../src/native/exports.ts';
import { concatInSlices, copyInSlices, largeBody, sameInSlices, utf8InSlices } from '../../src/native/slices.ts';
import { loopTurns } from '../helpers/loop-turns.ts';

const MiB = 1024 * 1024;
const unitSlice = 256 * 1024;

test('utf8InSlices gives Buffer.from’s bytes, surrogate pairs and lone surrogates across slice ends too', async (t) => {
  const filler = 'a'.repeat(unitSlice - 1);
  const cases = [
    // A pair straddling each of the first slice ends.
    (filler + '\u{1F600}').repeat(6),
    // A lone high surrogate at a slice end, a lone low one after it, then text.
    filler + '\ud83d' + '\ude00'.repeat(3) + 'é'.repeat(unitSlice * 3),
    // Two- and three-byte characters only.
    'é€'.repeat(MiB),
    htmlPage(2 * MiB, 5),
    'short',
  ];
  for (const text of cases) t.true((await utf8InSlices(text)).equals(Buffer.from(text)), `length ${text.length}`);
});

test('sameInSlices agrees with equals and ===', async (t) => {
  const a = Buffer.from(htmlPage(3 * MiB, 2));
  const b = Buffer.from(a);
  t.true(await sameInSlices(a, b));
  for (const at of [0, MiB - 1, MiB, a.length - 1]) {
    const c = Buffer.from(a);
    c[at] = c[at]! ^ 1;
    t.false(await sameInSlices(a, c), `differs at ${at}`);
  }
  t.false(await sameInSlices(a, a.subarray(1)));
  const text = htmlPage(3 * MiB, 3);
  t.true(await sameInSlices(text, (text + ' ').slice(0, -1)));
  t.false(await sameInSlices(text, text.slice(0, -1) + '#'));
  t.false(await sameInSlices(text, Buffer.from(text)), 'a string is never the same as bytes');
  t.true(await sameInSlices(Buffer.from('x'), Buffer.from('x')));
  t.true((await copyInSlices(a)).equals(a));
  t.not((await copyInSlices(a)).buffer, a.buffer);
  // Pieces of every size around the slice: the very bytes Buffer.concat gives.
  const pieces = [
    a.subarray(0, 10),
    a.subarray(5, MiB + 3),
    Buffer.alloc(0),
    a.subarray(7, 2 * MiB + 1),
    Buffer.from('end'),
  ];
  t.true((await concatInSlices(pieces)).equals(Buffer.concat(pieces)));
  t.true((await concatInSlices([Buffer.from('a'), Buffer.from('b')])).equals(Buffer.from('ab')));
});

test.serial('the event loop turns while 100 MiB are converted, copied and compared', async (t) => {
  const text = htmlPage(100 * MiB, 9);
  const bytes = Buffer.from(text);
  for (const [name, work] of [
    ['utf8', () => utf8InSlices(text)],
    ['copy', () => copyInSlices(bytes)],
    ['compare bytes', () => sameInSlices(bytes, Buffer.from(bytes))],
    ['compare strings', () => sameInSlices(text, (text + ' ').slice(0, -1))],
  ] as const) {
    const loop = loopTurns();
    await work();
    const seen = loop.count();
    loop.stop();
    t.true(seen > 0, `${name}: no turn of the event loop`);
  }
});

test('over HTTP: a large body recognised by the memo is compared whole; a near twin is not taken for it', async (t) => {
  t.true(3 * MiB > largeBody);
  const first = Buffer.from(htmlPage(3 * MiB, 4));
  // Same length and the same sampled words; one byte differs away from the samples.
  const second = Buffer.from(first);
  const at = first.indexOf(' ', Math.floor(first.length / 30) + 5);
  second[at] = 0x09; // a tab: squashes as the space did, so the squashed pages differ only if the memo mixes them
  second[at - 1] = second[at - 1] === 0x61 ? 0x62 : 0x61;
  const state = { body: first as Buffer | string };
  const app = new Koa();
  app.use(buffer({ optimiseContent: 1, lastModified: false }));
  app.use((ctx) => {
    ctx.type = 'html';
    ctx.body = state.body;
  });
  const server = await serve(t, app);
  const get = () => server.request('/', { headers: { 'accept-encoding': 'identity' } });
  for (let i = 0; i < 3; i++) t.true((await get()).body.equals(squashHtml(first)), `first body, sighting ${i + 1}`);
  state.body = second;
  t.true((await get()).body.equals(squashHtml(second)), 'the near twin gets its own squash');
  // A large string body: converted in slices, squashed, and recognised again.
  const text = htmlPage(3 * MiB, 6) + '\u{1F600}';
  state.body = text;
  for (let i = 0; i < 3; i++) t.true((await get()).body.equals(squashHtml(Buffer.from(text))), `string, ${i + 1}`);
  state.body = (text + ' ').slice(0, -1);
  t.true((await get()).body.equals(squashHtml(Buffer.from(text))), 'an equal string of its own');
});
