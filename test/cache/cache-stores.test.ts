/**
 * Every store a user would hand to `cache`, over real HTTP: an lru-cache
 * LRUCache (its set takes {ttl}), a Keyv, an ioredis Redis client on a real
 * redis-server; any other object is probed once at start-up and refused
 * with a BufferOptionError naming what is wrong. And the in-memory store's
 * byte budget, cacheMemoryBytes.
 */
import test, { type ExecutionContext } from 'ava';
import { Redis } from 'ioredis';
import Keyv from 'keyv';
import { LRUCache } from 'lru-cache';
import { BufferOptionError } from '../../src/base/errors.ts';
import { buffer } from '../../src/buffer.ts';
import type { BufferOptions } from '../../src/config/options.ts';
import { htmlPage, recordingLogger, serve, type Served } from '../helpers/serve.ts';
import { redisTest, useRedis } from '../helpers/redis.ts';

const page = htmlPage(8 * 1024, 2);

async function site(t: ExecutionContext, options: BufferOptions): Promise<{ server: Served; runs: () => number }> {
  let runs = 0;
  const server = await serve(t, [
    buffer({ varyBy: [], ...options }),
    async (ctx) => {
      if (await ctx.bufferIsCached()) return;
      runs++;
      ctx.type = 'html';
      ctx.body = page;
    },
  ]);
  return { server, runs: () => runs };
}

async function missThenHit(t: ExecutionContext, server: Served, path = '/'): Promise<void> {
  const miss = await server.request(path);
  t.is(miss.headers['cache-status'], 'koa-buffer; fwd=miss; stored', `${path} stored`);
  const hit = await server.request(path);
  t.is(hit.headers['x-cache'], 'HIT', `${path} hit`);
  t.is(hit.body.toString(), page);
}

test('new LRUCache({ max: 100 }) is a store: entries stored with their ttl, then hits', async (t) => {
  const lru = new LRUCache<string, Buffer>({ max: 100 });
  const { server, runs } = await site(t, { cache: lru, cacheDuration: 60 });
  await missThenHit(t, server);
  t.is(runs(), 1);
  t.is(lru.size, 1);
  const key = [...lru.keys()][0]!;
  const ttl = lru.getRemainingTTL(key);
  t.true(ttl > 50_000 && ttl <= 60_000, `the entry lives cacheDuration in the LRUCache (${ttl} ms)`);
});

test('an LRUCache bounded by maxSize without a sizeCalculation is told each entry’s size', async (t) => {
  const lru = new LRUCache<string, Buffer>({ maxSize: 1024 * 1024 });
  const { server } = await site(t, { cache: lru });
  await missThenHit(t, server);
  t.true(lru.calculatedSize > page.length, 'sized by its bytes');
});

test('a Keyv instance is a store', async (t) => {
  const keyv = new Keyv();
  const { server, runs } = await site(t, { cache: keyv });
  await missThenHit(t, server);
  t.is(runs(), 1);
});

redisTest('an ioredis Redis client is a store, and stays open and the user’s', async (t) => {
  const redis = await useRedis(t);
  const client = new Redis(redis.url);
  t.teardown(() => client.disconnect());
  const middleware = buffer({ cache: client, varyBy: [] });
  const server = await serve(t, [
    middleware,
    async (ctx) => {
      if (await ctx.bufferIsCached()) return;
      ctx.type = 'html';
      ctx.body = page;
    },
  ]);
  await missThenHit(t, server);
  const keys = await client.keys('koa-buffer:cache:*');
  t.is(keys.length, 1, 'one entry, under the store namespace');
  t.true((await client.pttl(keys[0]!)) > 0, 'with a TTL');
  await middleware.close();
  t.is(await client.ping(), 'PONG', 'close() leaves the client of the user open');
});

test('an object that cannot keep an entry is refused at start-up, naming what is wrong', (t) => {
  const number = { get: () => 1, set: () => true, delete: () => true };
  const noDelete = { get: () => undefined, set: () => true };
  const throwing = {
    get: () => undefined,
    set: (_key: string, _value: unknown, ttl: unknown) => {
      (ttl as { status?: number }).status = 1; // lru-cache's own set does this with its options argument
    },
    delete: () => true,
  };
  const cases: Array<[object, RegExp]> = [
    [number, /cache store refused: get\(\) did not return what set\(key, bytes, ttlMs\) stored \(it returned number\)/],
    [throwing, /cache store refused: set\(\) failed: /],
  ];
  for (const [store, message] of cases) {
    const error = t.throws(() => buffer({ cache: store }), { instanceOf: BufferOptionError });
    t.is(error?.key, 'option_cache_store');
    t.regex(error!.message, message);
  }
  const error = t.throws(() => buffer({ cache: noDelete as never }), { instanceOf: BufferOptionError });
  t.is(error?.key, 'option_cache', 'no delete(): refused with the other option checks');
  t.regex(error!.message, /a store with get\(\), set\(\) and delete\(\)/);
  t.notThrows(() => buffer({ cache: new Map() }), 'a Map keeps entries');
});

test('an asynchronous store that cannot keep an entry is refused when the probe answers: logged, then bypassed', async (t) => {
  const log = recordingLogger();
  const forgetful = { get: async () => null, set: async () => true, delete: async () => true };
  const { server, runs } = await site(t, { cache: forgetful, logger: log });
  await new Promise((resolve) => setTimeout(resolve, 50));
  const response = await server.request('/');
  t.is(response.headers['cache-status'], 'koa-buffer; fwd=bypass; detail=STORE-ERROR');
  t.is(runs(), 1);
  t.true(log.lines.some((l) => l.level === 'error' && l.message.includes('cannot keep entries: get() did not return')));
});

test('cacheMemoryBytes bounds the in-memory store', async (t) => {
  const { server, runs } = await site(t, { cache: true, cacheMemoryBytes: 20 * 1024 });
  for (const path of ['/a', '/b', '/c']) await server.request(path);
  t.is(runs(), 3);
  t.is((await server.request('/c')).headers['x-cache'], 'HIT', 'the newest is kept');
  t.is((await server.request('/a')).headers['x-cache'], 'MISS', 'the oldest went to stay within 20 KiB');
  for (const value of [0, -1, 1.5, '1mb']) {
    const error = t.throws(() => buffer({ cache: true, cacheMemoryBytes: value as number }), {
      instanceOf: BufferOptionError,
    });
    t.is(error?.key, 'option_cache_memory_bytes');
  }
});
