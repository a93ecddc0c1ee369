/**
 * A custom lock backend that hangs: its acquire or release returns a
 * Promise that never settles. Each call is bounded by `cacheStoreTimeout`,
 * like a store call, not by `cacheLockTimeout` (the time a waiter may
 * wait): the miss builds after the short bound with one log line, and a
 * hanging release neither blocks the next request nor keeps a timer alive.
 */
import test, { type ExecutionContext } from 'ava';
import { buffer } from '../../src/buffer.ts';
import type { CacheLock } from '../../src/config/options.ts';
import { htmlPage, recordingLogger, serve } from '../helpers/serve.ts';

const page = htmlPage(4 * 1024, 3);
const storeMs = 150;
// Long enough that a miss bounded by it would show in the message; short enough that the old code's run ends.
const lockTimeout = 4;

/** A backend whose acquire (or release) never answers; it counts the calls. */
function hangingLock(hang: 'acquire' | 'release'): CacheLock & { calls: { acquire: number; release: number } } {
  const calls = { acquire: 0, release: 0 };
  return {
    calls,
    acquire() {
      calls.acquire++;
      return hang === 'acquire' ? new Promise(() => undefined) : [{ held: true }, undefined];
    },
    release() {
      calls.release++;
      return hang === 'release' ? new Promise(() => undefined) : [true, undefined];
    },
  } as CacheLock & { calls: { acquire: number; release: number } };
}

/** A cached page behind `lock`, stores bounded at storeMs; `runs()` counts its builds. */
async function site(t: ExecutionContext, lock: CacheLock) {
  const log = recordingLogger();
  let runs = 0;
  const middleware = buffer({
    cache: true,
    cacheLock: lock,
    cacheStoreTimeout: storeMs / 1000,
    cacheLockTimeout: lockTimeout,
    varyBy: [],
    logger: log,
  });
  const server = await serve(t, [
    middleware,
    async (ctx) => {
      if (await ctx.bufferIsCached()) return;
      runs++;
      ctx.type = 'html';
      ctx.body = page;
    },
  ]);
  return { server, log, runs: () => runs, middleware };
}

test('a hanging acquire costs each miss cacheStoreTimeout, not cacheLockTimeout: the page is built, with one log line naming the bound', async (t) => {
  const lock = hangingLock('acquire');
  const { server, log, runs } = await site(t, lock);
  const responses = await Promise.all(Array.from({ length: 5 }, () => server.request('/report')));
  for (const response of responses) {
    t.is(response.status, 200);
    t.is(response.body.toString(), page);
  }
  t.is(runs(), 1, 'the concurrent misses of the process still build once');
  t.is(lock.calls.acquire, 1, 'one acquire for the flight');
  const failures = log.lines.filter((l) => l.level === 'error');
  t.is(failures.length, 1, failures.map((l) => l.message).join(' | '));
  t.is(
    failures[0]!.message,
    `lock for buffer:${/[0-9a-f]{32}/.exec(failures[0]!.message)?.[0]} failed, building with a per-process flight: cache lock acquire did not answer within ${storeMs} ms`,
  );
  t.is((await server.request('/report')).headers['x-cache'], 'HIT', 'and the page was stored');
});

test('a hanging release never blocks the next miss of the key, and is bounded with a log line', async (t) => {
  const lock = hangingLock('release');
  const { server, log, runs, middleware } = await site(t, lock);
  // One after another, three keys: each miss takes the lock and its release hangs.
  for (let i = 0; i < 3; i++) t.is((await server.request(`/report/${i}`)).status, 200);
  t.is(runs(), 3);
  t.is(lock.calls.release, 3, 'each miss released its lock without waiting for the one before');
  await new Promise((resolve) => setTimeout(resolve, storeMs * 3));
  // The three fail within a second: the first is written, the others folded into the next line's count.
  const failures = log.lines.filter((l) => l.level === 'error').map((l) => l.message);
  t.is(failures.length, 1, failures.join(' | '));
  t.regex(failures[0]!, new RegExp(`cache lock release did not answer within ${storeMs} ms`));
  t.is(middleware.stats().lock.custom?.timeouts, 3, 'each timed-out release is counted');
});
