import test from 'ava';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { Lock } from '../../src/locks/lock.ts';
import { MemoryLock, type MemoryLockGuard } from '../../src/locks/memory-lock.ts';
import type { AcquireOptions, AcquireResult, LockBackend, ReleaseResult } from '../../src/locks/protocol.ts';

/** A real MemoryLock that also notes when each acquire came and with which options. */
class RecordingLock implements LockBackend<MemoryLockGuard> {
  readonly inner = new MemoryLock();
  readonly attempts: number[] = [];
  readonly options: Array<AcquireOptions | undefined> = [];
  /** Called with the attempt's number (from 1) before it reaches the MemoryLock. */
  beforeAttempt: (attempt: number) => void = () => undefined;
  acquire(key: string, options?: AcquireOptions): AcquireResult<MemoryLockGuard> {
    this.attempts.push(performance.now());
    this.beforeAttempt(this.attempts.length);
    this.options.push(options);
    return this.inner.acquire(key, options);
  }
  release(guard: MemoryLockGuard | null | undefined): ReleaseResult {
    return this.inner.release(guard);
  }
  expire(guard: MemoryLockGuard, ttl: number): ReleaseResult {
    return this.inner.expire(guard, ttl);
  }
}

const sum = (values: number[]): number => values.reduce((a, b) => a + b, 0);

test('a free key is locked at once with elapsed 0, and the exptime goes to the backend as ttl', async (t) => {
  const backend = new RecordingLock();
  const lock = new Lock(backend, { exptime: 12 });
  t.deepEqual(await lock.lock('k'), [0, undefined]);
  t.deepEqual(backend.options, [{ ttl: 12 }]);
  t.true(lock.locked);
  t.is(lock.key, 'k');
  t.deepEqual(await lock.unlock(), [true, undefined]);
  t.false(lock.locked);
});

test('while busy it sleeps step, step×ratio, … capped by maxStep and by the time left, then says timeout', async (t) => {
  const options = { timeout: 0.05, step: 0.001, ratio: 2, maxStep: 0.01 };
  // lua-resty-lock's sequence: 1, 2, 4, 8 ms, then maxStep 10, 10, 10, then the 5 ms left.
  const expected = [0.001, 0.002, 0.004, 0.008, 0.01, 0.01, 0.01, 0.005];
  // Timers are not exact, but elapsed is: free the key just before attempt n+1, and
  // elapsed must be the sum of exactly the first n sleeps, whatever the clock did.
  const sleeps: number[] = [];
  let previous = 0;
  for (let n = 1; n <= expected.length; n++) {
    const backend = new RecordingLock();
    const [holder] = backend.inner.acquire('k');
    backend.beforeAttempt = (attempt) => {
      if (attempt === n + 1) backend.inner.release(holder);
    };
    const [elapsed, error] = await new Lock(backend, options).lock('k');
    t.is(error, undefined, `freed before attempt ${n + 1}`);
    sleeps.push(Number((elapsed! - previous).toFixed(9)));
    previous = elapsed!;
  }
  t.deepEqual(sleeps, expected);

  const backend = new RecordingLock();
  backend.inner.acquire('k');
  const started = performance.now();
  const lock = new Lock(backend, options);
  t.deepEqual(await lock.lock('k'), [null, 'timeout']);
  t.is(backend.attempts.length, expected.length + 1, 'one attempt, then one after each sleep, then timeout');
  t.true(performance.now() - started >= 45, 'it waited about the 50 ms timeout');
  t.false(lock.locked, 'a timed-out instance holds nothing');
});

test('elapsed is the sum of the sleeps taken before the lock came free, not wall-clock time', async (t) => {
  const backend = new RecordingLock();
  const [holder] = backend.inner.acquire('k');
  setTimeout(() => backend.inner.release(holder), 40);
  const lock = new Lock(backend, { timeout: 1, step: 0.001, ratio: 3, maxStep: 0.5 });
  const [elapsed, error] = await lock.lock('k');
  t.is(error, undefined);
  const sleeps = [0.001, 0.003, 0.009, 0.027, 0.081, 0.243, 0.5].slice(0, backend.attempts.length - 1);
  t.true(backend.attempts.length >= 2, 'it had to wait');
  t.true(Math.abs(elapsed! - sum(sleeps)) < 1e-9, `elapsed ${elapsed} is the sum of ${sleeps.join(' + ')}`);
  await lock.unlock();
});

test('timeout 0 tries exactly once', async (t) => {
  const backend = new RecordingLock();
  backend.inner.acquire('k');
  const lock = new Lock(backend, { timeout: 0 });
  t.deepEqual(await lock.lock('k'), [null, 'timeout']);
  t.is(backend.attempts.length, 1);
  t.deepEqual(await lock.lock('free'), [0, undefined], 'a free key is still taken');
});

test("an instance holds one lock: a second lock() says 'locked', also while the first is waiting", async (t) => {
  const memory = new MemoryLock();
  const lock = new Lock(memory);
  t.deepEqual(await lock.lock('a'), [0, undefined]);
  t.deepEqual(await lock.lock('b'), [null, 'locked'], 'another key on the same instance');
  t.not(memory.acquire('b')[0], null, "the refused key was not taken behind the caller's back");
  await lock.unlock();

  const [holder] = memory.acquire('busy');
  const waiting = new Lock(memory, { timeout: 1 });
  const first = waiting.lock('busy');
  t.deepEqual(await waiting.lock('other'), [null, 'locked'], 'a lock() while another waits');
  memory.release(holder);
  t.is((await first)[1], undefined, 'the waiting one still gets its lock');
  await waiting.unlock();
});

test("unlock and expire with nothing held say 'unlocked'", async (t) => {
  const lock = new Lock(new MemoryLock());
  t.deepEqual(await lock.unlock(), [null, 'unlocked']);
  t.deepEqual(await lock.expire(), [null, 'unlocked']);
  await lock.lock('k');
  t.deepEqual(await lock.unlock(), [true, undefined]);
  t.deepEqual(await lock.unlock(), [null, 'unlocked'], 'a second unlock');
});

test('an interval timer keeps firing while a lock waits: waiting never blocks the event loop', async (t) => {
  const memory = new MemoryLock();
  memory.acquire('k');
  let ticks = 0;
  const interval = setInterval(() => ticks++, 10);
  const delay = monitorEventLoopDelay({ resolution: 5 });
  delay.enable();
  const [, error] = await new Lock(memory, { timeout: 0.3, maxStep: 0.05 }).lock('k');
  delay.disable();
  clearInterval(interval);
  t.is(error, 'timeout');
  t.true(ticks >= 10, `the 10 ms interval fired ${ticks} times during a 300 ms wait`);
  t.true(
    delay.max / 1e6 < 250,
    `the event loop never stalled for the whole wait (max delay ${(delay.max / 1e6).toFixed(1)} ms)`,
  );
});

test('exptime frees a MemoryLock whose holder never unlocks, and the late unlock says it was lost', async (t) => {
  const memory = new MemoryLock();
  const forgetful = new Lock(memory, { timeout: 0, exptime: 0.1 });
  const started = performance.now(); // before the lock is taken: its exptime counts from then at the latest
  t.deepEqual(await forgetful.lock('k'), [0, undefined]);
  const waiter = new Lock(memory, { timeout: 2 });
  const asked = performance.now() - started;
  const [elapsed, error] = await waiter.lock('k');
  const wall = performance.now() - started;
  t.is(error, undefined, 'the waiter gets the lock once the exptime ran out');
  t.true(wall >= 90, `not before the exptime (${wall.toFixed(0)} ms)`);
  // A loaded machine can hold this test up past the exptime before the waiter asks: then it need not wait.
  t.true(elapsed! > 0 || asked >= 100, `it waited for the exptime (asked after ${asked.toFixed(0)} ms)`);
  const [ok, lost] = await forgetful.unlock();
  t.is(ok, null);
  t.regex(lost!, /no longer held/);
  await waiter.unlock();
});

test('expire() extends the held lock, to its argument or to exptime', async (t) => {
  const memory = new MemoryLock();
  // Exptime 0.5 s, not less: a loaded CI machine held a test up for over 100 ms between two calls.
  const holder = new Lock(memory, { timeout: 0, exptime: 0.5 });
  await holder.lock('k');
  t.deepEqual(await holder.expire(3), [true, undefined]);
  const waiter = new Lock(memory, { timeout: 0.8, exptime: 1 });
  t.deepEqual(await waiter.lock('k'), [null, 'timeout'], 'still held well past the first exptime');
  t.deepEqual(await holder.expire(), [true, undefined], 'back to exptime, 0.5 s');
  const [elapsed, error] = await new Lock(memory, { timeout: 3 }).lock('k');
  t.is(error, undefined);
  t.true(elapsed !== null && elapsed > 0, 'taken once the exptime ran out');
  t.is(holder.exptime, 0.5, 'expire never changes exptime');
});

test('expire() on a backend without a time to live says so', async (t) => {
  const memory = new MemoryLock();
  const plain: LockBackend<MemoryLockGuard> = { acquire: (k) => memory.acquire(k), release: (g) => memory.release(g) };
  const lock = new Lock(plain);
  await lock.lock('k');
  t.deepEqual(await lock.expire(5), [null, 'this lock backend has no time to live to extend']);
});

test('a backend that throws or answers nonsense is a failure message, never a throw', async (t) => {
  const throwing: LockBackend = {
    acquire: () => {
      throw new Error('disk on fire');
    },
    release: () => [true, undefined],
  };
  t.deepEqual(await new Lock(throwing).lock('k'), [null, 'the lock backend failed: disk on fire']);
  const rejecting: LockBackend = { acquire: () => Promise.reject(new Error('gone')), release: () => [true, undefined] };
  const lock = new Lock(rejecting);
  t.deepEqual(await lock.lock('k'), [null, 'the lock backend failed: gone']);
  t.false(lock.locked, 'a failed lock() leaves the instance free');
  const odd = { acquire: () => 'yes', release: () => [true, undefined] } as unknown as LockBackend;
  t.deepEqual(await new Lock(odd).lock('k'), [null, 'the lock backend failed: "yes"']);
  const undefinedBusy = {
    acquire: () => [undefined, undefined],
    release: () => [true, undefined],
  } as unknown as LockBackend;
  t.deepEqual(
    await new Lock(undefinedBusy, { timeout: 0 }).lock('k'),
    [null, 'timeout'],
    'undefined as guard means busy',
  );
});

test('bad options throw TypeError or RangeError naming the option', (t) => {
  const memory = new MemoryLock();
  const cases: Array<[Record<string, unknown>, new () => Error, RegExp]> = [
    [{ timeout: '5' }, TypeError, /timeout must be a finite number/],
    [{ step: Number.NaN }, TypeError, /step must be a finite number/],
    [{ maxStep: Infinity }, TypeError, /maxStep must be a finite number/],
    [{ exptime: null }, TypeError, /exptime must be a finite number/],
    [{ timeout: -1 }, RangeError, /timeout must not be negative/],
    [{ ratio: -2 }, RangeError, /ratio must not be negative/],
    [{ step: 0 }, RangeError, /step must be greater than 0/],
    [{ maxStep: 0 }, RangeError, /maxStep must be greater than 0/],
    [{ exptime: 0, timeout: 0 }, RangeError, /exptime must be greater than 0/],
    [{ ratio: 0.5 }, RangeError, /ratio must be at least 1/],
    [{ timeout: 31 }, RangeError, /timeout \(31 s\) may not exceed exptime \(30 s\)/],
    [{ max_step: 1 }, TypeError, /unknown Lock option 'max_step'/],
  ];
  for (const [options, type, message] of cases) {
    t.throws(() => new Lock(memory, options), { instanceOf: type, message }, JSON.stringify(options));
  }
  t.throws(() => new Lock({} as LockBackend), { instanceOf: TypeError, message: /acquire\(\) and release\(\)/ });
  t.notThrows(
    () => new Lock(memory, { timeout: 30, exptime: 30, ratio: 1 }),
    'timeout equal to exptime and ratio 1 are fine',
  );
});

test('expire() with a bad ttl throws naming it', async (t) => {
  const lock = new Lock(new MemoryLock());
  await lock.lock('k');
  await t.throwsAsync(lock.expire(0), { instanceOf: RangeError, message: /ttl must be greater than 0/ });
  await t.throwsAsync(lock.expire('1' as unknown as number), {
    instanceOf: TypeError,
    message: /ttl must be a finite number/,
  });
});

test('concurrent waiters on one key all get it in turn', async (t) => {
  const memory = new MemoryLock();
  let inside = 0;
  let most = 0;
  await Promise.all(
    Array.from({ length: 8 }, async () => {
      const lock = new Lock(memory, { timeout: 5, maxStep: 0.01 });
      const [elapsed, error] = await lock.lock('shared');
      t.is(error, undefined);
      t.not(elapsed, null);
      most = Math.max(most, ++inside);
      await sleep(5);
      inside--;
      t.deepEqual(await lock.unlock(), [true, undefined]);
    }),
  );
  t.is(most, 1, 'never two holders at once');
});

test('the waiting Lock over a FileLock gets the key as soon as another process releases it', async (t) => {
  const { mkdtempSync, rmSync } = await import('node:fs');
  const { tmpdir } = await import('node:os');
  const { join } = await import('node:path');
  const { FileLock } = await import('../../src/locks/file-lock.ts');
  const { fixture, spawnChild } = await import('../helpers/children.ts');
  const dir = mkdtempSync(join(tmpdir(), 'kb-lock-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const agent = spawnChild(t, fixture('../../support/lock-agent.ts'), ['file', dir]);
  await agent.waitForJson((m) => m.ready === true, 'the agent to start');
  t.true((await agent.request({ op: 'acquire', key: 'report' })).taken);
  const lock = new Lock(new FileLock({ dir }), { timeout: 5, maxStep: 0.05 });
  const waiting = lock.lock('report');
  await sleep(150);
  t.true(lock.locked, 'still waiting while the other process holds it');
  const released = await agent.request({ op: 'release', key: 'report' });
  t.true(released.ok);
  const [elapsed, error] = await waiting;
  t.is(error, undefined);
  t.true(elapsed! >= 0.1, `it waited (elapsed ${elapsed})`);
  t.false((await agent.request({ op: 'acquire', key: 'report' })).taken, 'and now holds it against the other process');
  t.deepEqual(await lock.expire(), [null, 'this lock backend has no time to live to extend']);
  t.deepEqual(await lock.unlock(), [true, undefined]);
});
