/**
 * cacheRequestNoCache over real HTTP: what a request's own `Cache-Control:
 * no-cache` (and no-store, private, max-age=0, `Pragma: no-cache`) does to
 * the server cache and its stampede protection. The stampede tests send 50
 * concurrent no-cache requests and count the builds; builds are held until
 * all 50 have reached the server, so every one of them overlaps the first.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import test, { type ExecutionContext } from 'ava';
import { BufferOptionError } from '../../src/base/errors.ts';
import { buffer } from '../../src/buffer.ts';
import type { BufferOptions } from '../../src/config/options.ts';
import { serve, type RawResponse, type Served } from '../helpers/serve.ts';

interface Site {
  server: Served;
  builds: () => number;
  /** Requests that reached the server (counted before buffer()). */
  arrived: () => number;
  /** Makes builds wait until release(). */
  hold: () => void;
  release: () => void;
}

/** A cached page whose body names the build that made it. */
async function site(t: ExecutionContext, options: BufferOptions): Promise<Site> {
  let builds = 0;
  let arrived = 0;
  let gate: Promise<void> = Promise.resolve();
  let open: () => void = () => {};
  const server = await serve(t, [
    async (_ctx, next) => {
      arrived++;
      await next();
    },
    buffer({ cache: true, varyBy: [], ...options }),
    async (ctx) => {
      if (await ctx.bufferIsCached()) return;
      const build = ++builds;
      await gate;
      ctx.type = 'html';
      ctx.body = `<!doctype html><p>build ${build}</p>`;
    },
  ]);
  return {
    server,
    builds: () => builds,
    arrived: () => arrived,
    hold: () => {
      gate = new Promise((resolve) => (open = resolve));
    },
    release: () => open(),
  };
}

const noCache = { headers: { 'cache-control': 'no-cache' } };

/** 50 concurrent no-cache requests; held builds go on once all 50 have arrived. */
async function stampede(site: Site): Promise<RawResponse[]> {
  const target = site.arrived() + 50;
  site.hold();
  const all = Promise.all(Array.from({ length: 50 }, () => site.server.request('/', noCache)));
  const deadline = Date.now() + 20_000;
  while (site.arrived() < target && Date.now() < deadline) await sleep(5);
  site.release();
  return all;
}

const bodies = (responses: RawResponse[]): string[] => [...new Set(responses.map((r) => r.body.toString()))];

test('ignore (the default): 50 concurrent no-cache requests on a cold page build it once', async (t) => {
  const s = await site(t, {});
  const responses = await stampede(s);
  t.is(s.builds(), 1);
  t.true(responses.every((r) => r.status === 200));
  t.deepEqual(bodies(responses), ['<!doctype html><p>build 1</p>']);
  const again = await stampede(s);
  t.is(s.builds(), 1, 'and on a warm page they are hits');
  t.true(again.every((r) => r.headers['x-cache'] === 'HIT'));
});

test('ignore: Pragma: no-cache and max-age=0 are hits too', async (t) => {
  const s = await site(t, {});
  await s.server.request('/');
  const asks: Array<Record<string, string>> = [
    { pragma: 'no-cache' },
    { 'cache-control': 'max-age=0' },
    { 'cache-control': 'no-store' },
  ];
  for (const headers of asks)
    t.is((await s.server.request('/', { headers })).headers['x-cache'], 'HIT', JSON.stringify(headers));
  t.is(s.builds(), 1);
});

test('refresh: 50 concurrent no-cache requests on a cold page build it once', async (t) => {
  const s = await site(t, { cacheRequestNoCache: 'refresh' });
  const responses = await stampede(s);
  t.is(s.builds(), 1);
  t.true(responses.every((r) => r.status === 200));
  t.deepEqual(bodies(responses), ['<!doctype html><p>build 1</p>']);
  t.is(responses.filter((r) => r.headers['cache-status'] === 'koa-buffer; fwd=request; stored').length, 1);
  t.is(responses.filter((r) => r.headers['cache-status'] === 'koa-buffer; fwd=miss; collapsed').length, 49);
});

test('refresh: 50 concurrent no-cache requests on a warm page rebuild it once, and the result is stored', async (t) => {
  const s = await site(t, { cacheRequestNoCache: 'refresh' });
  t.is((await s.server.request('/')).body.toString(), '<!doctype html><p>build 1</p>');
  t.is((await s.server.request('/')).headers['x-cache'], 'HIT', 'a plain request is a hit');
  const responses = await stampede(s);
  t.is(s.builds(), 2, 'one rebuild for 50 refreshes');
  t.deepEqual(bodies(responses), ['<!doctype html><p>build 2</p>'], 'every refresh got the new page');
  const after = await s.server.request('/');
  t.is(after.headers['x-cache'], 'HIT');
  t.is(after.body.toString(), '<!doctype html><p>build 2</p>', 'stored');
});

test('refresh: during a rebuild plain requests get the stored page, and a second refresh joins the rebuild', async (t) => {
  const s = await site(t, { cacheRequestNoCache: 'refresh' });
  await s.server.request('/');
  s.hold();
  const refresh = s.server.request('/', { headers: { pragma: 'no-cache' } });
  while (s.builds() < 2) await sleep(5);
  // The stored entry is still build 1: a plain request is a hit on it, not a second build.
  const plain = await s.server.request('/');
  t.is(plain.body.toString(), '<!doctype html><p>build 1</p>');
  const arrived = s.arrived();
  const second = s.server.request('/', { headers: { 'cache-control': 'max-age=0' } });
  while (s.arrived() === arrived) await sleep(5);
  await sleep(20); // from the outer middleware to the flight: no I/O between
  s.release();
  t.is((await refresh).body.toString(), '<!doctype html><p>build 2</p>');
  t.is((await second).body.toString(), '<!doctype html><p>build 2</p>', 'a second refresh joined the first');
  t.is(s.builds(), 2);
});

test('bypass: every no-cache request runs the action, nothing is stored', async (t) => {
  const s = await site(t, { cacheRequestNoCache: 'bypass' });
  const responses = await stampede(s);
  t.is(s.builds(), 50);
  t.true(responses.every((r) => r.headers['cache-status'] === 'koa-buffer; fwd=bypass; detail=REQUEST-CACHE-CONTROL'));
  t.is((await s.server.request('/')).headers['x-cache'], 'MISS', 'nothing was stored');
});

test('cacheRequestNoCache is validated', (t) => {
  for (const value of ['Ignore', 'skip', true, 0]) {
    const error = t.throws(() => buffer({ cacheRequestNoCache: value as 'ignore' }), { instanceOf: BufferOptionError });
    t.is(error?.key, 'option_cache_request_no_cache');
  }
});
