/**
 * Lifetimes too large to represent (RFC 9111 1.2.2: a delta-seconds value
 * beyond the greatest integer a cache can represent is taken as 2^31):
 * every store accepts the entry's TTL, and Cache-Status shows an integer
 * `ttl=`, whether the value came from the response's Cache-Control, the
 * options or `ctx.bufferIsCached({cacheDuration})`; so does the
 * templateMtimeCache. Real stores: the memory
 * store, a SQLite file and a real Redis.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test, { type ExecutionContext } from 'ava';
import type Koa from 'koa';
import { cacheControlSeconds, lifetimeOf, maxDeltaSeconds, storeMs } from '../../src/cache/lifetime.ts';
import { builtinMessages } from '../../src/base/messages.ts';
import { buffer } from '../../src/buffer.ts';
import type { BufferOptions } from '../../src/config/options.ts';
import { newestMtimeMs } from '../../src/http/last-modified.ts';
import { logOnFailure } from '../helpers/log-on-failure.ts';
import { redisSkipReason, useRedis } from '../helpers/redis.ts';
import { recordingLogger, serve } from '../helpers/serve.ts';

const huge = '99999999999999999999';
const none = { cacheDuration: 600, cacheStaleWhileRevalidate: 0, cacheStaleIfError: 0 };

test('delta-seconds beyond 2^31 are taken as 2^31, and the store time is a whole number of ms', (t) => {
  t.is(maxDeltaSeconds, 2 ** 31);
  const seconds = cacheControlSeconds(`s-maxage=${huge}, max-age=2147483649, stale-if-error="${huge}"`);
  t.is(seconds.get('s-maxage'), 2 ** 31);
  t.is(seconds.get('max-age'), 2 ** 31);
  t.is(seconds.get('stale-if-error'), 2 ** 31);
  t.is(cacheControlSeconds('max-age=2147483648').get('max-age'), 2 ** 31, '2^31 itself');
  t.is(cacheControlSeconds('max-age=2147483647').get('max-age'), 2 ** 31 - 1, 'below it, as given');
  const lifetime = lifetimeOf({ 'cache-control': `s-maxage=${huge}, stale-while-revalidate=${huge}` }, none);
  t.deepEqual(lifetime, { ttl: 2 ** 31, staleWhileRevalidate: 2 ** 31, staleIfError: 0 });
  const ms = storeMs(lifetime);
  t.true(Number.isSafeInteger(ms), `${ms} is an integer`);
  t.is(ms, 2 * 2 ** 31 * 1000);
  const fromOptions = lifetimeOf(
    {},
    {
      cacheDuration: 1e20,
      cacheStaleWhileRevalidate: 1e300,
      cacheStaleIfError: 0.5,
    },
  );
  t.deepEqual(fromOptions, { ttl: 2 ** 31, staleWhileRevalidate: 2 ** 31, staleIfError: 0.5 });
  t.true(Number.isSafeInteger(storeMs(fromOptions)));
  t.is(storeMs({ ttl: 1e300, staleWhileRevalidate: 0, staleIfError: Number.MAX_VALUE }), 2 * 2 ** 31 * 1000);
  t.is(
    storeMs({ ttl: 1e300, staleWhileRevalidate: 0, staleIfError: 0 }, 1e300),
    2 * 2 ** 31 * 1000,
    'the revalidation window too',
  );
});

const stores: Record<string, { skip?: string; cache(t: ExecutionContext): Promise<string | true> }> = {
  memory: { cache: async () => true },
  SQLite: {
    async cache(t) {
      const dir = mkdtempSync(join(tmpdir(), 'kb-huge-ttl-'));
      t.teardown(() => rmSync(dir, { recursive: true, force: true }));
      return `sqlite:${join(dir, 'cache.sqlite')}`;
    },
  },
  Redis: { skip: redisSkipReason, cache: async (t) => (await useRedis(t)).url },
};

/** Where the huge lifetime comes from. */
const sources: Record<string, { options?: BufferOptions; action: Koa.Middleware }> = {
  [`Cache-Control: s-maxage=${huge}`]: {
    action: async (ctx) => {
      if (await ctx.bufferIsCached()) return;
      ctx.set('Cache-Control', `public, s-maxage=${huge}, stale-while-revalidate=${huge}`);
      ctx.type = 'html';
      ctx.body = '<!doctype html><p>kept a very long time</p>';
    },
  },
  // Written with a unit: a bare number that large reads like milliseconds and is refused.
  'the cacheDuration option of 1e20 seconds': {
    options: { cacheDuration: `${huge} seconds`, cacheStaleIfError: `${huge} seconds` },
    action: async (ctx) => {
      if (await ctx.bufferIsCached()) return;
      ctx.type = 'html';
      ctx.body = '<!doctype html><p>kept a very long time</p>';
    },
  },
  "bufferIsCached({ cacheDuration: '1e20 days' })": {
    action: async (ctx) => {
      if (await ctx.bufferIsCached({ cacheDuration: `${huge} days` })) return;
      ctx.type = 'html';
      ctx.body = '<!doctype html><p>kept a very long time</p>';
    },
  },
};

for (const [storeName, store] of Object.entries(stores)) {
  for (const [source, { options, action }] of Object.entries(sources)) {
    const title = `${storeName} store, ${source}: stored, and hits say an integer ttl of at most 2^31`;
    if (store.skip !== undefined) {
      test.skip(`${title} (skipped: ${store.skip})`, () => undefined);
      continue;
    }
    test(title, async (t) => {
      const log = recordingLogger();
      logOnFailure(t, () => log.lines.map((l) => `${l.level} ${l.message}`).join('\n'));
      const cache = await store.cache(t);
      const middleware = buffer({ cache, varyBy: [], logger: log, ...options });
      t.teardown(() => middleware.close());
      const server = await serve(t, [middleware, action]);
      const first = await server.request('/long');
      t.is(first.headers['cache-status'], 'koa-buffer; fwd=miss; stored', 'the store took the entry');
      const hit = await server.request('/long');
      t.is(hit.headers['x-cache'], 'HIT');
      const ttl = /; ttl=(\d+)$/.exec(hit.headers['cache-status'] ?? '')?.[1];
      t.truthy(ttl, `an integer ttl in ${hit.headers['cache-status']}`);
      t.true(Number(ttl) <= 2 ** 31 && Number(ttl) > 2 ** 31 - 60, `ttl=${ttl}`);
      t.deepEqual(
        log.lines.filter((l) => l.level === 'error'),
        [],
      );
    });
  }
}

test('a templateMtimeCacheDuration of 1e20 seconds reaches the templateMtimeCache as a whole number of ms, at most 2^31 s', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'kb-huge-mtime-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const ttls: unknown[] = [];
  const cache = { get: () => undefined, set: (_key: string, _value: number, ttlMs?: number) => void ttls.push(ttlMs) };
  const log = recordingLogger();
  await newestMtimeMs({
    templatePaths: [dir],
    templateMtimeCache: cache,
    templateMtimeCacheDuration: 1e20,
    logger: log,
    messages: builtinMessages,
  });
  t.deepEqual(ttls, [2 ** 31 * 1000]);
});
