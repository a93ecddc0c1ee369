/**
 * Stale entries across the worker processes of one host: real server
 * processes sharing a SQLite cache file and a FileLock directory, the action
 * appending to a shared file on every run, so builds are counted outside
 * every process. An expired page with a 1 s build is answered stale at once
 * to 50 concurrent requests, and rebuilt once per expiry in all; with
 * stale-if-error, a failing rebuild is answered stale by both workers.
 */
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import test from 'ava';
import { logLines, runs, startWorkers, tempDir } from '../helpers/cache-workers.ts';
import { rawRequest, type RawResponse } from '../helpers/serve.ts';

/** The workers listen on different ports, as behind one proxy: every request names the same Host. */
const host = { host: 'app.example' };

/** A request and how long its answer took, ms. */
async function timed(port: number): Promise<{ response: RawResponse; ms: number }> {
  const started = performance.now();
  const response = await rawRequest(port, '/report', { headers: host });
  return { response, ms: performance.now() - started };
}

async function until(condition: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 20_000;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`gave up waiting until ${what}`);
    await sleep(10);
  }
}

test('stale-while-revalidate over 2 workers on SQLite: 50 concurrent requests for an expired 1 s page are answered at once, built once per expiry', async (t) => {
  const dir = tempDir(t, 'kb-stale-workers-');
  const runsFile = join(dir, 'runs');
  const workers = await startWorkers(t, 2, {
    cache: `sqlite:${join(dir, 'cache.sqlite')}`,
    lockDir: join(dir, 'locks'),
    delayMs: 1000,
    cacheDuration: 2,
    cacheStaleWhileRevalidate: 60,
    runsFile,
  });
  const first = await timed(workers[0]!.port);
  t.is(first.response.headers['x-cache'], 'MISS');
  t.true(first.ms >= 1000, 'the first visitor waits for the build');
  for (let expiry = 1; expiry <= 2; expiry += 1) {
    await sleep(2100); // past the entry's TTL
    const answers = await Promise.all(Array.from({ length: 50 }, (_, i) => timed(workers[i % 2]!.port)));
    // Nobody waited for the build: every answer is the stale entry, or (on a machine so loaded that the
    // refresh ended before the last request came) the refreshed one; none is a miss or collapsed onto a build.
    for (const { response } of answers) {
      t.is(response.status, 200);
      t.true(['STALE', 'HIT'].includes(response.headers['x-cache']!), response.headers['cache-status']);
      t.regex(response.headers['cache-status']!, /^koa-buffer; hit(; fwd=stale)?; ttl=-?\d+$/);
    }
    t.true(answers.filter(({ response }) => response.headers['x-cache'] === 'STALE').length >= 25, 'most were stale');
    await until(() => runs(runsFile).length === expiry + 1, 'the refresh began');
    await sleep(1300); // it builds for 1 s, then stores
    const fresh = await timed(workers[expiry % 2]!.port);
    t.is(fresh.response.headers['x-cache'], 'HIT', 'the refresh replaced the entry for both workers');
    t.is(runs(runsFile).length, expiry + 1, `one build per expiry (runs: ${runs(runsFile).join(', ')})`);
  }
  t.deepEqual(logLines(workers, 'error'), [], 'nothing went wrong');
});

test('stale-if-error over 2 workers on SQLite: a rebuild that throws is answered stale by both', async (t) => {
  const dir = tempDir(t, 'kb-stale-workers-');
  const runsFile = join(dir, 'runs');
  const workers = await startWorkers(t, 2, {
    cache: `sqlite:${join(dir, 'cache.sqlite')}`,
    lockDir: join(dir, 'locks'),
    delayMs: 300,
    cacheDuration: 1,
    cacheStaleIfError: 60,
    runsFile,
  });
  const page = (await timed(workers[0]!.port)).response.body.toString();
  for (const w of workers) w.child.send('fail');
  await sleep(1100);
  const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => timed(workers[i % 2]!.port)));
  for (const { response } of answers) {
    t.is(response.status, 200);
    t.is(response.headers['x-cache'], 'STALE');
    t.regex(response.headers['cache-status']!, /^koa-buffer; hit; fwd=stale; ttl=-\d+; detail=[A-Z-]+$/);
    t.is(response.body.toString(), page);
  }
  t.true(runs(runsFile).length >= 2);
  t.true(
    logLines(workers, 'error').every((line) => /^the build of buffer:[0-9a-f]{32} failed/.test(line)),
    'only the failed builds are logged as errors',
  );
});
