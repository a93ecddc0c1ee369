/**
 * The lock directory nobody else can tamper with: whoever can replace the
 * files in it decides who holds the locks, so FileLock refuses a symbolic
 * link, a directory of another user, and one its group or everyone may
 * write without the sticky bit; and a directory removed while in use is
 * made again (0700) by the next acquire.
 */
import { chmodSync, chownSync, mkdirSync, mkdtempSync, rmSync, statSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test, { type ExecutionContext } from 'ava';
import { FileLock } from '../../src/locks/file-lock.ts';
import { nobody, runningAsRoot } from '../helpers/as-nobody.ts';

function tempDir(t: ExecutionContext): string {
  const dir = mkdtempSync(join(tmpdir(), 'kb-lock-dir-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** A directory `name` in a fresh temporary directory, with `mode`. */
function dirWithMode(t: ExecutionContext, mode: number): string {
  const dir = join(tempDir(t), 'locks');
  mkdirSync(dir);
  chmodSync(dir, mode);
  return dir;
}

test('a symbolic link to a directory is refused, naming the path and why', (t) => {
  const base = tempDir(t);
  const real = join(base, 'real');
  mkdirSync(real, { mode: 0o700 });
  const link = join(base, 'link');
  symlinkSync(real, link);
  for (const given of [link, `${link}/`]) {
    const error = t.throws(() => new FileLock({ dir: given }));
    t.is(error?.message, `koa-buffer: lock directory '${given}' is a symbolic link: give the directory it points to`);
  }
  t.notThrows(() => new FileLock({ dir: real }), 'the directory it points to is fine');
});

test('a directory another user owns is refused', (t) => {
  if (!runningAsRoot()) {
    // Only root can give a directory away; the check itself is the same for every user.
    t.log('skipped: not root, so no directory of another user can be made here');
    t.pass();
    return;
  }
  const dir = dirWithMode(t, 0o700);
  chownSync(dir, nobody, nobody);
  const error = t.throws(() => new FileLock({ dir }));
  t.is(
    error?.message,
    `koa-buffer: lock directory '${dir}' is owned by uid ${nobody}, not by this user (uid 0) or root`,
  );
});

test('a directory its group or everyone may write is refused unless sticky', (t) => {
  for (const [mode, who] of [
    [0o777, 'everyone'],
    [0o770, 'its group'],
    [0o703, 'everyone'],
  ] as const) {
    const dir = dirWithMode(t, mode);
    const error = t.throws(() => new FileLock({ dir }), { message: /writable by/ });
    t.is(
      error?.message,
      `koa-buffer: lock directory '${dir}' (mode 0${mode.toString(8)}) is writable by ${who} without the sticky bit: others could replace its lock files (chmod 700 it)`,
    );
  }
  for (const mode of [0o1777, 0o1770, 0o700, 0o755]) {
    const dir = dirWithMode(t, mode);
    const locks = new FileLock({ dir });
    const [guard, error] = locks.acquire('k');
    t.truthy(guard, `mode ${mode.toString(8)} is accepted (${error})`);
    locks.release(guard);
  }
});

test('a missing directory is made with mode 0700', (t) => {
  const dir = join(tempDir(t), 'a', 'locks');
  new FileLock({ dir });
  t.is(statSync(dir).mode & 0o777, 0o700);
});

test('a directory removed while in use is made again (0700) by the next acquire, and the locks still exclude', (t) => {
  const dir = join(tempDir(t), 'locks');
  const locks = new FileLock({ dir });
  const [held] = locks.acquire('job');
  t.truthy(held);
  rmSync(dir, { recursive: true });
  t.deepEqual(locks.release(held), [true, undefined], 'the lock held before still releases cleanly');
  const [again, error] = locks.acquire('job');
  t.truthy(again, `taken in the new directory (${error})`);
  t.is(statSync(dir).mode & 0o777, 0o700, 'made again with mode 0700');
  t.deepEqual(new FileLock({ dir }).acquire('job'), [null, undefined], 'and it excludes another holder');
  locks.release(again);
});

test('a directory removed and replaced by a symbolic link is refused by the next acquire', (t) => {
  const base = tempDir(t);
  const dir = join(base, 'locks');
  const locks = new FileLock({ dir });
  rmSync(dir, { recursive: true });
  symlinkSync(join(base, 'missing-target'), dir);
  const [guard, error] = locks.acquire('job');
  t.is(guard, null);
  t.is(error, `lock directory '${dir}' is a symbolic link: give the directory it points to`);
});
