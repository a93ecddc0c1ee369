/**
 * Stale entries in one process (docs/architecture.md, "Stale entries"): real
 * HTTP, a real Koa app, the action's run count as the truth.
 * stale-while-revalidate answers at once and refreshes once in the
 * background; stale-if-error answers the stale entry when the build throws,
 * answers 5xx, or outlasts cacheLockTimeout; a deploy makes no stale entry;
 * the response's Cache-Control and ctx.bufferIsCached() set the lifetime.
 */
import { mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import test, { type ExecutionContext } from 'ava';
import type { Context } from 'koa';
import { decodeEntry } from '../../src/cache/entry.ts';
import { buffer } from '../../src/buffer.ts';
import type { BufferOptions } from '../../src/config/options.ts';
import { mtimeTrustMs } from '../../src/http/last-modified.ts';
import { recordingLogger, serve, type Served } from '../helpers/serve.ts';

interface Site {
  server: Served;
  runs: () => number;
  log: ReturnType<typeof recordingLogger>;
  store: Map<string, { value: unknown; ttl: number }>;
}

/** What the action does on its next run: answer (after `delayMs`, and `gate` when set), throw, or answer 500. */
interface Behaviour {
  delayMs: number;
  gate?: Promise<void>;
  fail?: 'throw' | '500';
  cacheControl?: string;
}

/** A site whose one page takes `behaviour.delayMs` to build, cached in a Map store the test can read. */
async function site(
  t: ExecutionContext,
  options: BufferOptions,
  behaviour: Behaviour,
  action?: (ctx: Context) => Promise<boolean>,
): Promise<Site> {
  let count = 0;
  const log = recordingLogger();
  const map = new Map<string, { value: unknown; ttl: number }>();
  const store = {
    get: (key: string) => map.get(key)?.value,
    set: (key: string, value: unknown, ttl: number) => void map.set(key, { value, ttl }),
    delete: (key: string) => map.delete(key),
  };
  const server = await serve(t, [
    buffer({ cache: store, varyBy: [], logger: log, ...options }),
    async (ctx) => {
      if (await (action ? action(ctx) : ctx.bufferIsCached())) return;
      count += 1;
      const run = count;
      await sleep(behaviour.delayMs);
      await behaviour.gate;
      if (behaviour.fail === 'throw') throw new Error(`build ${run} failed`);
      if (behaviour.fail === '500') {
        ctx.status = 500;
        ctx.type = 'text';
        ctx.body = `error page ${run}`;
        return;
      }
      if (behaviour.cacheControl !== undefined) ctx.set('Cache-Control', behaviour.cacheControl);
      ctx.type = 'html';
      ctx.body = `<!doctype html><p>build ${run}</p>`;
    },
  ]);
  return { server, runs: () => count, log, store: map };
}

/** A gate for the next build, and the function that opens it. */
function gate(behaviour: Behaviour): () => void {
  let open = (): void => undefined;
  behaviour.gate = new Promise((resolve) => (open = resolve));
  return open;
}

/** How many requests wait for the build of this process. */
const waiting = (log: Site['log']): number => log.count(/^waiting for the request building /);

async function until(condition: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`gave up waiting until ${what}`);
    await sleep(5);
  }
}

test('stale-while-revalidate: an expired entry is answered at once, refreshed once in the background, then fresh', async (t) => {
  const behaviour: Behaviour = { delayMs: 1500 };
  const { server, runs, log } = await site(t, { cacheDuration: 1, cacheStaleWhileRevalidate: 10 }, behaviour);
  t.is((await server.request('/')).body.toString(), '<!doctype html><p>build 1</p>');
  await sleep(1100);
  const started = Date.now();
  const answers = await Promise.all(Array.from({ length: 20 }, () => server.request('/')));
  const took = Date.now() - started;
  for (const answer of answers) {
    t.is(answer.status, 200);
    t.is(answer.headers['x-cache'], 'STALE');
    t.regex(answer.headers['cache-status']!, /^koa-buffer; hit; fwd=stale; ttl=-\d+$/);
    t.is(answer.body.toString(), '<!doctype html><p>build 1</p>', 'the stale page');
  }
  t.true(took < 1000, `answered without waiting for the 1.5 s build (${took} ms)`);
  await until(() => runs() === 2, 'the refresh began');
  await sleep(behaviour.delayMs + 100); // the refresh builds for delayMs, then stores
  const fresh = await server.request('/');
  t.is(fresh.headers['x-cache'], 'HIT');
  t.is(fresh.body.toString(), '<!doctype html><p>build 2</p>', 'the refresh replaced the entry');
  t.is(runs(), 2, 'one refresh for twenty stale answers');
  t.deepEqual(
    log.lines.filter((l) => l.level === 'error'),
    [],
  );
});

test('stale-while-revalidate: a refresh that throws is logged, the stale entry stays, no unhandled rejection', async (t) => {
  const behaviour: Behaviour = { delayMs: 10 };
  const { server, runs, log } = await site(t, { cacheDuration: 1, cacheStaleWhileRevalidate: 10 }, behaviour);
  await server.request('/');
  await sleep(1100);
  behaviour.fail = 'throw';
  const unhandled: unknown[] = [];
  const onUnhandled = (reason: unknown): void => void unhandled.push(reason);
  process.on('unhandledRejection', onUnhandled);
  t.teardown(() => process.off('unhandledRejection', onUnhandled));
  t.is((await server.request('/')).headers['x-cache'], 'STALE');
  await until(() => log.count(/^background refresh of buffer:[0-9a-f]{32} failed: .*build 2 failed/) === 1, 'logged');
  const again = await server.request('/');
  t.is(again.headers['x-cache'], 'STALE', 'still the stale entry');
  t.is(again.body.toString(), '<!doctype html><p>build 1</p>');
  await sleep(50);
  t.deepEqual(unhandled, []);
  t.true(runs() >= 2);
});

test('past the stale-while-revalidate window the entry is a miss and the visitor waits for the build', async (t) => {
  const { server, runs } = await site(t, { cacheDuration: 1, cacheStaleWhileRevalidate: 1 }, { delayMs: 10 });
  await server.request('/');
  await sleep(2100);
  const answer = await server.request('/');
  t.is(answer.headers['x-cache'], 'MISS');
  t.is(answer.headers['cache-status'], 'koa-buffer; fwd=stale; stored');
  t.is(runs(), 2);
});

test('the store keeps an entry for its TTL plus the longer stale window; freshness is the entry own expiry', async (t) => {
  const { server, store } = await site(
    t,
    { cacheDuration: 60, cacheStaleWhileRevalidate: 30, cacheStaleIfError: '2 minutes' },
    { delayMs: 0 },
  );
  await server.request('/');
  const [kept] = [...store.values()];
  t.is(kept!.ttl, (60 + 120) * 1000);
  const entry = decodeEntry(kept!.value)!;
  t.is(entry.expires - entry.created, 60_000);
  t.is(entry.staleWhileRevalidate, 30_000);
  t.is(entry.staleIfError, 120_000);
});

for (const fail of ['throw', '500'] as const) {
  test(`stale-if-error: a build that ${fail === 'throw' ? 'throws' : 'answers 500'} is answered stale, to the builder and its waiters`, async (t) => {
    const behaviour: Behaviour = { delayMs: 200 };
    const { server, runs, log } = await site(t, { cacheDuration: 1, cacheStaleIfError: 60 }, behaviour);
    await server.request('/');
    await sleep(1100);
    behaviour.fail = fail;
    const open = gate(behaviour);
    const pending = Promise.all(Array.from({ length: 5 }, () => server.request('/')));
    await until(() => waiting(log) === 4, 'four requests wait for the build');
    open();
    const answers = await pending;
    t.is(runs(), 2, 'one build for all');
    const statuses = answers.map((a) => a.headers['cache-status']).sort();
    for (const answer of answers) {
      t.is(answer.status, 200);
      t.is(answer.headers['x-cache'], 'STALE');
      t.is(answer.body.toString(), '<!doctype html><p>build 1</p>');
      t.is(answer.headers['content-type'], 'text/html; charset=utf-8');
    }
    const builder = fail === 'throw' ? /detail=ERROR$/ : /fwd-status=500; ttl=-\d+; detail=STATUS$/;
    t.is(statuses.filter((s) => builder.test(s!)).length, 1, 'the builder says why');
    t.is(statuses.filter((s) => /^koa-buffer; hit; fwd=stale; ttl=-\d+; detail=SERVER-ERROR$/.test(s!)).length, 4);
    // The builder's error line names the key; the waiters' debug lines name the URL beside it.
    t.is(
      log.count(/^the build of (\S+ \(key )?buffer:[0-9a-f]{32}\)? failed/),
      5,
      'logged: the builder as an error, waiters in debug',
    );
  });
}

test('stale-if-error: waiters whose build outlasts cacheLockTimeout are answered stale', async (t) => {
  const behaviour: Behaviour = { delayMs: 10 };
  const { server, runs } = await site(t, { cacheDuration: 1, cacheStaleIfError: 60, cacheLockTimeout: 0.3 }, behaviour);
  await server.request('/');
  await sleep(1100);
  const open = gate(behaviour);
  const started = Date.now();
  const builderAnswer = server.request('/');
  await until(() => runs() === 2, 'the build began');
  const waiters = await Promise.all(Array.from({ length: 3 }, () => server.request('/')));
  t.true(Date.now() - started >= 300, 'the waiters waited cacheLockTimeout');
  open();
  const builder = await builderAnswer;
  for (const waiter of waiters) {
    t.is(waiter.headers['x-cache'], 'STALE');
    t.regex(waiter.headers['cache-status']!, /; detail=TIMEOUT$/);
    t.is(waiter.body.toString(), '<!doctype html><p>build 1</p>');
  }
  t.is(builder.body.toString(), '<!doctype html><p>build 2</p>');
  t.is(runs(), 2);
});

test('stale-if-error: without the window a failed build is a 503 for waiters, as before', async (t) => {
  const behaviour: Behaviour = { delayMs: 10 };
  const { server, log } = await site(t, { cacheDuration: 1 }, behaviour);
  await server.request('/');
  await sleep(1100);
  behaviour.fail = 'throw';
  const open = gate(behaviour);
  const pending = Promise.all(Array.from({ length: 3 }, () => server.request('/')));
  await until(() => waiting(log) === 2, 'two requests wait for the build');
  open();
  const answers = await pending;
  t.deepEqual(answers.map((a) => a.status).sort(), [500, 503, 503]);
});

test('an entry made stale by a deploy (a newer template) is never answered stale', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'kb-stale-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const views = join(dir, 'views');
  mkdirSync(views);
  const template = join(views, 'page.html');
  writeFileSync(template, '<p>v1</p>');
  const past = new Date(Date.now() - 60_000);
  utimesSync(template, past, past);
  const { server, runs } = await site(
    t,
    { cacheDuration: 1, cacheStaleWhileRevalidate: 60, cacheStaleIfError: 60, templatePaths: [views] },
    { delayMs: 10 },
  );
  await server.request('/');
  await sleep(1100);
  const now = new Date();
  utimesSync(template, now, now);
  await sleep(mtimeTrustMs + 50);
  const answer = await server.request('/');
  t.is(answer.headers['x-cache'], 'MISS', 'rebuilt, not answered stale');
  t.is(answer.body.toString(), '<!doctype html><p>build 2</p>');
  t.is(runs(), 2);
});

test("the response's Cache-Control sets the TTL (s-maxage over max-age) and the stale windows", async (t) => {
  const behaviour: Behaviour = {
    delayMs: 0,
    cacheControl: 'public, max-age=600, s-maxage=1, stale-while-revalidate=5',
  };
  const { server, store, runs } = await site(t, { cacheDuration: 600 }, behaviour);
  await server.request('/');
  const entry = decodeEntry([...store.values()][0]!.value)!;
  t.is(entry.expires - entry.created, 1000, 's-maxage');
  t.is(entry.staleWhileRevalidate, 5000);
  t.is(entry.staleIfError, 0);
  t.is([...store.values()][0]!.ttl, 6000);
  await sleep(1100);
  t.is((await server.request('/')).headers['x-cache'], 'STALE', 'the window came from the response');
  await until(() => runs() === 2, 'the refresh ran');
});

test("without s-maxage the response's max-age is the TTL; stale-if-error= sets that window", async (t) => {
  const behaviour: Behaviour = { delayMs: 0, cacheControl: 'max-age=1, stale-if-error=60' };
  const { server, store } = await site(t, { cacheDuration: 600 }, behaviour);
  await server.request('/');
  const entry = decodeEntry([...store.values()][0]!.value)!;
  t.is(entry.expires - entry.created, 1000);
  t.is(entry.staleIfError, 60_000);
  behaviour.fail = '500';
  await sleep(1100);
  const answer = await server.request('/');
  t.is(answer.headers['x-cache'], 'STALE');
  t.is(answer.body.toString(), '<!doctype html><p>build 1</p>');
});

test('ctx.bufferIsCached({cacheDuration, cacheTags}) sets this response: over the option and the Cache-Control', async (t) => {
  const behaviour: Behaviour = { delayMs: 0, cacheControl: 'max-age=600' };
  let seen: unknown;
  const { server, store } = await site(t, { cacheDuration: 600 }, behaviour, async (ctx) => {
    const answered = await ctx.bufferIsCached({ cacheDuration: '2 s', cacheTags: ['article:7', 'listing'] });
    seen = ctx.state.buffer;
    return answered;
  });
  await server.request('/');
  const entry = decodeEntry([...store.values()][0]!.value)!;
  t.is(entry.expires - entry.created, 2000);
  t.deepEqual(seen, { cacheDuration: '2 s', cacheTags: ['article:7', 'listing'] });
});

test('ctx.bufferIsCached() leaves out overrides it cannot use, naming the problem in one log line each, and answers', async (t) => {
  const bad = [5, { cacheDuration: 'soon' }, { cacheTags: 'a,b' }];
  const errors: string[] = [];
  const { server, log } = await site(t, {}, { delayMs: 0 }, async (ctx) => {
    try {
      return await ctx.bufferIsCached(bad[Number(ctx.query.bad)] as never);
    } catch (error) {
      errors.push((error as Error).message);
      return false;
    }
  });
  for (let i = 0; i < bad.length; i++) t.is((await server.request(`/?bad=${i}`)).status, 200);
  t.deepEqual(errors, [], 'never a rejection, which would fail the request');
  t.deepEqual(
    log.lines.filter((line) => line.level === 'warn').map((line) => line.message),
    [
      'ctx.bufferIsCached() takes { cacheDuration, cacheTags }: the argument is not an object; ignored for this response',
      'ctx.bufferIsCached(): ignored cacheDuration ("soon") for this response, the configured value applies: cacheDuration must be a duration (seconds, or e.g. "10 minutes"), not "soon"',
      'ctx.bufferIsCached(): ignored cacheTags ("a,b") for this response, the configured value applies: cacheTags must be an array of tags (1 to 256 visible ASCII characters, no comma), not "a,b"',
    ],
  );
});
