/**
 * FileLock exists exactly where the addon has flock(2): every POSIX build
 * compiles it in, Windows builds leave it out (binding.gyp), and there
 * `new FileLock` refuses with an error naming the locks that do work.
 */
import test from 'ava';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { FileLock } from '../../src/locks/file-lock.ts';
import { addon, addonUnavailableReason } from '../../src/native/binding.ts';
import type { FlockPrimitives } from '../../src/native/types.ts';

function tempDir(t: { teardown(fn: () => void): void }): string {
  const dir = mkdtempSync(join(tmpdir(), 'kb-flock-platform-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

if (!addon) {
  test('FileLock and the platform build (skipped)', (t) => {
    t.log(`# skipped: the native addon is unavailable (${addonUnavailableReason}); build it with npx node-gyp rebuild`);
    t.pass();
  });
} else if (process.platform === 'win32') {
  test('a Windows build has no flock primitives, and FileLock refuses naming RedisLock and MemoryLock', (t) => {
    t.is(typeof (addon as Partial<FlockPrimitives>).acquireLockFile, 'undefined');
    const error = t.throws(() => new FileLock({ dir: tempDir(t) })) as Error & { code?: string };
    t.is(error.code, 'KB_NATIVE_UNAVAILABLE');
    t.regex(error.message, /FileLock needs flock\(2\), which the native addon has no win32 build of/);
    t.regex(error.message, /RedisLock .* or MemoryLock/);
  });
} else {
  test(`a ${process.platform} build has the flock primitives, and FileLock takes a lock`, (t) => {
    for (const name of ['openLockFile', 'tryLock', 'unlock', 'closeFd', 'acquireLockFile', 'strerror'] as const) {
      t.is(typeof addon![name], 'function', name);
    }
    const locks = new FileLock({ dir: tempDir(t) });
    const [guard, error] = locks.acquire('platform');
    t.truthy(guard);
    t.is(error, undefined);
    t.deepEqual(locks.release(guard), [true, undefined]);
  });
}
