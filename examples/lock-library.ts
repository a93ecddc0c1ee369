/**
 * Recipe: the lock library in a script. Only one copy of a job runs at a
 * time on this host; a second copy started meanwhile waits for the first
 * (up to WAIT_SECONDS) and then runs, or gives up.
 *
 *   node --import tsx examples/lock-library.ts &
 *   node --import tsx examples/lock-library.ts      # waits for the first
 *
 * Environment: LOCK_DIR (default under the temp directory), JOB_SECONDS
 * (default 1), WAIT_SECONDS (default 5; 0 tries once). Exits 75 when the
 * lock stayed busy, as koa-buffer-lock does.
 *
 * FileLock is one flock(2) file per key: the lock goes with the process, so a
 * job that crashes or is killed never leaves a stale lock behind. For jobs on
 * several hosts, use `new RedisLock({ redis: url })` instead: the code is the same.
 */
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { FileLock, Lock } from 'koa-buffer';

const dir = process.env.LOCK_DIR || join(tmpdir(), `koa-buffer-lock-example-${process.getuid?.() ?? 'user'}`);
const jobSeconds = Number(process.env.JOB_SECONDS ?? 1);
const waitSeconds = Number(process.env.WAIT_SECONDS ?? 5);
const say = (text: string): void => console.log(`[${process.pid}] ${text} at ${Date.now()}`);

const files = new FileLock({ dir }); // creates dir (0700) if needed; throws if it cannot be written

// Try once, without waiting: acquire() answers at once with a guard, or null when another holder has it.
const [probe] = files.acquire('nightly-report');
say(probe ? 'nobody holds nightly-report' : 'another copy holds nightly-report');
files.release(probe); // a null guard is ignored

// Wait for it: the sleeps grow from step by ratio up to maxStep, without blocking the event loop.
const lock = new Lock(files, {
  timeout: waitSeconds,
  step: 0.01,
  ratio: 2,
  maxStep: 0.25,
  exptime: Math.max(30, waitSeconds),
});
const [elapsed, error] = await lock.lock('nightly-report');
if (elapsed === null) {
  say(`gave up: ${error}`); // 'timeout' when still busy, or the backend's message
  process.exit(75);
}
say(`locked after waiting ${elapsed.toFixed(3)} s`);
try {
  await sleep(jobSeconds * 1000); // the job
} finally {
  const [ok, unlockError] = await lock.unlock();
  say(ok ? 'released' : `could not release: ${unlockError}`);
}
