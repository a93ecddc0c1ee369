/**
 * Single flight in one process (docs/architecture.md, "Three single-flight
 * scopes"): real
 * HTTP, a real Koa app, the action's run count as the truth. The
 * cross-process paths (another process holds the lock) are driven through a
 * real MemoryLock that the test holds itself, and a Map store the test
 * writes into, as another process would.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import http from 'node:http';
import test, { type ExecutionContext } from 'ava';
import type { Context } from 'koa';
import { encodeEntry } from '../../src/cache/entry.ts';
import { MemoryLock } from '../../src/locks/memory-lock.ts';
import { buffer } from '../../src/buffer.ts';
import type { BufferOptions, CacheLock } from '../../src/config/options.ts';
import {
  decode,
  htmlPage,
  rawRequest,
  recordingLogger,
  serve,
  type RawResponse,
  type Served,
} from '../helpers/serve.ts';

/** Large enough to compress. */
const page = htmlPage(8 * 1024, 7);

interface Slow {
  server: Served;
  runs: () => number;
  log: ReturnType<typeof recordingLogger>;
  /** Date.now() each time bufferIsCached answered true, seen in the server (no client delay). */
  answered: number[];
}

/** Waits (a few ms at a time) until `condition` holds; fails the test after 10 s. */
async function until(condition: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`gave up waiting until ${what}`);
    await sleep(5);
  }
}

/** How many requests wait for a build in this process, and how many watch for another process. */
const waiting = (log: Slow['log']): number => log.count(/^waiting for the request building /);
const watching = (log: Slow['log']): number => log.count(/^waiting for another process building /);

/** A gate the test opens itself. */
function manualGate(): { opened: Promise<void>; open(): void } {
  let open: () => void = () => undefined;
  const opened = new Promise<void>((resolve) => (open = resolve));
  return { opened, open };
}

/**
 * A server whose action takes `delayMs`, runs `body` and counts its runs.
 * With a `gate`, the action also waits until that many requests have
 * arrived (so a loaded machine cannot spread a burst over the build), or
 * until the test opens it.
 */
async function slowServer(
  t: ExecutionContext,
  options: BufferOptions,
  delayMs: number,
  body: (ctx: Context, run: number) => void = (ctx) => {
    ctx.type = 'html';
    ctx.body = page;
  },
  gate: number | Promise<void> = 0,
): Promise<Slow> {
  let runs = 0;
  let arrived = 0;
  let open: () => void = () => undefined;
  const gateOpen = typeof gate === 'number' ? new Promise<void>((resolve) => (open = resolve)) : gate;
  if (gate === 0) open();
  const log = recordingLogger();
  const answered: number[] = [];
  const server = await serve(t, [
    async (_ctx, next) => {
      if (++arrived === gate) setTimeout(open, 20); // and give the last one time to join the flight
      await next();
    },
    buffer({ varyBy: [], logger: log, ...options }),
    async (ctx) => {
      if (await ctx.bufferIsCached()) {
        answered.push(Date.now());
        return;
      }
      const run = ++runs;
      await Promise.all([sleep(delayMs), gateOpen]);
      body(ctx, run);
    },
  ]);
  return { server, runs: () => runs, log, answered };
}

function tally(responses: RawResponse[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const r of responses) {
    const key = `${r.status} ${r.headers['cache-status']}`;
    counts[key] = (counts[key] ?? 0) + 1;
  }
  return counts;
}

function many(server: Served, count: number, headers: Record<string, string> = {}): Promise<RawResponse[]> {
  return Promise.all(Array.from({ length: count }, () => server.request('/report', { headers })));
}

/** A MemoryLock that counts the guards it has out, to prove every lock is given back. */
class CountingLock implements CacheLock {
  readonly inner = new MemoryLock();
  held = 0;
  acquired = 0;
  acquire(key: string) {
    const answer = this.inner.acquire(key);
    if (answer[0]) {
      this.held++;
      this.acquired++;
    }
    return answer;
  }
  release(guard: unknown) {
    const answer = this.inner.release(guard as never);
    if (guard) this.held--;
    return answer;
  }
}

/** The 503 texts: a build that took too long, and one that failed (never "is being built" for a failed one). */
const tooLong = 'This page is taking too long to build. Please try again in a moment.\n';
const failed = 'This page could not be built. Please try again in a moment.\n';

function assert503(t: ExecutionContext, response: RawResponse, detail: string): void {
  t.is(response.status, 503, `503 for ${detail}`);
  t.is(response.headers['retry-after'], '1');
  t.is(response.headers['content-type'], 'text/plain; charset=UTF-8');
  t.is(response.body.toString(), detail === 'TIMEOUT' ? tooLong : failed, 'the text says why');
  t.is(response.headers['cache-status'], `koa-buffer; fwd=miss; collapsed; detail=${detail}`);
}

test('50 concurrent requests for a cold 300 ms page run the action once and all get the page', async (t) => {
  const { server, runs } = await slowServer(t, { cache: true }, 300, undefined, 50);
  const responses = await many(server, 50, { 'accept-encoding': 'gzip' });
  t.is(runs(), 1, 'the action ran once');
  t.deepEqual(tally(responses), { '200 koa-buffer; fwd=miss; stored': 1, '200 koa-buffer; fwd=miss; collapsed': 49 });
  for (const r of responses) t.is(r.headers['content-encoding'], 'gzip', 'every answer is compressed for its client');
  t.is(responses.filter((r) => r.headers['x-cache'] === 'HIT').length, 49, 'waiters say HIT');
  t.is(responses.filter((r) => r.headers['x-cache'] === 'MISS').length, 1);
  const etags = new Set(responses.map((r) => r.headers.etag));
  t.is(etags.size, 1, 'one entity, one ETag');
  const hit = await server.request('/report');
  t.is(hit.headers['cache-status']?.startsWith('koa-buffer; hit; ttl='), true, 'later: a plain hit');
  t.is(hit.body.toString(), page);
  for (const r of responses) t.is(decode(r).toString(), page);
});

test('cacheSingleFlight false: 50 concurrent misses run the action 50 times', async (t) => {
  const { server, runs } = await slowServer(t, { cache: true, cacheSingleFlight: false }, 300, undefined, 50);
  const responses = await many(server, 50);
  t.is(runs(), 50);
  t.deepEqual(tally(responses), { '200 koa-buffer; fwd=miss; stored': 50 });
});

test('the builder throws: it gets 500, its waiters 503 with Retry-After 1, the lock is released, and the next request builds', async (t) => {
  const lock = new CountingLock();
  const { server, runs } = await slowServer(
    t,
    { cache: true, cacheLock: lock },
    200,
    (ctx, run) => {
      if (run === 1) throw new Error('the report failed');
      ctx.type = 'html';
      ctx.body = page;
    },
    10,
  );
  const responses = await many(server, 10);
  t.is(responses.filter((r) => r.status === 500).length, 1, 'the builder failed');
  for (const r of responses.filter((r) => r.status !== 500)) assert503(t, r, 'ERROR');
  t.is(lock.held, 0, 'the lock was released');
  const next = await server.request('/report');
  t.is(next.status, 200);
  t.is(next.headers['cache-status'], 'koa-buffer; fwd=miss; stored');
  t.is(runs(), 2);
  t.is(lock.held, 0);
});

test("the builder sets a cookie: it is not stored, each waiter runs the action for its own page (no 503, no other client's cookie), and later requests do not wait", async (t) => {
  const { server, runs, log } = await slowServer(
    t,
    { cache: true },
    200,
    (ctx, run) => {
      ctx.cookies.set('session', `s${run}`);
      ctx.type = 'html';
      ctx.body = page;
    },
    10,
  );
  const responses = await many(server, 10);
  t.deepEqual(
    responses.map((r) => r.status),
    Array.from({ length: 10 }, () => 200),
    'every visitor got the page',
  );
  t.is(runs(), 10, 'the builder and each of its nine waiters ran the action');
  const cookies = responses.map((r) => /^session=(s\d+)/.exec(r.headers['set-cookie'] ?? '')?.[1]);
  t.is(new Set(cookies).size, 10, 'ten different cookies: none was handed to another client');
  for (const r of responses) t.is(r.headers['cache-status'], 'koa-buffer; fwd=uri-miss; detail=SET-COOKIE');
  t.is(
    log.count(
      /^the build of \S+ \(key buffer:[0-9a-f]{32}\) could not be stored \(SET-COOKIE\); this request runs the action$/,
    ),
    9,
  );
  // Hit-for-miss: the key is remembered as not storable, so the next burst neither waits nor collapses.
  const before = waiting(log);
  const later = await many(server, 5);
  t.is(waiting(log), before, 'nobody waited for another build');
  t.is(log.count(/is remembered as not storable \(SET-COOKIE\); this request runs the action without waiting$/), 5);
  t.is(new Set(later.map((r) => r.headers['set-cookie'])).size, 5, 'each its own cookie');
  t.is(runs(), 15);
});

test('a builder slower than cacheLockTimeout: its waiters get 503 at the timeout, the lock is released, and the late page is still stored', async (t) => {
  const lock = new CountingLock();
  const slow = manualGate(); // the build ends when the test says so: after its waiters gave up
  const { server, runs } = await slowServer(
    t,
    { cache: true, cacheLock: lock, cacheLockTimeout: 0.6 },
    0,
    undefined,
    slow.opened,
  );
  const started = Date.now();
  const builder = server.request('/report');
  await until(() => runs() === 1, 'the build has begun');
  const waiters = await Promise.all(
    Array.from({ length: 5 }, async () => ({ response: await server.request('/report'), at: Date.now() - started })),
  );
  for (const { response, at } of waiters) {
    assert503(t, response, 'TIMEOUT');
    t.true(at >= 580, `answered at the timeout (${at} ms), not before`);
  }
  t.is(lock.held, 0, 'the lock was released at the timeout, while the build still runs');
  slow.open();
  const built = await builder;
  t.is(built.status, 200);
  t.is(built.headers['cache-status'], 'koa-buffer; fwd=miss; stored', 'the late builder stored its page');
  const after = await server.request('/report');
  t.is(after.headers['x-cache'], 'HIT');
  t.is(runs(), 1);
});

test("cacheWaitFailure 'run': when the build fails, each waiter runs the action itself", async (t) => {
  const { server, runs } = await slowServer(
    t,
    { cache: true, cacheWaitFailure: 'run' },
    150,
    (ctx, run) => {
      if (run === 1) throw new Error('first build fails');
      ctx.type = 'html';
      ctx.body = page;
    },
    5,
  );
  const responses = await many(server, 5);
  t.is(responses.filter((r) => r.status === 500).length, 1);
  t.is(responses.filter((r) => r.status === 200).length, 4, 'no 503: every waiter ran the action');
  t.is(runs(), 5);
});

test('a waiter whose client disconnects does not disturb the build or the other waiters', async (t) => {
  const lock = new CountingLock();
  const build = manualGate();
  const { server, runs, log } = await slowServer(t, { cache: true, cacheLock: lock }, 0, undefined, build.opened);
  const builder = server.request('/report');
  await until(() => runs() === 1, 'the build has begun');
  const quitter = http.request({ host: '127.0.0.1', port: server.port, path: '/report', agent: false });
  quitter.on('error', () => undefined);
  quitter.end();
  const others = Promise.all(Array.from({ length: 5 }, () => server.request('/report')));
  await until(() => waiting(log) === 6, 'six requests wait');
  quitter.destroy();
  await sleep(50);
  build.open();
  const responses = [await builder, ...(await others)];
  t.deepEqual(tally(responses), { '200 koa-buffer; fwd=miss; stored': 1, '200 koa-buffer; fwd=miss; collapsed': 5 });
  t.is(runs(), 1);
  await until(() => lock.held === 0, 'the lock is released');
  t.is(lock.held, 0);
  t.deepEqual(
    log.lines.filter((l) => l.level === 'error'),
    [],
    'nothing went wrong',
  );
});

test('a builder whose client disconnects stores nothing (its head was never judged); one waiter builds again for the others, and every lock is released', async (t) => {
  const lock = new CountingLock();
  const build = manualGate();
  const { server, runs, log } = await slowServer(t, { cache: true, cacheLock: lock }, 0, undefined, build.opened);
  const quitter = http.request({ host: '127.0.0.1', port: server.port, path: '/report', agent: false });
  quitter.on('error', () => undefined);
  quitter.end();
  await until(() => runs() === 1, 'the build has begun');
  const waiters = Promise.all(Array.from({ length: 3 }, () => server.request('/report')));
  await until(() => waiting(log) === 3, 'three requests wait');
  quitter.destroy();
  await sleep(50);
  build.open();
  t.deepEqual(tally(await waiters), {
    '200 koa-buffer; fwd=miss; stored': 1,
    '200 koa-buffer; fwd=miss; collapsed': 2,
  });
  t.is(runs(), 2, 'the abandoned build, then one waiter');
  await until(() => lock.held === 0, 'the lock is released');
  t.is((await server.request('/report')).headers['x-cache'], 'HIT');
});

test('a lock backend that fails or throws is logged and the process still builds once (per-process flight)', async (t) => {
  for (const cacheLock of [
    { acquire: () => [null, 'backend down'], release: () => [true, undefined] },
    {
      acquire: () => {
        throw new Error('acquire exploded');
      },
      release: () => [true, undefined],
    },
    { acquire: async () => 'nonsense', release: () => [true, undefined] },
    // Backends that break the protocol, as a JavaScript caller can pass them.
  ] as unknown as CacheLock[]) {
    const { server, runs, log } = await slowServer(t, { cache: true, cacheLock }, 200, undefined, 20);
    const responses = await many(server, 20);
    t.is(runs(), 1, 'one build');
    t.deepEqual(tally(responses), { '200 koa-buffer; fwd=miss; stored': 1, '200 koa-buffer; fwd=miss; collapsed': 19 });
    t.is(
      log.count(/^lock for buffer:[0-9a-f]{32} failed, building with a per-process flight: /),
      1,
      'log_lock_failed, once',
    );
  }
});

test('a waiter is not handed a page that varies on a header its own request differs in (custom cacheKey): it builds its own', async (t) => {
  const build = manualGate();
  const { server, runs, log } = await slowServer(
    t,
    { cache: true, cacheKey: 'report', varyBy: ['accept-language'] },
    0,
    (ctx) => {
      ctx.vary('Accept-Language');
      ctx.type = 'html';
      ctx.body = `<p>${ctx.get('Accept-Language')}</p>`;
    },
    build.opened,
  );
  const builder = server.request('/report', { headers: { 'accept-language': 'de' } });
  await until(() => runs() === 1, 'the build has begun');
  const both = Promise.all([
    server.request('/report', { headers: { 'accept-language': 'de' } }),
    server.request('/report', { headers: { 'accept-language': 'fr' } }),
  ]);
  await until(() => waiting(log) === 2, 'both wait');
  build.open();
  const [same, other] = await both;
  t.is((await builder).body.toString(), '<p>de</p>');
  t.is(same.body.toString(), '<p>de</p>', 'the same language gets the page');
  t.is(other.status, 200);
  t.is(other.body.toString(), '<p>fr</p>', "the other language gets its own page, not the builder's");
  t.is(runs(), 2);
});

test('the builder reads the cache once more after taking the lock: a page stored meanwhile is replayed, not rebuilt', async (t) => {
  const store = new Map<string, unknown>();
  const inner = new MemoryLock();
  // The lock answers after another process has stored the page: the moment between the miss and the lock.
  const cacheLock: CacheLock = {
    acquire: async (key: string) => {
      store.set(
        key,
        encodeEntry({
          status: 200,
          headers: { 'content-type': 'text/html' },
          body: Buffer.from('<p>from elsewhere</p>'),
          created: Date.now(),
          expires: Date.now() + 60_000,
        }),
      );
      return inner.acquire(key);
    },
    release: (guard) => inner.release(guard as never),
  };
  const { server, runs } = await slowServer(t, { cache: store, cacheLock }, 100);
  const response = await server.request('/report');
  t.is(response.body.toString(), '<p>from elsewhere</p>');
  t.is(response.headers['x-cache'], 'HIT');
  t.is(runs(), 0, 'the action did not run');
  t.true(
    inner.acquire('probe')[0] !== null && inner.acquire(Array.from(store.keys())[0]!)[0] !== null,
    'the lock was released',
  );
});

/** A Map store that counts its reads. */
class CountingMap extends Map<string, unknown> {
  gets = 0;
  override get(key: string): unknown {
    this.gets++;
    return super.get(key);
  }
}

/** The key a request for /report makes: read it from a first, stored response. */
function keyOf(store: Map<string, unknown>): string {
  return Array.from(store.keys())[0]!;
}

test('while another process holds the lock, one request per process watches the store and all its waiters get the entry soon after it appears', async (t) => {
  const store = new CountingMap();
  const lock = new MemoryLock();
  const { server, runs, log, answered } = await slowServer(
    t,
    { cache: store, cacheLock: lock, cacheKey: 'report' },
    10,
  );
  const [held] = lock.acquire('report'); // "another process" builds
  const responses = Promise.all(Array.from({ length: 20 }, () => server.request('/report')));
  await until(() => watching(log) === 1 && waiting(log) === 19, 'one request watches and 19 wait');
  const started = Date.now();
  const readsBefore = store.gets;
  // At least 300 ms, and at least three looks: a machine under load may let the watcher run less often.
  await sleep(300);
  await until(() => store.gets - readsBefore > 2, 'the watcher looks at the store');
  const readsWhileWaiting = store.gets - readsBefore;
  const storedAt = Date.now();
  store.set(
    'report',
    encodeEntry({
      status: 200,
      headers: { 'content-type': 'text/html' },
      body: Buffer.from(page),
      created: Date.now(),
      expires: Date.now() + 60_000,
    }),
  );
  const answers = await responses;
  lock.release(held);
  t.is(runs(), 0);
  for (const response of answers) {
    t.is(response.status, 200);
    t.is(response.headers['cache-status'], 'koa-buffer; fwd=miss; collapsed');
  }
  const delays = answered.map((at) => at - storedAt).sort((a, b) => a - b);
  t.is(delays.length, 20);
  // The watcher looks at least every 8 ms and answers the whole process at once. How soon is the bench's
  // question (bench/stampede.bench.ts): a test machine under load can hold a process back 100 ms and more.
  t.true(delays[19]! < 1000, `answered ${delays.join(', ')} ms after the entry appeared`);
  t.true(delays[19]! - delays[0]! < 50, 'all twenty together, from one look at the store');
  // One watcher polling about every 8 ms for 300 ms makes about 40 reads; twenty pollers would make 750.
  // Twenty pollers would make twenty times the reads of one in the same time, whatever the machine's load.
  const perSecond = (readsWhileWaiting * 1000) / Math.max(300, storedAt - started);
  t.true(perSecond < 400, `${readsWhileWaiting} reads in ${storedAt - started} ms: one watcher, not twenty`);
  t.true(readsWhileWaiting > 2, `${readsWhileWaiting} reads: the watcher does poll`);
});

test('the watcher finds the lock free and no entry: one last look with the lock held, then 503; an entry stored at that moment is replayed', async (t) => {
  const store = new Map<string, unknown>();
  const inner = new MemoryLock();
  let heldOutside: unknown = inner.acquire('report')[0];
  let lastLookStores = false;
  const cacheLock: CacheLock = {
    acquire: (key: string) => {
      const answer = inner.acquire(key);
      if (answer[0] && lastLookStores) {
        store.set(
          key,
          encodeEntry({
            status: 200,
            headers: { 'content-type': 'text/html' },
            body: Buffer.from('<p>just in time</p>'),
            created: Date.now(),
            expires: Date.now() + 60_000,
          }),
        );
      }
      return answer;
    },
    release: (guard) => inner.release(guard as never),
  };
  const { server, runs, log } = await slowServer(t, { cache: store, cacheLock, cacheKey: 'report' }, 10);

  const failed = Promise.all(Array.from({ length: 3 }, () => server.request('/report')));
  await until(() => watching(log) === 1 && waiting(log) === 2, 'one request watches and two wait');
  inner.release(heldOutside as never); // the other build ends without storing anything
  for (const response of await failed) assert503(t, response, 'NO-ENTRY');

  heldOutside = inner.acquire('report')[0];
  lastLookStores = true; // this time the page lands between the last poll and the lock
  const saved = Promise.all(Array.from({ length: 3 }, () => server.request('/report')));
  await until(() => watching(log) === 2 && waiting(log) === 4, 'again, one request watches and two wait');
  inner.release(heldOutside as never);
  for (const response of await saved) t.is(response.body.toString(), '<p>just in time</p>', 'the last look found it');
  t.is(runs(), 0);
  t.not(inner.acquire('report')[0], null, 'the watcher released the lock it took for its last look');
  t.is(keyOf(store), 'report');
});

test('a watcher gives up at cacheLockTimeout with 503 TIMEOUT while the other process still holds the lock', async (t) => {
  const lock = new MemoryLock();
  const { server, runs } = await slowServer(
    t,
    { cache: true, cacheLock: lock, cacheKey: 'report', cacheLockTimeout: 0.25 },
    10,
  );
  lock.acquire('report');
  const started = Date.now();
  const responses = await many(server, 4);
  const took = Date.now() - started;
  for (const response of responses) assert503(t, response, 'TIMEOUT');
  t.true(took >= 240 && took < 700, `gave up after ${took} ms`);
  t.is(runs(), 0);
});

test('calling bufferIsCached twice returns the same answer and changes nothing', async (t) => {
  let runs = 0;
  const answers: boolean[][] = [];
  const server = await serve(t, [
    buffer({ cache: true, varyBy: [] }),
    async (ctx) => {
      const first = await ctx.bufferIsCached();
      const second = await ctx.bufferIsCached();
      answers.push([first, second]);
      if (first) return;
      runs++;
      await sleep(100);
      ctx.type = 'html';
      ctx.body = page;
    },
  ]);
  const responses = await Promise.all(Array.from({ length: 3 }, () => server.request('/')));
  const hit = await server.request('/');
  t.deepEqual(
    answers.map(([a, b]) => a === b),
    [true, true, true, true],
    'each request got one answer twice',
  );
  t.deepEqual(answers.map(([a]) => a).sort(), [false, true, true, true]);
  t.is(runs, 1);
  const statuses = [...responses, hit].map((r) => r.headers['cache-status']!.replace(/ttl=\d+/, 'ttl=N'));
  t.is(statuses.filter((s) => s === 'koa-buffer; fwd=miss; stored').length, 1, 'one build');
  t.is(
    statuses.filter((s) => s === 'koa-buffer; fwd=miss; collapsed' || s === 'koa-buffer; hit; ttl=N').length,
    3,
    'the others answered from it',
  );
});

test('HEAD and GET share the entry; a HEAD builder stores the page for a later GET', async (t) => {
  const { server, runs } = await slowServer(t, { cache: true }, 10);
  const head = await rawRequest(server.port, '/report', { method: 'HEAD' });
  t.is(head.status, 200);
  t.is(head.body.length, 0);
  const get = await server.request('/report');
  t.is(get.headers['x-cache'], 'HIT');
  t.is(get.body.toString(), page);
  t.is(runs(), 1);
});
