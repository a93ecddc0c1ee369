/**
 * Faults of the cache store (issue 7): its `get` or `set` throwing or
 * hanging while requests arrive together, with a real FileLock electing the
 * builder. Each test says what the clients receive, that a hang costs at
 * most `cacheStoreTimeout`, that no lock stays held, and that once the store
 * recovers the next requests are stored and hit as usual.
 *
 * (test/cache/rules.test.ts covers the single request: one log line per
 * failing call, the bypass detail, a failing delete.)
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import test, { type ExecutionContext } from 'ava';
import { FileLock } from '../../src/locks/file-lock.ts';
import { buffer, type BufferMiddleware } from '../../src/buffer.ts';
import type { BufferOptions, CacheStore } from '../../src/config/options.ts';
import { decode, htmlPage, recordingLogger, serve, type RawResponse, type Served } from '../helpers/serve.ts';

const page = htmlPage(16 * 1024, 11);
/** Every request names this key, so the lock file is known: dir/md5('report').lock. */
const key = 'report';
const storeTimeout = 0.15;

type Fault = 'ok' | 'throw' | 'reject' | 'hang';

/** A Map behind the store interface, whose get and set can be made to fail or hang at will. */
class FaultyStore implements CacheStore {
  readonly entries = new Map<string, unknown>();
  readonly faults: { get: Fault; set: Fault } = { get: 'ok', set: 'ok' };
  readonly calls = { get: 0, set: 0 };

  get(name: string): unknown {
    this.calls.get++;
    return this.#answer(this.faults.get, () => this.entries.get(name));
  }

  set(name: string, value: unknown): unknown {
    this.calls.set++;
    return this.#answer(this.faults.set, () => this.entries.set(name, value));
  }

  delete(name: string): unknown {
    return this.entries.delete(name);
  }

  #answer(fault: Fault, ok: () => unknown): unknown {
    switch (fault) {
      case 'ok':
        return ok();
      case 'throw':
        throw new Error('store on fire');
      case 'reject':
        return Promise.reject(new Error('store on fire'));
      case 'hang':
        return new Promise(() => undefined);
    }
  }
}

interface Site {
  server: Served;
  store: FaultyStore;
  runs: () => number;
  log: ReturnType<typeof recordingLogger>;
  dir: string;
  /** Lets the builds under way finish (they wait for this besides their delay). */
  open: () => void;
  /** The middleware, whose stats count what the log folds. */
  middleware: BufferMiddleware;
}

/** Waits (a few ms at a time) until `condition` holds; fails after 10 s. */
async function until(condition: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`gave up waiting until ${what}`);
    await sleep(2);
  }
}

/** Requests of this process waiting for its build, and requests watching another process's. */
const waiting = (s: Site): number => s.log.count(/^waiting for the request building /);
const watching = (s: Site): number => s.log.count(/^waiting for another process building /);

/**
 * A site whose action takes `delayMs`; with `gated`, builds also wait until
 * `open()`, so a test can have every request queued behind one build first.
 */
async function site(t: ExecutionContext, delayMs: number, options: BufferOptions = {}, gated = false): Promise<Site> {
  const dir = mkdtempSync(join(tmpdir(), 'kb-fault-store-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const store = new FaultyStore();
  const log = recordingLogger();
  let runs = 0;
  let open = (): void => undefined;
  const gate = gated ? new Promise<void>((resolve) => (open = resolve)) : Promise.resolve();
  const middleware = buffer({
    cache: store,
    cacheKey: key,
    cacheLockDir: dir,
    cacheStoreTimeout: storeTimeout,
    logger: log,
    ...options,
  });
  const server = await serve(t, [
    middleware,
    async (ctx) => {
      if (await ctx.bufferIsCached()) return;
      runs++;
      await Promise.all([sleep(delayMs), gate]);
      ctx.type = 'html';
      ctx.body = page;
    },
  ]);
  return { server, store, runs: () => runs, log, dir, open: () => open(), middleware };
}

async function timed(server: Served, count: number): Promise<Array<RawResponse & { ms: number }>> {
  const started = performance.now();
  return Promise.all(
    Array.from({ length: count }, async () => {
      const response = await server.request('/', { headers: { 'accept-encoding': 'gzip' } });
      return { ...response, ms: performance.now() - started };
    }),
  );
}

function assertPages(t: ExecutionContext, responses: RawResponse[], what: string): void {
  for (const response of responses) {
    t.is(response.status, 200, `${what}: 200`);
    t.is(decode(response).toString(), page, `${what}: the page, whole`);
  }
}

/** The lock of the key is free: another FileLock on the directory can take it. */
function assertLockFree(t: ExecutionContext, dir: string): void {
  const other = new FileLock({ dir });
  const [guard, error] = other.acquire(key);
  t.truthy(guard, `the lock of the key is free (${error})`);
  other.release(guard);
}

/** Heals the store and checks the next requests: one builds and stores, the next hits. */
async function assertRecovers(t: ExecutionContext, s: Site): Promise<void> {
  s.store.faults.get = 'ok';
  s.store.faults.set = 'ok';
  const runsBefore = s.runs();
  const next = await timed(s.server, 10);
  assertPages(t, next, 'after recovery');
  t.is(s.runs(), runsBefore + 1, 'after recovery, ten concurrent misses build once');
  const hit = await s.server.request('/');
  t.is(hit.headers['x-cache'], 'HIT', 'and the page is stored');
}

for (const fault of ['throw', 'reject'] as const) {
  test(`get ${fault === 'throw' ? 'throwing' : 'rejecting'}: twenty concurrent requests each get the page (bypass), nothing is locked, and the store is used again once it recovers`, async (t) => {
    const s = await site(t, 50);
    s.store.faults.get = fault;
    const responses = await timed(s.server, 20);
    assertPages(t, responses, 'while get fails');
    for (const response of responses)
      t.is(response.headers['cache-status'], 'koa-buffer; fwd=bypass; detail=STORE-ERROR');
    t.is(s.runs(), 20, 'a bypass builds: every request ran the action (a failed get makes the request not cacheable)');
    // A store that is down fails every request: one line for the burst, each failure counted.
    t.is(s.log.count(/^cache get report failed: store on fire$/), 1, 'one log line for the burst');
    t.is(s.middleware.stats().store.custom?.errors, 20, 'every failed get counted');
    assertLockFree(t, s.dir);
    await assertRecovers(t, s);
  });
}

test('get hanging: twenty concurrent requests each get the page within cacheStoreTimeout plus the build, and the store is used again once it recovers', async (t) => {
  const s = await site(t, 50);
  s.store.faults.get = 'hang';
  const responses = await timed(s.server, 20);
  assertPages(t, responses, 'while get hangs');
  const slowest = Math.max(...responses.map((r) => r.ms));
  t.true(
    slowest < storeTimeout * 1000 + 50 + 1500,
    `the slowest answered after ${Math.round(slowest)} ms: the hang cost at most cacheStoreTimeout (${storeTimeout * 1000} ms)`,
  );
  t.true(Math.min(...responses.map((r) => r.ms)) >= storeTimeout * 1000 - 5, 'each waited out the hanging get');
  t.is(s.log.count(/^cache get report failed: cache get did not answer within 150 ms$/), 1, 'one line for the burst');
  t.is(s.middleware.stats().store.custom?.timeouts, 20, 'every timed-out get counted');
  assertLockFree(t, s.dir);
  await assertRecovers(t, s);
});

for (const fault of ['throw', 'hang'] as const) {
  test(`set ${fault === 'throw' ? 'throwing' : 'hanging'} under a single-flight build: the builder and its nineteen waiters all get the page, the lock is released, and the next build is stored`, async (t) => {
    const s = await site(t, 0, {}, true);
    s.store.faults.set = fault;
    const pending = timed(s.server, 20);
    await until(() => s.runs() === 1 && waiting(s) === 19, 'one request builds and nineteen wait');
    s.open();
    const responses = await pending;
    assertPages(t, responses, `while set ${fault}s`);
    t.is(s.runs(), 1, 'one build for all twenty');
    const statuses = responses.map((r) => r.headers['cache-status']);
    t.is(
      statuses.filter((c) => c === 'koa-buffer; fwd=uri-miss; detail=STORE-ERROR').length,
      1,
      'the builder says the page was not stored',
    );
    t.is(
      statuses.filter((c) => c === 'koa-buffer; fwd=miss; collapsed').length,
      19,
      'the waiters were answered from the build',
    );
    // Waiters are answered before the write; only the builder waits for the store, and at most cacheStoreTimeout.
    const builder = responses.find((r) => r.headers['cache-status']!.includes('STORE-ERROR'))!;
    const waiters = responses.filter((r) => r !== builder);
    // A hanging set: had a waiter waited for the store, it would come cacheStoreTimeout after the builder; the
    // margin (half of it) leaves room for the order in which twenty answers are written on a loaded machine.
    // A throwing set answers at once, so there is nothing to wait for and no time to compare (a loaded run
    // failed that comparison by the margin alone).
    if (fault === 'hang')
      t.true(
        Math.max(...waiters.map((r) => r.ms)) <= builder.ms + storeTimeout * 500,
        'no waiter waited for the store',
      );
    if (fault === 'hang')
      t.true(
        builder.ms - Math.max(...waiters.map((r) => r.ms)) < storeTimeout * 1000 + 1000,
        `the builder answered ${Math.round(builder.ms - Math.max(...waiters.map((r) => r.ms)))} ms after its waiters`,
      );
    t.is(s.log.count(/^cache set report failed: /), 1);
    assertLockFree(t, s.dir);
    t.is(s.store.entries.size, 0);
    await assertRecovers(t, s);
  });
}

test('get starting to hang while another process holds the lock: the waiters get 503 with Retry-After, never hang, and the next request builds', async (t) => {
  const s = await site(t, 10, { cacheLockTimeout: 3 });
  // "Another process" builds: a FileLock of its own holds the key's lock file.
  const other = new FileLock({ dir: s.dir });
  const [held] = other.acquire(key);
  t.truthy(held);
  const pending = timed(s.server, 10);
  await until(() => watching(s) === 1 && waiting(s) === 9, 'one request watches the store and nine wait');
  // The store hangs while this process watches it for the other one's entry…
  s.store.faults.get = 'hang';
  await sleep(300);
  // …and the other process ends without storing anything: the lock is free, the store still hangs.
  other.release(held);
  const released = performance.now();
  const responses = await pending;
  for (const response of responses) {
    t.is(response.status, 503, 'nothing to hand over: retry later');
    t.is(response.headers['retry-after'], '1');
    t.is(response.headers['cache-status'], 'koa-buffer; fwd=miss; collapsed; detail=NO-ENTRY');
  }
  // After the release: at most one look in progress, one lock try and one last look, each bounded: far below cacheLockTimeout (3 s).
  const late = performance.now() - released;
  t.true(
    late < storeTimeout * 1000 * 2 + 1000,
    `every waiter answered ${Math.round(late)} ms after the lock was freed`,
  );
  t.is(s.runs(), 0, 'nobody built meanwhile');
  t.is(
    s.log.count(/^cache get report failed: cache get did not answer within 150 ms$/),
    1,
    'the watcher logs the failing store once, not every poll',
  );
  assertLockFree(t, s.dir);
  await assertRecovers(t, s);
});
