/**
 * koa-cash's own test cases, ported to koa-buffer's server-side cache.
 *
 * Source: https://github.com/koajs/cash, test/test.js at commit
 * 0a30f74ef34dc0c8b8ddfd554a0feff55738b144; each case keeps its name.
 * `cash({get, set})` + `ctx.cashed()` become `buffer({cache})` +
 * `ctx.bufferIsCached()`, with the same lru-cache as the store. koa-buffer
 * keeps its own entry format under its own key, so where the original read
 * `c.get('/').body`, the port checks that exactly one entry was stored and
 * that the next request is answered from it without running the action.
 * Where koa-buffer answers differently on purpose, the test asserts its
 * answer and says "difference:"; docs/migration.md's table gives the reason.
 */
import { PassThrough } from 'node:stream';
import test from 'ava';
import type { Context } from 'koa';
import { LRUCache } from 'lru-cache';
import { decodeEntry } from '../../../src/cache/entry.ts';
import { buffer } from '../../../src/buffer.ts';
import type { BufferOptions } from '../../../src/config/options.ts';
import { decode, serve } from '../../helpers/serve.ts';

/**
 * The original suite's store: an lru-cache behind koa-cash's get/set, here the
 * Keyv-style get/set(key, value, ttlMs)/delete koa-buffer calls.
 */
function lruStore(c: LRUCache<string, object>) {
  return {
    get: (key: string) => c.get(key),
    set: (key: string, value: object, ttlMs?: number) => c.set(key, value, ttlMs ? { ttl: ttlMs } : {}),
    delete: (key: string) => c.delete(key),
  };
}

/**
 * The cache entries in `c` (difference: a successful POST also records the purge of its URL, as RFC 9111
 * 4.4 asks of a shared cache; those records, `buffer:purge:…`, are not entries).
 */
function entries(c: LRUCache<string, object>): number {
  return [...c.keys()].filter((key) => !key.startsWith('buffer:purge:')).length;
}

/** An app whose action counts its runs; the store is an lru-cache, as in the original suite. */
async function app(t: Parameters<typeof serve>[0], action: (ctx: Context) => void, options: BufferOptions = {}) {
  const c = new LRUCache<string, object>({ max: 100 });
  let runs = 0;
  const server = await serve(t, [
    buffer({ cache: lruStore(c), ...options }),
    async (ctx) => {
      if (await ctx.bufferIsCached()) return;
      runs++;
      action(ctx);
    },
  ]);
  return { server, c, runs: () => runs };
}

test('when not cached should pass the maxAge through ctx.state.buffer (difference: cacheDuration in seconds, not maxAge in ms)', async (t) => {
  const c = new LRUCache<string, object>({ max: 100 });
  const ttls: Array<number | undefined> = [];
  const store = {
    get: (key: string) => c.get(key),
    set: (key: string, value: object, ttlMs?: number) => {
      ttls.push(ttlMs);
      return c.set(key, value);
    },
    delete: (key: string) => c.delete(key),
  };
  const server = await serve(t, [
    buffer({ cache: store }),
    async (ctx) => {
      if (await ctx.bufferIsCached()) return;
      ctx.state.buffer = { cacheDuration: 300 }; // koa-cash: ctx.cash = { maxAge: 300 } (milliseconds)
      ctx.body = 'lol';
    },
  ]);
  const response = await server.request('/');
  t.is(response.body.toString(), 'lol');
  t.is(c.size, 1);
  t.true(
    ttls.some((ttl) => ttl !== undefined && ttl >= 300_000),
    `the store is told 300 s in ms: ${ttls.join(', ')}`,
  );
});

for (const [what, body, expected] of [
  ['a string', () => 'lol', 'lol'],
  ['a buffer', () => Buffer.from('lol'), 'lol'],
  ['JSON', () => ({ message: 'hi' }), '{"message":"hi"}'],
] as const) {
  test(`when not cached when the body is ${what} should cache the response`, async (t) => {
    const { server, c, runs } = await app(t, (ctx) => {
      ctx.body = body();
    });
    t.is((await server.request('/')).body.toString(), expected);
    t.is(c.size, 1);
    const again = await server.request('/');
    t.is(again.body.toString(), expected);
    t.is(runs(), 1, 'the second request is answered from the cache');
  });
}

test('when not cached when the body is a stream should cache the response (difference: a stream is streamed, not stored)', async (t) => {
  const { server, c, runs } = await app(t, (ctx) => {
    const stream = new PassThrough();
    ctx.body = stream;
    stream.end('lol');
  });
  t.is(decode(await server.request('/')).toString(), 'lol');
  // At most a hit-for-miss marker (no entry): storing would read the whole stream into memory.
  t.is([...c.values()].filter((v) => decodeEntry(v) !== undefined).length, 0, 'no entry is stored');
  await server.request('/');
  t.is(runs(), 2);
});

test('when not cached when the type is compressible should compress the body', async (t) => {
  const { server, c } = await app(t, (ctx) => {
    ctx.response.type = 'text/plain';
    ctx.body = Buffer.alloc(2048);
  });
  const response = await server.request('/', { headers: { 'accept-encoding': 'gzip' } });
  t.is(response.headers['content-encoding'], 'gzip');
  t.is(response.status, 200);
  t.is(c.size, 1);
  const hit = await server.request('/', { headers: { 'accept-encoding': 'gzip' } });
  t.is(hit.headers['content-encoding'], 'gzip', 'a hit is compressed too');
  t.true(decode(hit).equals(Buffer.alloc(2048)));
});

test('when not cached when the type is not compressible should not compress the body (difference: no "Content-Encoding: identity" header)', async (t) => {
  const { server, c } = await app(t, (ctx) => {
    ctx.response.type = 'image/png';
    ctx.body = Buffer.alloc(2048);
  });
  const response = await server.request('/', { headers: { 'accept-encoding': 'gzip' } });
  t.is(response.status, 200);
  t.is(response.headers['content-encoding'], undefined);
  t.is(response.headers['content-type'], 'image/png');
  t.is(c.size, 1);
});

test('when not cached when the body is below the threshold should not compress the body (difference: no "Content-Encoding: identity" header)', async (t) => {
  const { server, c } = await app(t, (ctx) => {
    ctx.body = 'lol';
  });
  const response = await server.request('/', { headers: { 'accept-encoding': 'gzip' } });
  t.is(response.headers['content-encoding'], undefined);
  t.is(response.body.toString(), 'lol');
  t.is(response.headers['content-type'], 'text/plain; charset=utf-8');
  t.is(c.size, 1);
});

test('when not cached when the method is HEAD should cache the response', async (t) => {
  const { server, c, runs } = await app(t, (ctx) => {
    ctx.body = 'lol';
  });
  const head = await server.request('/', { method: 'HEAD' });
  t.is(head.status, 200);
  t.is(head.body.length, 0);
  t.is(c.size, 1);
  t.is((await server.request('/')).body.toString(), 'lol');
  t.is(runs(), 1, 'the GET after it is a hit');
});

test('when not cached when the method is POST should not cache the response', async (t) => {
  const { server, c } = await app(t, (ctx) => {
    ctx.body = 'lol';
  });
  const response = await server.request('/', { method: 'POST' });
  t.is(response.body.toString(), 'lol');
  t.is(response.status, 200);
  t.is(entries(c), 0);
});

test('when not cached when the response code is not 200 should not cache the response', async (t) => {
  const { server, c } = await app(t, (ctx) => {
    ctx.body = 'lol';
    ctx.status = 201;
  });
  const response = await server.request('/', { method: 'POST' });
  t.is(response.body.toString(), 'lol');
  t.is(response.status, 201);
  t.is(entries(c), 0);
});

const date = Math.round(Date.now() / 1000);
const tagged = (ctx: Context): void => {
  ctx.body = 'lol';
  ctx.etag = 'lol';
  ctx.lastModified = new Date(date * 1000);
};

test('when not cached when etag and last-modified headers are set should cache those values', async (t) => {
  const { server, c, runs } = await app(t, tagged);
  t.is((await server.request('/')).body.toString(), 'lol');
  t.is(c.size, 1);
  const hit = await server.request('/');
  t.is(runs(), 1);
  t.is(hit.headers.etag, '"lol"');
  t.is(hit.headers['last-modified'], new Date(date * 1000).toUTCString());
});

test('when not cached when the response is fresh should return a 304', async (t) => {
  const { server } = await app(t, tagged);
  const response = await server.request('/', { headers: { 'if-none-match': '"lol"' } });
  t.is(response.status, 304);
  t.is(response.body.length, 0);
});

test('when cached when the method is GET should serve from cache (difference: no "Content-Encoding: identity" header)', async (t) => {
  let built = false;
  const { server } = await app(t, (ctx) => {
    if (built) throw new Error('wtf');
    built = true;
    tagged(ctx);
  });
  await server.request('/');
  const response = await server.request('/');
  t.is(response.status, 200);
  t.is(response.headers['content-encoding'], undefined);
  t.is(response.headers.etag, '"lol"');
  t.is(response.body.toString(), 'lol');
});

test('when cached when the method is POST should not serve from cache', async (t) => {
  const c = new LRUCache<string, object>({ max: 100 });
  const server = await serve(t, [
    buffer({ cache: lruStore(c) }),
    async (ctx) => {
      if (await ctx.bufferIsCached()) throw new Error('wtf');
      tagged(ctx);
    },
  ]);
  t.is((await server.request('/')).status, 200);
  t.is(c.size, 1);
  t.is((await server.request('/', { method: 'POST' })).status, 200);
});

test('when cached when the response is fresh should 304', async (t) => {
  let built = false;
  const { server } = await app(t, (ctx) => {
    if (built) throw new Error('wtf');
    built = true;
    tagged(ctx);
  });
  await server.request('/');
  const response = await server.request('/', { headers: { 'if-none-match': '"lol"' } });
  t.is(response.status, 304);
});
