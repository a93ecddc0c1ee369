/**
 * Single flight across the worker processes of one host: real
 * server processes sharing a SQLite cache file and a FileLock directory. The
 * action appends to a shared file every time it runs, so the run count is
 * counted outside every process.
 */
import { join } from 'node:path';
import test from 'ava';
import {
  logLines,
  release,
  runs,
  startWorkers,
  tempDir,
  untilWaiting,
  waitingRequests,
} from '../helpers/cache-workers.ts';
import { rawRequest, type RawResponse } from '../helpers/serve.ts';

/**
 * The workers listen on different ports, as if behind one proxy: every request
 * names the same Host, since the host (with its port) is part of the key.
 */
const host = { host: 'app.example' };

function get(port: number): Promise<RawResponse> {
  return rawRequest(port, '/report', { headers: host });
}

/** A request that never rejects: a reset connection (a killed worker) is an answer too. */
function ask(port: number): Promise<RawResponse | Error> {
  return get(port).catch((error: Error) => error);
}

test('60 concurrent requests over 3 worker processes with a SQLite cache and cacheLockDir run the action exactly once', async (t) => {
  const dir = tempDir(t, 'kb-workers-');
  const runsFile = join(dir, 'runs');
  const workers = await startWorkers(t, 3, {
    cache: `sqlite:${join(dir, 'cache.sqlite')}`,
    lockDir: join(dir, 'locks'),
    delayMs: 300,
    hold: true,
    runsFile,
  });
  const pending = Promise.all(Array.from({ length: 60 }, (_, i) => get(workers[i % 3]!.port)));
  await untilWaiting(workers, 59);
  release(workers);
  const responses = await pending;
  t.deepEqual(runs(runsFile).length, 1, `the action ran once in total (runs: ${runs(runsFile).join(', ')})`);
  const builder = runs(runsFile)[0];
  for (const response of responses) {
    t.is(response.status, 200, 'every request got the page');
    t.is(response.body.toString(), `<!doctype html><title>slow</title><p>built by ${builder} for /report</p>`);
  }
  const statuses = responses.map((r) => r.headers['cache-status']);
  t.is(statuses.filter((s) => s === 'koa-buffer; fwd=miss; stored').length, 1, 'one builder');
  t.is(
    statuses.filter((s) => s === 'koa-buffer; fwd=miss; collapsed').length,
    59,
    'every other request was collapsed into that build',
  );
  // Each process that did not build had exactly one request watching the store; the log says so once per process.
  const watchers = workers.map((w) => w.child.lines.filter((l) => l.includes('waiting for another process')).length);
  t.deepEqual(watchers.sort(), [0, 1, 1], 'one remote watcher per non-building process');

  const later = await get(workers[1]!.port);
  t.is(later.headers['x-cache'], 'HIT', 'a later request is a plain hit');
  t.is(runs(runsFile).length, 1);
});

test('the builder process SIGKILLed mid-build: the other workers answer 503 at once, never hang, and the next request builds', async (t) => {
  const dir = tempDir(t, 'kb-workers-');
  const runsFile = join(dir, 'runs');
  const workers = await startWorkers(t, 3, {
    cache: `sqlite:${join(dir, 'cache.sqlite')}`,
    lockDir: join(dir, 'locks'),
    delayMs: 0,
    hold: true,
    cacheLockTimeout: 8,
    runsFile,
  });
  const pending = Array.from({ length: 30 }, (_, i) => ({ worker: i % 3, answer: ask(workers[i % 3]!.port) }));
  const building = await Promise.race(
    workers.map((w, index) =>
      w.child.waitForJson<{ building?: number }>((m) => m.building !== undefined).then(() => index),
    ),
  );
  await untilWaiting(workers, 29); // every request but the build waits: now kill the builder
  const killedAt = Date.now();
  await workers[building]!.child.kill('SIGKILL');
  const answers = await Promise.all(pending.map(async (p) => ({ ...p, answer: await p.answer, at: Date.now() })));
  for (const { worker, answer, at } of answers) {
    if (worker === building) {
      t.true(answer instanceof Error, "the killed worker's own requests lose their connection");
      continue;
    }
    t.false(answer instanceof Error, 'a surviving worker answers');
    const response = answer as RawResponse;
    t.is(response.status, 503, 'the waiters are told to retry: the lock is free and no entry exists');
    t.is(response.headers['retry-after'], '1');
    t.is(response.headers['cache-status'], 'koa-buffer; fwd=miss; collapsed; detail=NO-ENTRY');
    t.true(at - killedAt < 2000, `answered ${at - killedAt} ms after the kill, long before cacheLockTimeout (8 s)`);
  }
  t.is(runs(runsFile).length, 1, 'nobody rebuilt meanwhile');
  const survivor = workers.find((_, i) => i !== building)!;
  release(workers);
  const next = await get(survivor.port);
  t.is(next.status, 200);
  t.is(next.headers['cache-status'], 'koa-buffer; fwd=miss; stored', 'the next request builds');
  t.is(runs(runsFile).length, 2);
});

test("the builder process SIGKILLed mid-build with cacheWaitFailure 'run': one surviving worker rebuilds for all its waiters", async (t) => {
  const dir = tempDir(t, 'kb-workers-');
  const runsFile = join(dir, 'runs');
  const workers = await startWorkers(t, 2, {
    cache: `sqlite:${join(dir, 'cache.sqlite')}`,
    lockDir: join(dir, 'locks'),
    delayMs: 200,
    hold: true,
    cacheLockTimeout: 8,
    cacheWaitFailure: 'run',
    runsFile,
  });
  const first = ask(workers[0]!.port);
  await workers[0]!.child.waitForJson<{ building?: number }>((m) => m.building !== undefined);
  const waiting = Array.from({ length: 10 }, () => ask(workers[1]!.port));
  await untilWaiting(workers, 10);
  release([workers[1]!]); // the rebuild that follows the kill may end at once
  await workers[0]!.child.kill('SIGKILL');
  t.true((await first) instanceof Error);
  const answers = (await Promise.all(waiting)) as RawResponse[];
  for (const response of answers) t.is(response.status, 200, 'every waiter got the page');
  t.is(runs(runsFile).length, 2, 'one rebuild, by the watcher that found the lock free, for the whole process');
  t.is(answers.filter((r) => r.headers['cache-status'] === 'koa-buffer; fwd=miss; stored').length, 1);
  t.is(answers.filter((r) => r.headers['cache-status'] === 'koa-buffer; fwd=miss; collapsed').length, 9);
});

test('a page that sets a cookie, asked by 30 clients over 3 processes: no 503, each client its own build, and later requests wait for nobody', async (t) => {
  const dir = tempDir(t, 'kb-workers-');
  const runsFile = join(dir, 'runs');
  const workers = await startWorkers(t, 3, {
    cache: `sqlite:${join(dir, 'cache.sqlite')}`,
    lockDir: join(dir, 'locks'),
    delayMs: 200,
    hold: true,
    runsFile,
    setCookie: true,
  });
  const pending = Promise.all(Array.from({ length: 30 }, (_, i) => get(workers[i % 3]!.port)));
  await untilWaiting(workers, 29);
  release(workers);
  const responses = await pending;
  t.deepEqual(
    responses.map((r) => r.status),
    Array.from({ length: 30 }, () => 200),
    'no 503: the waiters of a build that cannot be shared ran the action themselves',
  );
  const builds = responses.map((r) => /build (\d+-\d+)/.exec(r.body.toString())?.[1]);
  t.is(new Set(builds).size, 30, 'thirty builds, none handed to another client');
  for (const r of responses)
    t.is(r.headers['set-cookie']?.split(';')[0], `csrf=${/build (\S+)/.exec(r.body.toString())![1]}`);
  t.is(runs(runsFile).length, 30);
  // The key is marked hit-for-miss in the shared store: a later burst in every process waits for nobody.
  const waitedBefore = waitingRequests(workers);
  const later = await Promise.all(Array.from({ length: 12 }, (_, i) => get(workers[i % 3]!.port)));
  t.deepEqual(
    later.map((r) => r.status),
    Array.from({ length: 12 }, () => 200),
  );
  t.is(waitingRequests(workers), waitedBefore, 'nobody waited');
  t.is(logLines(workers, 'debug').filter((m) => m.includes('is remembered as not storable (SET-COOKIE)')).length, 12);
  t.deepEqual(logLines(workers, 'error'), [], 'nothing went wrong');
});
