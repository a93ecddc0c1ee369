/**
 * A compression dictionary is shared: every browser that later names it is
 * answered with it, in every process and host of the store. So only what a
 * shared cache could keep may become one. Before this, a `private,
 * no-store` response that set a cookie, to a request with Authorization,
 * was written in plain text to Redis for 7 days and used by another
 * instance on another path; 6,000 uncached pages left 6,000 keys. Each
 * test here failed on that code.
 */
import test, { type ExecutionContext } from 'ava';
import type Koa from 'koa';
import { Redis } from 'ioredis';
import { buffer, type BufferMiddleware } from '../../src/buffer.ts';
import type { BufferOptions } from '../../src/config/options.ts';
import { sharedPerRule } from '../../src/encoding/dictionaries/keeper.ts';
import { readyStore } from '../helpers/store-ready.ts';
import { availableHeader, decodeDcz } from '../helpers/dcz.ts';
import { redisTest, useRedis } from '../helpers/redis.ts';
import { decode, serve, type Served } from '../helpers/serve.ts';

const page = (stamp: string): string =>
  `<!doctype html><title>t</title><p>${stamp}</p>${'<p>the same account paragraph on every version</p>'.repeat(300)}`;
const dcz = 'br, zstd, dcz';

/** A site whose action answers `page(path)`, with `respond` to shape the response. */
async function site(
  t: ExecutionContext,
  options: BufferOptions,
  respond: (ctx: Koa.Context) => void = () => undefined,
  outer?: Koa.Middleware,
): Promise<Served> {
  const middleware = buffer({ varyBy: [], lastModified: false, ...options });
  t.teardown(() => (middleware as BufferMiddleware).close());
  const stack: Koa.Middleware[] = [
    middleware,
    (ctx) => {
      ctx.type = 'html';
      ctx.body = page(ctx.path);
      respond(ctx);
    },
  ];
  return serve(t, outer ? [outer, ...stack] : stack);
}

async function dictionaryKeys(url: string): Promise<string[]> {
  const client = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 1 });
  await client.connect();
  try {
    return await client.keys('*{buffer:dictionary:*');
  } finally {
    client.disconnect();
  }
}

/**
 * The dictionary keys in Redis once at least `count` are there: a shared
 * write is made off the request's path, and a loaded machine can take longer
 * than any fixed wait. Gives up after 10 s and returns what is there.
 */
async function dictionaryKeysOnce(url: string, count: number): Promise<string[]> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const keys = await dictionaryKeys(url);
    if (keys.length >= count || Date.now() > deadline) return keys;
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** Asks `server` for `path` naming `dictionary`: the coding it answered with. */
async function codingWith(server: Served, path: string, dictionary: Buffer): Promise<string | undefined> {
  const response = await server.request(path, {
    headers: { 'accept-encoding': dcz, 'available-dictionary': availableHeader(dictionary) },
  });
  return response.headers['content-encoding'];
}

redisTest(
  'a private, no-store response that sets a cookie, to a request with Authorization, is never a dictionary, here or in Redis',
  async (t) => {
    const redis = await useRedis(t);
    const rules = [{ match: '/account/*', ttl: '7 days' }];
    const one = await site(t, { cache: await readyStore(t, redis.url), dictionaries: rules }, (ctx) => {
      ctx.set('Cache-Control', 'private, no-store');
      ctx.cookies.set('session', 'alice');
    });
    const offered = await one.request('/account/alice', {
      headers: { 'accept-encoding': dcz, authorization: 'Bearer alice' },
    });
    t.is(offered.headers['use-as-dictionary'], undefined, 'not offered');
    // Without Authorization, the same private page is not offered either: it sets a cookie and says private.
    const plain = await one.request('/account/alice', { headers: { 'accept-encoding': dcz } });
    t.is(plain.headers['use-as-dictionary'], undefined);
    await new Promise((resolve) => setTimeout(resolve, 200)); // a shared write is made off the request's path
    t.deepEqual(await dictionaryKeys(redis.url), [], 'nothing in Redis');
    t.not(await codingWith(one, '/account/bob', decode(plain)), 'dcz', 'nor used here');
  },
);

test('an outer middleware that sets a cookie after buffer() returns: the response loses Use-As-Dictionary and nothing is kept', async (t) => {
  const outer: Koa.Middleware = async (ctx, next) => {
    await next();
    if (ctx.query.visitor !== undefined) ctx.cookies.set('visitor', String(ctx.query.visitor));
  };
  const server = await site(t, { dictionaries: [{ match: '/news*' }] }, () => undefined, outer);
  const cookied = await server.request('/news?visitor=alice', { headers: { 'accept-encoding': dcz } });
  t.regex(cookied.headers['set-cookie'] ?? '', /^visitor=alice/);
  t.is(cookied.headers['use-as-dictionary'], undefined, 'the header went with the judgement');
  t.is(await codingWith(server, '/news?visitor=alice', decode(cookied)), 'zstd', 'not kept: the normal coding');
  // A response without the cookie is offered, and used.
  const plain = await server.request('/news', { headers: { 'accept-encoding': dcz } });
  t.is(plain.headers['use-as-dictionary'], 'match="/news*"');
  t.is(await codingWith(server, '/news2', decode(plain)), 'dcz');
});

test('a dictionary is used only for paths the rule that offered it matches', async (t) => {
  const server = await site(t, { dictionaries: [{ match: '/a/*' }, { match: '/b/*' }] });
  const fromA = decode(await server.request('/a/1', { headers: { 'accept-encoding': dcz } }));
  t.is(await codingWith(server, '/a/2', fromA), 'dcz', "within its rule's pattern");
  t.is(await codingWith(server, '/b/1', fromA), 'zstd', "never for another rule's");
});

redisTest(
  'another application on the same Redis, another pattern: a dictionary of one is never used by the other',
  async (t) => {
    const redis = await useRedis(t);
    const rule = { ttl: '1 hour' };
    const one = await site(t, { cache: await readyStore(t, redis.url), dictionaries: [{ match: '/a/*', ...rule }] });
    const two = await site(t, { cache: await readyStore(t, redis.url), dictionaries: [{ match: '/b/*', ...rule }] });
    const fromA = decode(await one.request('/a/1', { headers: { 'accept-encoding': dcz } }));
    t.is((await dictionaryKeysOnce(redis.url, 1)).length, 1, 'shared once');
    t.is(await codingWith(two, '/b/1', fromA), 'zstd');
    const twin = await site(t, { cache: await readyStore(t, redis.url), dictionaries: [{ match: '/a/*', ...rule }] });
    const response = await twin.request('/a/2', {
      headers: { 'accept-encoding': dcz, 'available-dictionary': availableHeader(fromA) },
    });
    t.is(response.headers['content-encoding'], 'dcz', 'the same rule elsewhere finds it');
    t.is(decodeDcz(response.body, fromA).toString(), page('/a/2'));
  },
);

redisTest(
  "a shared copy lives no longer than the rule's ttl, and without a ttl or freshness it is not shared at all",
  async (t) => {
    const redis = await useRedis(t);
    const withTtl = await site(t, {
      cache: await readyStore(t, redis.url),
      dictionaries: [{ match: '/ttl/*', ttl: 600 }],
    });
    await withTtl.request('/ttl/1', { headers: { 'accept-encoding': dcz } });
    const fresh = await site(
      t,
      { cache: await readyStore(t, redis.url), dictionaries: [{ match: '/fresh/*' }] },
      (ctx) => ctx.set('Cache-Control', 'max-age=120'),
    );
    await fresh.request('/fresh/1', { headers: { 'accept-encoding': dcz } });
    const bare = await site(t, { cache: await readyStore(t, redis.url), dictionaries: [{ match: '/bare/*' }] });
    await bare.request('/bare/1', { headers: { 'accept-encoding': dcz } });
    const keys = await dictionaryKeysOnce(redis.url, 2);
    const client = new Redis(redis.url, { maxRetriesPerRequest: 1 });
    t.teardown(() => client.disconnect());
    t.is(keys.length, 2, 'the rule with a ttl and the fresh page; not the bare one');
    const ttls = (await Promise.all(keys.map((key) => client.pttl(key)))).sort((a, b) => a - b);
    t.true(ttls[0]! > 0 && ttls[0]! <= 120_000, `the fresh page's copy lives its max-age (${ttls[0]} ms)`);
    t.true(ttls[1]! > 120_000 && ttls[1]! <= 600_000, `the rule's copy lives its ttl (${ttls[1]} ms)`);
  },
);

redisTest('many distinct pages: each process keeps a bounded number of shared dictionaries per rule', async (t) => {
  const redis = await useRedis(t);
  const server = await site(t, {
    cache: await readyStore(t, redis.url),
    dictionaries: [{ match: '/p/*', ttl: '1 hour', keep: 1 }],
  });
  const pages = sharedPerRule + 40;
  for (let i = 0; i < pages; i++) await server.request(`/p/${i}`, { headers: { 'accept-encoding': dcz } });
  await new Promise((resolve) => setTimeout(resolve, 300));
  const keys = await dictionaryKeys(redis.url);
  t.true(keys.length <= sharedPerRule, `${keys.length} keys for ${pages} pages, at most ${sharedPerRule}`);
  // Private pages, however many, leave none.
  const before = keys.length;
  const secret = await site(
    t,
    { cache: await readyStore(t, redis.url), dictionaries: [{ match: '/s/*', ttl: '1 hour' }] },
    (ctx) => ctx.set('Cache-Control', 'private'),
  );
  for (let i = 0; i < 200; i++) await secret.request(`/s/${i}`, { headers: { 'accept-encoding': dcz } });
  await new Promise((resolve) => setTimeout(resolve, 300));
  t.is((await dictionaryKeys(redis.url)).length, before, 'no key for a private page');
});
