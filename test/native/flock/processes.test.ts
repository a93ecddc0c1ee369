/**
 * flock across real processes: a child (test/fixtures/lock-holder.ts) holds
 * the lock and is killed mid-lock, and a child spawned while the parent
 * holds a lock does not inherit it (O_CLOEXEC).
 */
import test, { type ExecutionContext } from 'ava';
import { fork, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, readdirSync, readlinkSync, realpathSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { once } from 'node:events';
import { addon, addonUnavailableReason, packageRoot } from '../../../src/native/binding.ts';
import { LOCK_BUSY, type FlockPrimitives } from '../../../src/native/types.ts';

// Windows builds have no flock(2) (binding.gyp); test/locks/file-lock-platform.test.ts covers them.
const skipReason =
  process.platform === 'win32'
    ? 'Windows builds of the addon have no flock(2)'
    : addon
      ? undefined
      : `the native addon is unavailable (${addonUnavailableReason}); build it with npx node-gyp rebuild`;
const run = skipReason ? test.skip : test;
if (skipReason) console.log(`# flock process tests skipped: ${skipReason}`);
const lock: FlockPrimitives = addon!;
const holderScript = join(packageRoot, 'test', 'fixtures', 'lock-holder.ts');

interface Report {
  event: string;
  fd?: number;
  errno?: number;
}

function tempDir(t: ExecutionContext): string {
  const dir = mkdtempSync(join(tmpdir(), 'kb-flock-proc-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** Forks the lock holder; it is killed in teardown if still alive. */
function holder(t: ExecutionContext, path: string, mode = 'hold'): ChildProcess {
  const child = fork(holderScript, [path, mode], {
    cwd: packageRoot,
    execArgv: ['--import', 'tsx'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  t.teardown(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
  });
  return child;
}

async function nextReport(child: ChildProcess): Promise<Report> {
  const [message] = (await Promise.race([
    once(child, 'message'),
    once(child, 'exit').then(([code]) => {
      throw new Error(`lock holder exited with ${code} before reporting`);
    }),
  ])) as [Report];
  return message;
}

function exited(child: ChildProcess): Promise<unknown> {
  return child.exitCode !== null || child.signalCode !== null ? Promise.resolve() : once(child, 'exit');
}

run('a child holds the lock, the parent sees busy; after SIGKILL the parent acquires at once', async (t) => {
  const path = join(tempDir(t), 'held.lock');
  const child = holder(t, path);
  const report = await nextReport(child);
  t.is(report.event, 'acquired', 'the child took the lock');
  t.is(lock.acquireLockFile(path), LOCK_BUSY, 'the parent sees busy while the child holds it');
  child.kill('SIGKILL');
  await exited(child);
  t.is(child.signalCode, 'SIGKILL', 'the child died mid-lock');
  const fd = lock.acquireLockFile(path);
  t.true(fd >= 0, "the kernel freed the dead holder's lock: the first attempt succeeds");
  lock.closeFd(fd);
});

run('a child that releases on request frees the lock for the parent', async (t) => {
  const path = join(tempDir(t), 'released.lock');
  const child = holder(t, path);
  t.is((await nextReport(child)).event, 'acquired');
  t.is(lock.acquireLockFile(path), LOCK_BUSY, 'busy while held');
  child.send('release');
  t.is((await nextReport(child)).event, 'released');
  const fd = lock.acquireLockFile(path);
  t.true(fd >= 0, 'free once the child released, though it may still be running');
  lock.closeFd(fd);
  await exited(child);
});

run('a lock the parent holds is busy for a child process', async (t) => {
  const path = join(tempDir(t), 'parent.lock');
  const fd = lock.acquireLockFile(path);
  t.true(fd >= 0);
  t.teardown(() => lock.closeFd(fd));
  const child = holder(t, path, 'try');
  t.is((await nextReport(child)).event, 'busy', "the child sees the parent's lock");
  await exited(child);
});

run(
  'a child spawned while the parent holds a lock does not keep it after the parent releases (O_CLOEXEC)',
  async (t) => {
    const path = join(tempDir(t), 'cloexec.lock');
    const fd = lock.acquireLockFile(path);
    t.true(fd >= 0);
    // Two bystanders: an exec'd program that keeps whatever it inherits, and a forked node.
    const sleeper = spawn('sleep', ['60'], { stdio: 'ignore' });
    t.teardown(() => {
      sleeper.kill('SIGKILL');
    });
    const idle = holder(t, path, 'idle');
    t.is((await nextReport(idle)).event, 'ready');
    const target = realpathSync(path); // /proc shows resolved paths
    for (const child of [sleeper, idle]) {
      const inherited = readdirSync(`/proc/${child.pid}/fd`).filter((entry) => {
        try {
          return readlinkSync(`/proc/${child.pid}/fd/${entry}`) === target;
        } catch {
          return false;
        }
      });
      t.deepEqual(inherited, [], `child ${child.pid} holds no descriptor of the lock file`);
    }
    t.is(lock.unlock(fd), 0);
    t.is(lock.closeFd(fd), 0);
    t.true(sleeper.exitCode === null && idle.exitCode === null, 'both children are still running');
    const again = lock.acquireLockFile(path);
    t.true(again >= 0, 'the lock is free although the children live on');
    lock.closeFd(again);
  },
);
