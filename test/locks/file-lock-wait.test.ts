/**
 * The waiting Lock over a FileLock is woken by the release: a real holder
 * process on a real lock file, a waiter in this process, and the time from
 * the holder's release (or death) to the waiter's acquire measured on the
 * one monotonic clock every process shares.
 */
import test, { type ExecutionContext, type Implementation } from 'ava';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readlinkSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { FileLock } from '../../src/locks/file-lock.ts';
import { Lock } from '../../src/locks/lock.ts';
import type { LockBackend } from '../../src/locks/protocol.ts';
import { md5 } from '../../src/native/exports.ts';
import { fixture, spawnChild, type LineChild } from '../helpers/children.ts';

const haveFlock = !spawnSync('/usr/bin/flock', ['--version']).error;

/** Timing tests run one at a time, so they do not compete for the cores; without flock(1) they say what to install. */
function serial(title: string, implementation: Implementation<[]>): void {
  if (haveFlock) test.serial(title, implementation);
  else test.serial.skip(`${title} (skipped: install util-linux for /usr/bin/flock)`, implementation);
}

/** Generous for a noisy shared machine; polling with the default maxStep of 0.5 s takes up to 500 ms. */
const wokenWithinMs = 150;

function tempDir(t: ExecutionContext): string {
  const dir = mkdtempSync(join(tmpdir(), 'kb-lock-wait-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

async function holderOf(t: ExecutionContext, dir: string, key: string): Promise<LineChild> {
  const agent = spawnChild(t, fixture('../../support/lock-agent.ts'), ['file', dir]);
  await agent.waitForJson((m) => m.ready === true, 'the agent to start');
  t.true((await agent.request({ op: 'acquire', key })).taken, 'the holder has the key');
  return agent;
}

/** Every descriptor of every process that points at `path`, as `pid/fd`. */
function openersOf(path: string): string[] {
  const found: string[] = [];
  for (const pid of readdirSync('/proc').filter((name) => /^\d+$/.test(name))) {
    let fds: string[];
    try {
      fds = readdirSync(`/proc/${pid}/fd`);
    } catch {
      continue; // gone, or another user's
    }
    for (const fd of fds) {
      try {
        if (readlinkSync(`/proc/${pid}/fd/${fd}`) === path) found.push(`${pid}/${fd}`);
      } catch {
        // closed while we looked
      }
    }
  }
  return found;
}

/** The same backend without waitForRelease: the waiting Lock polls it, as before. */
function pollingOnly(backend: FileLock): LockBackend {
  return { acquire: (key) => backend.acquire(key), release: (guard) => backend.release(guard as never) };
}

async function latencyAfterRelease(t: ExecutionContext, dir: string, backend: LockBackend): Promise<number> {
  const agent = await holderOf(t, dir, 'report');
  const lock = new Lock(backend, { timeout: 10 });
  const waiting = lock.lock('report').then((result) => ({ result, at: process.hrtime.bigint() }));
  // Long enough for the polling sleeps to have grown to their 0.5 s cap.
  await sleep(1200);
  t.true(lock.locked, 'still waiting while the other process holds it');
  const released = await agent.request<{ ok: boolean; at: string }>({ op: 'release', key: 'report' });
  t.true(released.ok);
  const { result, at } = await waiting;
  t.is(result[1], undefined);
  t.deepEqual(await lock.unlock(), [true, undefined]);
  return Number(at - BigInt(released.at)) / 1e6;
}

serial('a waiter is woken by the release itself, not by its next poll', async (t) => {
  const dir = tempDir(t);
  const locks = new FileLock({ dir });
  t.is(typeof locks.waitForRelease, 'function');
  let ticks = 0;
  const interval = setInterval(() => ticks++, 10);
  const woken = await latencyAfterRelease(t, dir, locks);
  clearInterval(interval);
  t.true(ticks >= 60, `the event loop kept running while the waiter was blocked (${ticks} ticks)`);
  const polled = await latencyAfterRelease(t, dir, pollingOnly(locks));
  t.log(`release → acquire: ${woken.toFixed(1)} ms woken, ${polled.toFixed(1)} ms polling`);
  t.true(woken < wokenWithinMs, `woken ${woken.toFixed(1)} ms after the release`);
});

serial('a holder killed with SIGKILL wakes the waiter at once', async (t) => {
  const dir = tempDir(t);
  const agent = await holderOf(t, dir, 'report');
  const lock = new Lock(new FileLock({ dir }), { timeout: 10 });
  const waiting = lock.lock('report').then((result) => ({ result, at: performance.now() }));
  await sleep(1200);
  t.true(lock.locked);
  const killed = performance.now();
  await agent.kill('SIGKILL');
  const { result, at } = await waiting;
  t.is(result[1], undefined);
  t.log(`kill -9 → acquire: ${(at - killed).toFixed(1)} ms`);
  t.true(at - killed < wokenWithinMs, `woken ${(at - killed).toFixed(1)} ms after the kill`);
  t.deepEqual(await lock.unlock(), [true, undefined]);
});

serial('a wait that times out says timeout and leaves no lock, descriptor or process behind', async (t) => {
  const dir = tempDir(t);
  const path = join(dir, `${md5('report')}.lock`);
  const agent = await holderOf(t, dir, 'report');
  const holderFds = openersOf(path);
  t.is(holderFds.length, 1, 'only the holder has the file open');
  const locks = new FileLock({ dir });
  const lock = new Lock(locks, { timeout: 0.3 });
  const started = performance.now();
  t.deepEqual(await lock.lock('report'), [null, 'timeout']);
  t.true(performance.now() - started >= 300, 'it waited the whole timeout');
  t.false(lock.locked);
  t.deepEqual(openersOf(path), holderFds, 'no descriptor of the waiter or of a flock(1) left on the file');
  t.true((await agent.request({ op: 'release', key: 'report' })).ok);
  const [guard, error] = locks.acquire('report');
  t.is(error, undefined);
  t.not(guard, null, 'free as soon as the holder lets go: the abandoned wait holds nothing');
  locks.release(guard);
});

serial('with removeOnRelease, a waiter woken on a removed file locks the file the path names now', async (t) => {
  const dir = tempDir(t);
  const holder = new FileLock({ dir, removeOnRelease: true });
  const [held] = holder.acquire('report');
  t.not(held, null);
  const lock = new Lock(new FileLock({ dir, removeOnRelease: true }), { timeout: 5 });
  const waiting = lock.lock('report');
  await sleep(300);
  holder.release(held);
  const [elapsed, error] = await waiting;
  t.is(error, undefined);
  t.true(elapsed! < 5);
  const [other] = holder.acquire('report');
  t.is(other, null, 'the waiter holds the lock of the file the path names');
  t.deepEqual(await lock.unlock(), [true, undefined]);
});
