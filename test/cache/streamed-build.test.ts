/**
 * A streamed page that `bufferIsCached()` marked as a miss is stored when
 * its stream ends, and its hits are answered whole. Attacks first: a source
 * that fails midway, a client that leaves, a body over `cacheMaxSize` and an
 * outer middleware that sets a cookie after the action must each leave
 * nothing in the store, so no visitor is ever handed a truncated page or
 * another visitor's.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { PassThrough } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import zlib from 'node:zlib';
import test, { type ExecutionContext } from 'ava';
import Koa from 'koa';
import { buffer } from '../../src/buffer.ts';
import type { BufferOptions } from '../../src/config/options.ts';

const shell = `<!doctype html><html><head><title>Report</title></head><body><h1>${'Report '.repeat(40)}</h1>`;
const rest = `<p>${'slow part '.repeat(300)}</p></body></html>`;

interface Answer {
  status: number;
  headers: http.IncomingHttpHeaders;
  text: string;
  complete: boolean;
}

/**
 * An app whose `/page` streams the shell, then (after `gap` ms) the rest,
 * or fails midway when asked (`?fail`); `builds` counts the actions that
 * rendered. Outer middleware, when given, runs outside buffer().
 * `gap: 'after-close'` makes the first build write the rest only once the
 * server has seen its client leave: a source that ended whole before that
 * was noticed (a busy machine can take longer than any fixed gap) is a whole
 * page, rightly stored.
 */
async function app(
  t: ExecutionContext,
  options: BufferOptions = {},
  outer?: Koa.Middleware,
  gap: number | 'after-close' = 30,
) {
  const counts = { builds: 0 };
  const koa = new Koa();
  koa.on('error', () => {}); // a failing source is the point of some tests
  if (outer) koa.use(outer);
  koa.use(buffer({ cache: true, ...options }));
  koa.use(async (ctx) => {
    if (await ctx.bufferIsCached()) return;
    counts.builds += 1;
    const source = new PassThrough();
    ctx.type = 'html';
    ctx.body = source;
    source.write(shell);
    const finish = (): void => {
      if (ctx.query.fail !== undefined) source.destroy(new Error('the database went away'));
      else if (!source.destroyed) source.end(rest);
    };
    if (gap === 'after-close' && counts.builds === 1) ctx.res.once('close', () => setImmediate(finish));
    else setTimeout(finish, gap === 'after-close' ? 30 : gap);
  });
  const server = koa.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const { port } = server.address() as AddressInfo;
  const get = (path: string, coding = 'br', leaveAfterFirstChunk = false): Promise<Answer> =>
    new Promise((resolve) => {
      const request = http.get(
        { port, host: '127.0.0.1', path, headers: { 'accept-encoding': coding } },
        (response) => {
          const chunks: Buffer[] = [];
          const finish = (complete: boolean) => {
            const raw = Buffer.concat(chunks);
            const coded = response.headers['content-encoding'];
            let text = '';
            try {
              text = (
                coded === 'br' ? zlib.brotliDecompressSync(raw) : coded === 'gzip' ? zlib.gunzipSync(raw) : raw
              ).toString();
            } catch {
              text = '(undecodable)';
            }
            resolve({ status: response.statusCode!, headers: response.headers, text, complete });
          };
          response.on('data', (chunk: Buffer) => {
            chunks.push(chunk);
            if (leaveAfterFirstChunk) {
              request.destroy();
              finish(false);
            }
          });
          response.on('end', () => finish(true));
          response.on('error', () => finish(false));
          response.on('aborted', () => finish(false));
        },
      );
      // A response cut short before its head arrives is an answer too: nothing, and not complete.
      request.on('error', () => resolve({ status: 0, headers: {}, text: '', complete: false }));
    });
  return { get, counts };
}

test('a streamed miss is stored when it ends; its hit is answered whole, with Content-Length and an MD5 ETag', async (t) => {
  const { get, counts } = await app(t);
  const built = await get('/page');
  t.is(built.headers['x-cache'], 'MISS');
  t.is(built.headers['content-length'], undefined, 'the build itself streamed');
  t.is(built.text, shell + rest);
  await sleep(20);
  for (const coding of ['br', 'gzip', 'identity']) {
    const hit = await get('/page', coding);
    t.is(hit.headers['x-cache'], 'HIT', coding);
    t.is(hit.text, shell + rest, `${coding}: the whole page`);
    t.truthy(hit.headers['content-length'], `${coding}: sent whole`);
    t.regex(String(hit.headers.etag), /^"[0-9a-f]{32}/, `${coding}: an MD5 ETag`);
  }
  t.is(counts.builds, 1);
});

test('waiters of a streamed build are answered from it when it ends', async (t) => {
  const { get, counts } = await app(t, {}, undefined, 150);
  const answers = await Promise.all([
    get('/page'),
    sleep(40).then(() => get('/page')),
    sleep(60).then(() => get('/page')),
  ]);
  for (const answer of answers) t.is(answer.text, shell + rest);
  t.is(counts.builds, 1, 'one build for three requests');
  t.deepEqual(
    answers.slice(1).map((a) => a.headers['cache-status']?.includes('collapsed')),
    [true, true],
  );
});

test('a source that fails midway is never stored: the next request builds again', async (t) => {
  const { get, counts } = await app(t);
  const failed = await get('/page?fail');
  t.false(failed.complete && failed.text === shell + rest, 'the failed response is not a whole page');
  await sleep(20);
  // The same key, now without the failure: the query is part of the key, so ask the failing URL again.
  const again = await get('/page?fail');
  // Not a hit, and built again. (Its own head may never arrive: on a busy machine the failure can come before
  // the first compressed bytes, and the response is cut short with nothing sent.)
  t.not(again.headers['x-cache'], 'HIT', 'nothing was stored from the truncated stream');
  t.is(counts.builds, 2);
});

test('a client that leaves midway stores nothing', async (t) => {
  const { get, counts } = await app(t, {}, undefined, 'after-close');
  await get('/page', 'br', true);
  await sleep(50);
  const next = await get('/page');
  t.is(next.headers['x-cache'], 'MISS');
  t.is(next.text, shell + rest);
  t.is(counts.builds, 2);
});

test('a stream longer than cacheMaxSize is sent whole and not stored', async (t) => {
  const { get, counts } = await app(t, { cacheMaxSize: 1000 });
  const first = await get('/page');
  t.is(first.text, shell + rest);
  t.regex(String(first.headers['cache-status']), /TOO-LARGE|fwd=miss/);
  await sleep(20);
  const second = await get('/page');
  t.not(second.headers['x-cache'], 'HIT');
  t.is(counts.builds, 2);
});

test('an outer middleware that sets a cookie after the action keeps the streamed page out of the store', async (t) => {
  let visitor = 0;
  const session: Koa.Middleware = async (ctx, next) => {
    await next();
    visitor += 1;
    ctx.cookies.set('csrf', `token-of-visitor-${visitor}`);
  };
  const { get, counts } = await app(t, {}, session);
  const alice = await get('/page');
  t.regex(String(alice.headers['set-cookie']), /visitor-1/);
  await sleep(20);
  const bob = await get('/page');
  t.not(bob.headers['x-cache'], 'HIT', "Alice's page is not Bob's hit");
  t.regex(String(bob.headers['set-cookie']), /visitor-2/);
  t.is(counts.builds, 2);
});

test('a private streamed response is not stored, and its waiters run the action', async (t) => {
  const privately: Koa.Middleware = async (ctx, next) => {
    await next();
    ctx.set('Cache-Control', 'private');
  };
  const { get, counts } = await app(t, {}, privately);
  await get('/page');
  await sleep(20);
  const next = await get('/page');
  t.not(next.headers['x-cache'], 'HIT');
  t.is(counts.builds, 2);
});
