/**
 * The flock primitives in one process: three outcomes, errors as negative
 * errno values (never a throw, never a crash), TypeErrors only for argument
 * shapes, and no descriptor left behind.
 */
import test from 'ava';
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import {
  chmodSync,
  copyFileSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  rmSync,
  statSync,
  symlinkSync,
  existsSync,
} from 'node:fs';
import { constants, tmpdir } from 'node:os';
import { join } from 'node:path';
import { addon, addonUnavailableReason, packageRoot } from '../../../src/native/binding.ts';
import { asNobody, nobodyCanRead, runningAsRoot } from '../../helpers/as-nobody.ts';
import { LOCK_BUSY, type FlockPrimitives } from '../../../src/native/types.ts';

const { ELOOP, ENOENT, EACCES, EROFS, EBADF } = constants.errno;
// Windows builds have no flock(2) (binding.gyp); test/locks/file-lock-platform.test.ts covers them.
const skipReason =
  process.platform === 'win32'
    ? 'Windows builds of the addon have no flock(2)'
    : addon
      ? undefined
      : `the native addon is unavailable (${addonUnavailableReason}); build it with npx node-gyp rebuild`;
const run = skipReason ? test.skip : test;
if (skipReason) console.log(`# flock tests skipped: ${skipReason}`);
const lock: FlockPrimitives = addon!;
const holderScript = join(packageRoot, 'test', 'fixtures', 'lock-holder.ts');
const nodeGypBuild = createRequire(import.meta.url)('node-gyp-build') as { path(dir: string): string };

function tempDir(t: { teardown(fn: () => void): void }): string {
  const dir = mkdtempSync(join(tmpdir(), 'kb-flock-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

function openFds(): number {
  return readdirSync('/proc/self/fd').length;
}

run('a second descriptor of the same file sees busy until the first unlocks', (t) => {
  const path = join(tempDir(t), 'a.lock');
  const first = lock.openLockFile(path);
  const second = lock.openLockFile(path);
  t.teardown(() => {
    lock.closeFd(first);
    lock.closeFd(second);
  });
  t.true(first >= 0 && second >= 0, 'both opens give a descriptor');
  t.is(lock.tryLock(first), 0, 'the first descriptor takes the lock');
  t.is(lock.tryLock(second), 1, 'the second descriptor sees busy');
  t.is(lock.unlock(first), 0, 'unlock succeeds');
  t.is(lock.tryLock(second), 0, 'after unlock the second descriptor takes it');
});

run('acquireLockFile returns the held descriptor, then LOCK_BUSY with nothing left open', (t) => {
  const path = join(tempDir(t), 'b.lock');
  const held = lock.acquireLockFile(path);
  t.true(held >= 0, 'the first acquire holds a descriptor');
  const before = openFds();
  t.is(lock.acquireLockFile(path), LOCK_BUSY, 'a second acquire is busy');
  t.is(openFds(), before, 'the busy attempt closed its descriptor');
  t.is(lock.closeFd(held), 0, 'closing the holder succeeds');
  const again = lock.acquireLockFile(path);
  t.true(again >= 0, 'closing released the lock');
  lock.closeFd(again);
});

run('the lock file is created with mode 0600, whatever the umask allows', (t) => {
  const path = join(tempDir(t), 'mode.lock');
  const previous = process.umask(0);
  let fd: number;
  try {
    fd = lock.openLockFile(path);
  } finally {
    process.umask(previous);
  }
  t.true(fd >= 0);
  lock.closeFd(fd);
  t.is(statSync(path).mode & 0o7777, 0o600, 'owner read and write only');
});

run('a symlink at the lock path gives -ELOOP and creates nothing through it', (t) => {
  const dir = tempDir(t);
  const target = join(dir, 'target');
  const link = join(dir, 'link.lock');
  symlinkSync(target, link);
  t.is(lock.openLockFile(link), -ELOOP!, 'openLockFile refuses the symlink');
  t.is(lock.acquireLockFile(link), -ELOOP!, 'acquireLockFile reports the open failure as -ELOOP');
  t.false(existsSync(target), 'the symlink target was not created');
});

run('a missing directory gives -ENOENT', (t) => {
  const path = join(tempDir(t), 'missing', 'x.lock');
  t.is(lock.openLockFile(path), -ENOENT!);
  t.is(lock.acquireLockFile(path), -ENOENT!);
  t.is(lock.strerror(-ENOENT!), 'No such file or directory', 'strerror names it');
});

// Root ignores directory permissions, so as root the attempt runs in a child
// started as nobody (65534); otherwise the 0500 directory stops us directly.
run('a read-only directory gives -EACCES (or -EROFS)', (t) => {
  const dir = tempDir(t);
  chmodSync(dir, 0o755);
  const readOnly = join(dir, 'read-only');
  mkdirSync(readOnly, { mode: 0o500 });
  const path = join(readOnly, 'x.lock');
  if (!runningAsRoot()) {
    const result = lock.acquireLockFile(path);
    t.true(result === -EACCES! || result === -EROFS!, `acquire gives -EACCES, got ${result}`);
    return;
  }
  const nobodyOptions = { ...asNobody(dir), encoding: 'utf8', timeout: 30_000 } as const;
  // The lock holder needs to read the repository; where nobody cannot (a
  // checkout under /root), a copy of the addon in the temp dir does the same.
  let child;
  if (nobodyCanRead(holderScript)) {
    child = spawnSync(process.execPath, ['--import', 'tsx', holderScript, path, 'try'], {
      ...nobodyOptions,
      cwd: packageRoot,
    });
  } else {
    t.log('nobody cannot read the repository: running a copy of the addon from the temp dir');
    const addonCopy = join(dir, 'koa_buffer.node');
    copyFileSync(nodeGypBuild.path(packageRoot), addonCopy);
    chmodSync(addonCopy, 0o755);
    const script = `const r = require(${JSON.stringify(addonCopy)}).acquireLockFile(${JSON.stringify(path)});
      console.log(JSON.stringify(r >= 0 ? { event: 'acquired', fd: r } : { event: 'error', errno: r }));`;
    child = spawnSync(process.execPath, ['-e', script], { ...nobodyOptions, cwd: dir });
  }
  t.is(child.status, 0, `the child as nobody ran: ${child.stderr}`);
  const report = JSON.parse(child.stdout.trim().split('\n').pop() ?? '{}') as { event?: string; errno?: number };
  t.is(report.event, 'error', 'nobody cannot create a lock file there');
  t.true(report.errno === -EACCES! || report.errno === -EROFS!, `the error is -EACCES, got ${report.errno}`);
});

run('operations on a closed descriptor give -EBADF, and strerror takes either sign', (t) => {
  const fd = lock.openLockFile(join(tempDir(t), 'c.lock'));
  t.is(lock.closeFd(fd), 0);
  t.is(lock.tryLock(fd), -EBADF!, 'tryLock');
  t.is(lock.unlock(fd), -EBADF!, 'unlock');
  t.is(lock.closeFd(fd), -EBADF!, 'closeFd');
  t.is(lock.tryLock(-1), -EBADF!, 'a negative descriptor');
  t.is(lock.strerror(EBADF!), lock.strerror(-EBADF!));
  t.is(lock.strerror(EBADF!), 'Bad file descriptor');
  t.regex(lock.strerror(123456), /\S/, 'an unknown errno still has a text');
});

run('arguments of the wrong type throw TypeErrors naming the argument', (t) => {
  const dir = tempDir(t);
  const typeError = (name: string) => ({
    instanceOf: TypeError,
    code: 'ERR_INVALID_ARG_TYPE',
    message: new RegExp(`"${name}" argument`),
  });
  const call = lock as unknown as Record<string, (arg?: unknown) => unknown>;
  for (const bad of [undefined, null, 5, {}, Buffer.from('/tmp/x')]) {
    t.throws(() => call.openLockFile!(bad), typeError('path'), `openLockFile(${String(bad)})`);
    t.throws(() => call.acquireLockFile!(bad), typeError('path'), `acquireLockFile(${String(bad)})`);
  }
  t.throws(() => lock.acquireLockFile(join(dir, 'a\0b')), {
    instanceOf: TypeError,
    message: /"path" argument must be a string without NUL bytes/,
  });
  t.deepEqual(readdirSync(dir), [], 'nothing was created for the path with a NUL byte');
  for (const bad of ['3', 1.5, 2 ** 31, -(2 ** 31) - 1, NaN, Infinity, undefined, 3n]) {
    for (const fn of ['tryLock', 'unlock', 'closeFd']) {
      t.throws(() => call[fn]!(bad), typeError('fd'), `${fn}(${String(bad)})`);
    }
    t.throws(() => call.strerror!(bad), typeError('errno'), `strerror(${String(bad)})`);
  }
});

run('10,000 acquire/release cycles and 10,000 busy attempts leave no descriptor open', (t) => {
  const path = join(tempDir(t), 'leak.lock');
  const before = openFds();
  for (let i = 0; i < 10_000; i++) {
    const fd = lock.acquireLockFile(path);
    if (fd < 0 || lock.unlock(fd) !== 0 || lock.closeFd(fd) !== 0) return t.fail(`cycle ${i} failed with ${fd}`);
  }
  const held = lock.acquireLockFile(path);
  for (let i = 0; i < 10_000; i++) {
    if (lock.acquireLockFile(path) !== LOCK_BUSY) return t.fail(`attempt ${i} was not busy`);
  }
  lock.closeFd(held);
  for (let i = 0; i < 1000; i++) lock.acquireLockFile(join(path, 'not-a-dir'));
  t.is(openFds(), before, 'as many descriptors open as before');
});
