/**
 * The cache options as buffer() checks them: cacheStoreTimeout in
 * the ASCII-sorted pass, and the lock built once from cacheLock or
 * cacheLockDir, with the option-validation errors of the catalog.
 */
import { chmodSync, mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test, { type ExecutionContext } from 'ava';
import { RedisLock } from '../../src/locks/redis-lock.ts';
import { buffer } from '../../src/buffer.ts';
import { optionProblem as problem } from '../helpers/caught.ts';
import { asNobody, nobodyCanRead, runningAsRoot } from '../helpers/as-nobody.ts';
import { fixture, spawnChild } from '../helpers/children.ts';

function tempDir(t: ExecutionContext): string {
  const dir = mkdtempSync(join(tmpdir(), 'kb-cache-options-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

test('cacheStoreTimeout must be a positive number of seconds; undefined means the default', (t) => {
  for (const [value, shown] of [
    [0, '0'],
    [-1, '-1'],
    ['1', '"1"'],
    [Number.NaN, 'NaN'],
    [Number.POSITIVE_INFINITY, 'Infinity'],
    [{}, '{}'],
    [2_147_484, '2147484'],
  ] as const) {
    const error = problem({ cacheStoreTimeout: value });
    t.is(error?.key, 'option_cache_store_timeout', `${String(value)} is refused`);
    t.is(
      error?.message,
      `koa-buffer: cacheStoreTimeout must be a positive number of seconds, at most 2147483 (24.8 days), not ${shown}`,
    );
  }
  for (const value of [0.05, 1, 30, 2_147_483, undefined, null])
    t.is(problem({ cacheStoreTimeout: value }), undefined, `${String(value)} is accepted`);
});

test('cacheStoreTimeout is checked at its place in ASCII order', (t) => {
  t.is(
    problem({ cacheStoreTimeout: 0, cacheSingleFlight: 'yes' })?.key,
    'option_flag',
    'cacheSingleFlight < cacheStoreTimeout',
  );
  t.is(
    problem({ cacheStoreTimeout: 0, cacheWaitFailure: 'never' })?.key,
    'option_cache_store_timeout',
    'cacheStoreTimeout < cacheWaitFailure',
  );
});

test('cacheLock and cacheLockDir cannot be combined', (t) => {
  const lock = { acquire: () => [null, undefined], release: () => [true, undefined] };
  t.is(problem({ cacheLock: lock, cacheLockDir: '/tmp/kb-never-made' })?.key, 'lock_options_combined');
});

test('a RedisLock whose ttl does not exceed cacheLockTimeout is refused, naming both', (t) => {
  const short = new RedisLock({ redis: 'redis://127.0.0.1:1', ttl: 5 });
  const error = problem({ cacheLock: short, cacheLockTimeout: 5 });
  t.is(error?.key, 'lock_ttl_too_short');
  t.is(error?.message, "koa-buffer: the cacheLock's ttl (5 s) must be longer than cacheLockTimeout (5 s)");
  t.is(
    problem({ cacheLock: new RedisLock({ redis: 'redis://127.0.0.1:1', ttl: 8 }) })?.key,
    'lock_ttl_too_short',
    'against the default of 10 s',
  );
  t.is(problem({ cacheLock: new RedisLock({ redis: 'redis://127.0.0.1:1', ttl: 11 }) }), undefined);
});

test('cacheLockDir builds a FileLock when buffer() runs: the directory is made, 0700', (t) => {
  const dir = join(tempDir(t), 'a', 'locks');
  buffer({ cacheLockDir: dir });
  t.true(statSync(dir).isDirectory());
  t.is(statSync(dir).mode & 0o777, 0o700);
});

test('a cacheLockDir that cannot be created throws lock_dir_create_failed from buffer()', (t) => {
  const file = join(tempDir(t), 'plain-file');
  writeFileSync(file, '');
  const error = problem({ cacheLockDir: join(file, 'locks') });
  t.is(error?.key, 'lock_dir_create_failed');
  t.is(error?.message, `koa-buffer: cannot create cacheLockDir '${join(file, 'locks')}': Not a directory`);
  t.is(
    problem({ cacheLockDir: join(file, 'locks'), messages: { lock_dir_create_failed: 'kein Verzeichnis: %{dir}' } })
      ?.message,
    `koa-buffer: kein Verzeichnis: ${join(file, 'locks')}`,
    'worded by the messages option',
  );
});

test('a cacheLockDir this process cannot write to throws lock_dir_not_writable from buffer()', async (t) => {
  const dir = tempDir(t);
  const locked = join(dir, 'locked');
  mkdirSync(locked, { mode: 0o755 });
  let answer: Record<string, unknown>;
  if (runningAsRoot()) {
    // root writes anywhere: ask as nobody (65534), for whom root's 0755 directory is read-only.
    chmodSync(dir, 0o755);
    const child = fixture('cache-lock-dir-child.ts');
    if (!nobodyCanRead(child)) {
      t.log('skipped: nobody cannot read this checkout');
      t.pass();
      return;
    }
    answer = await spawnChild(t, child, [locked], asNobody()).waitForJson(() => true, 'the answer of buffer()');
  } else {
    chmodSync(locked, 0o555);
    t.teardown(() => chmodSync(locked, 0o755));
    const error = problem({ cacheLockDir: locked });
    answer = { key: error?.key, message: error?.message };
  }
  t.is(answer.key, 'lock_dir_not_writable', JSON.stringify(answer));
  t.is(answer.message, `koa-buffer: cacheLockDir '${locked}' is not a writable directory`);
});
