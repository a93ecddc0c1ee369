/**
 * Squashing a large page off the event loop: the native squash on the thread
 * pool (squashHtmlAsync) and the twin in slices give the very bytes the
 * synchronous squashHtml gives, and while a 100 MiB page is squashed the
 * event loop keeps turning (a setImmediate counter advances), through
 * optimiseHtml too. No clocks: a synchronous squash lets no
 * setImmediate run before it returns.
 */
import test from 'ava';
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import Koa from 'koa';
import { htmlPage } from '../../../support/pages.ts';
import { impls, native, twins } from '../../helpers/impls.ts';
import { serve } from '../../helpers/serve.ts';
import { buffer } from '../../../src/index.ts';
import { addon } from '../../../src/native/binding.ts';
import {
  largeBuffer,
  squashHtmlOffLoop,
  squashOffLoopKind,
  squashOffLoopMin,
} from '../../../src/native/squash-off-loop.ts';
import { squashHtmlSliced } from '../../../src/native/twins/squash-html.ts';
import type { SquashOptions } from '../../../src/native/types.ts';
import { optimiseHtml, type OptimiseSettings } from '../../../src/encoding/optimise.ts';
import { defaultLogger as logger } from '../../../src/base/logger.ts';
import { builtinMessages as messages } from '../../../src/base/messages.ts';
import { loopTurns } from '../../helpers/loop-turns.ts';

const dir = fileURLToPath(new URL('../../../support/squash-corpus/', import.meta.url));
const cases = JSON.parse(readFileSync(`${dir}cases.json`, 'utf8')) as Record<string, SquashOptions>;
const corpus = readdirSync(dir)
  .filter((f) => f.endsWith('.html') && !f.endsWith('.expected.html'))
  .sort()
  .map((name) => ({ name, input: readFileSync(dir + name), options: cases[name] ?? {} }));

const linkOptions: SquashOptions = { rewriteLinks: true, host: 'example.com', path: '/a/b', scheme: 'https' };
const MiB = 1024 * 1024;

type SquashAsync = (input: NodeJS.ArrayBufferView, options?: SquashOptions) => Promise<Buffer>;
const nativeAsync = (addon as unknown as { squashHtmlAsync?: SquashAsync } | undefined)?.squashHtmlAsync;

test('native: squashHtmlAsync gives squashHtml’s bytes for every corpus page, level and link option', async (t) => {
  if (!native || !nativeAsync) return t.pass('no native addon here');
  for (const page of corpus) {
    for (const options of [page.options, { ...page.options, level: 0 }, { ...page.options, ...linkOptions }]) {
      const out = await nativeAsync(page.input, options);
      t.true(out.equals(native.squashHtml(page.input, options)), `${page.name} ${JSON.stringify(options)}`);
    }
  }
  // A view into a larger buffer, a DataView and an empty input.
  const big = Buffer.from(htmlPage(600 * 1024, 3));
  const view = new Uint8Array(big.buffer, big.byteOffset + 7, big.length - 99);
  t.true((await nativeAsync(view)).equals(native.squashHtml(view)));
  t.true(
    (await nativeAsync(new DataView(big.buffer, big.byteOffset, 1000))).equals(
      native.squashHtml(big.subarray(0, 1000)),
    ),
  );
  t.is((await nativeAsync(new Uint8Array(0))).length, 0);
});

test('native: squashHtmlAsync checks its arguments as squashHtml does, and refuses a string', (t) => {
  if (!nativeAsync) return t.pass('no native addon here');
  t.throws(() => nativeAsync(Buffer.from('<p>'), { level: 3 }), {
    instanceOf: RangeError,
    message: 'The "options.level" property must be 0, 1 or 2 (received the number 3)',
  });
  t.throws(() => nativeAsync(Buffer.from('<p>'), { scheme: 'ftp' as 'http' }), { code: 'ERR_INVALID_ARG_VALUE' });
  t.throws(() => nativeAsync('<p>' as never), {
    instanceOf: TypeError,
    message: 'The "input" argument must be a Buffer, TypedArray or DataView (received the string \'<p>\')',
  });
  t.throws(() => nativeAsync(42 as never), { code: 'ERR_INVALID_ARG_TYPE' });
});

test('twin: the sliced squash gives the twin’s bytes for every corpus page, cut at any slice size', async (t) => {
  for (const page of corpus) {
    for (const slice of [1, 7, 64, 4096]) {
      for (const options of [page.options, { ...page.options, ...linkOptions }, { level: 0 }]) {
        const out = await squashHtmlSliced(page.input, options, slice);
        t.true(
          out.equals(twins.squashHtml(page.input, options)),
          `${page.name} slice ${slice} ${JSON.stringify(options)}`,
        );
      }
    }
  }
  const page = Buffer.from(htmlPage(3 * MiB, 11));
  t.true((await squashHtmlSliced(page)).equals(twins.squashHtml(page)));
  await t.throwsAsync(squashHtmlSliced('<p>' as never), { code: 'ERR_INVALID_ARG_TYPE' });
  await t.throwsAsync(squashHtmlSliced(Buffer.from('<p>'), { level: 5 }), { code: 'ERR_OUT_OF_RANGE' });
});

test('twin: squashes in progress at the same time do not share their output', async (t) => {
  const a = Buffer.from(htmlPage(MiB, 1));
  const b = Buffer.from(htmlPage(MiB, 2));
  const [outA, outB] = await Promise.all([squashHtmlSliced(a), squashHtmlSliced(b)]);
  t.true(outA.equals(twins.squashHtml(a)));
  t.true(outB.equals(twins.squashHtml(b)));
});

const page100 = Buffer.from(htmlPage(100 * MiB, 9));

for (const [name, squash] of [
  ['the process’s off-loop squash', squashHtmlOffLoop],
  ['the twin’s slices', (input: NodeJS.ArrayBufferView) => squashHtmlSliced(input)],
] as const) {
  test.serial(`${name}: the event loop keeps turning while a 100 MiB page is squashed`, async (t) => {
    const loop = loopTurns();
    const out = await squash(page100);
    const seen = loop.count();
    loop.stop();
    t.true(seen > 0, 'no turn of the event loop while squashing');
    t.true(out.equals(impls[0]![1].squashHtml(page100)));
  });
}

const settings: OptimiseSettings = {
  level: 1,
  rewriteLinks: false,
  host: 'localhost',
  path: '/',
  scheme: 'http',
  logger,
  messages,
  debug: false,
};

test.serial('optimiseHtml squashes a large page off the loop, a small one in the same turn, same bytes', async (t) => {
  t.is(squashOffLoopKind, native ? 'threadpool' : 'sliced');
  const loop = loopTurns();
  const out = await optimiseHtml(page100, settings);
  const seen = loop.count();
  loop.stop();
  t.true(seen > 0, 'optimiseHtml held the event loop for the whole squash');
  t.true(out.equals(impls[0]![1].squashHtml(page100)));

  const small = Buffer.from(htmlPage(squashOffLoopMin - 1024, 4));
  const quiet = loopTurns();
  const smallOut = await optimiseHtml(small, settings);
  t.is(quiet.count(), 0, 'a small page is squashed in one call');
  quiet.stop();
  t.true(smallOut.equals(impls[0]![1].squashHtml(small)));
});

test.serial('over HTTP: a 100 MiB page squashed off the loop arrives as squashHtml makes it', async (t) => {
  const app = new Koa();
  app.use(buffer({ optimiseContent: 1, lastModified: false }));
  app.use((ctx) => {
    ctx.type = 'html';
    ctx.body = page100;
  });
  const server = await serve(t, app);
  const response = await server.request('/', { headers: { 'accept-encoding': 'identity' } });
  t.is(response.status, 200);
  t.true(response.body.equals(impls[0]![1].squashHtml(page100)));
});

test('largeBuffer: a Buffer of the size asked for, from the addon when it has one; bad sizes refused', (t) => {
  for (const size of [1, 4096, 5 * MiB]) {
    const bytes = largeBuffer(size);
    t.true(Buffer.isBuffer(bytes));
    t.is(bytes.length, size);
    bytes.fill(7);
    t.is(bytes[size - 1], 7);
  }
  t.is(largeBuffer(0).length, 0);
  const raw = (addon as unknown as { largeBuffer?: (size: unknown) => Buffer } | undefined)?.largeBuffer;
  if (!raw) return;
  for (const bad of [0, -1, 1.5, Number.NaN, '8', 2 ** 53 + 2]) {
    t.throws(() => raw(bad), {
      code: 'ERR_INVALID_ARG_TYPE',
      message: /^The "size" argument must be a positive integer/,
    });
  }
});
