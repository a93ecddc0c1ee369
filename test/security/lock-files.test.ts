/**
 * Lock files cannot be turned against the host (issue 7): a symlink planted
 * at a lock path is refused (O_NOFOLLOW) and its target left untouched,
 * through FileLock and through the middleware; lock files are 0600 in a
 * 0700 directory even under umask 0; and keys of any size or content
 * (`../`, NUL, 100 KB, emoji, random strings) only ever name a file
 * `md5.lock` inside the lock directory.
 */
import { createHash } from 'node:crypto';
import {
  linkSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  symlinkSync,
  utimesSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import fc from 'fast-check';
import test, { type ExecutionContext } from 'ava';
import { FileLock } from '../../src/locks/file-lock.ts';
import { buffer } from '../../src/buffer.ts';
import { flock } from '../../src/native/core.ts';
import { fixture, spawnChild } from '../helpers/children.ts';
import { rawRequest, recordingLogger, serve } from '../helpers/serve.ts';

function tempDir(t: ExecutionContext): string {
  const dir = mkdtempSync(join(tmpdir(), 'kb-sec-locks-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

const lockName = (key: string): string => `${createHash('md5').update(key, 'utf8').digest('hex')}.lock`;

/** A file someone cares about, with its state as it was. */
function plantVictim(dir: string): { path: string; unchanged: () => boolean; unlocked: () => boolean } {
  const path = join(dir, 'victim.conf');
  writeFileSync(path, 'precious = true\n', { mode: 0o644 });
  const past = new Date(Date.now() - 3_600_000);
  utimesSync(path, past, past);
  const before = statSync(path);
  return {
    path,
    unchanged: () => {
      const now = statSync(path);
      return (
        readFileSync(path, 'utf8') === 'precious = true\n' &&
        now.mode === before.mode &&
        now.mtimeMs === before.mtimeMs &&
        now.size === before.size
      );
    },
    // Nobody holds a flock on it: a fresh descriptor can take one.
    unlocked: () => {
      const fd = flock().acquireLockFile(path);
      if (fd < 0) return false;
      flock().closeFd(fd);
      return true;
    },
  };
}

test('a symlink planted at the lock path of a key: acquire fails with ELOOP, and the file it points at is neither written, re-moded nor locked', (t) => {
  const base = tempDir(t);
  const dir = join(base, 'locks');
  const lock = new FileLock({ dir });
  const victim = plantVictim(base);
  symlinkSync(victim.path, join(dir, lockName('report')));
  const [guard, error] = lock.acquire('report');
  t.is(guard, null);
  t.is(error, `cannot open ${join(dir, lockName('report'))}: Too many levels of symbolic links`);
  t.true(victim.unchanged(), 'the victim file is untouched');
  t.true(victim.unlocked(), 'and holds no lock');
  // A dangling link does not create its target either.
  symlinkSync(join(base, 'created-through-link'), join(dir, lockName('other')));
  t.is(lock.acquire('other')[0], null);
  t.deepEqual(readdirSync(base).sort(), ['locks', 'victim.conf']);
});

test('a symlink planted at a lock path under a running middleware: the page is served, the log says why, the target is untouched', async (t) => {
  const base = tempDir(t);
  const dir = join(base, 'locks');
  const log = recordingLogger();
  const server = await serve(t, [
    buffer({ cache: true, cacheKey: 'report', cacheLockDir: dir, logger: log }),
    async (ctx) => {
      if (await ctx.bufferIsCached()) return;
      ctx.type = 'html';
      ctx.body = '<p>the report</p>';
    },
  ]);
  const victim = plantVictim(base);
  symlinkSync(victim.path, join(dir, lockName('report')));
  const responses = await Promise.all(Array.from({ length: 5 }, () => server.request('/')));
  for (const response of responses) t.is(response.body.toString(), '<p>the report</p>');
  t.is(
    log.count(
      /^lock for report failed, building with a per-process flight: cannot open .*: Too many levels of symbolic links$/,
    ),
    1,
  );
  t.true(victim.unchanged());
  t.true(victim.unlocked());
});

test('a hard link planted at a lock path: the linked file’s contents and mode are never changed (the lock file is opened without O_TRUNC)', (t) => {
  const base = tempDir(t);
  const dir = join(base, 'locks');
  const lock = new FileLock({ dir });
  const victim = plantVictim(base);
  linkSync(victim.path, join(dir, lockName('report')));
  const [guard] = lock.acquire('report');
  // flock on the shared inode is all that happens: advisory, and gone on release.
  t.truthy(guard);
  lock.release(guard);
  t.is(readFileSync(victim.path, 'utf8'), 'precious = true\n');
  t.is(statSync(victim.path).mode & 0o777, 0o644);
  t.true(victim.unlocked());
});

test('under umask 0, the lock directory koa-buffer creates is 0700 and every lock file 0600 (a server process)', async (t) => {
  const base = tempDir(t);
  const dir = join(base, 'a', 'locks');
  const child = spawnChild(t, fixture('fault-server.ts'), [
    JSON.stringify({ cache: `sqlite:${join(base, 'cache.sqlite')}`, lockDir: dir, umask: 0 }),
  ]);
  const { port } = await child.waitForJson<{ port: number }>((m) => typeof m.port === 'number', 'the port');
  for (const name of ['one', 'two', 'three']) t.is((await rawRequest(port, `/page/${name}`)).status, 200);
  t.is(statSync(dir).mode & 0o777, 0o700, 'the lock directory is private');
  t.deepEqual(readdirSync(dir), [], 'the lock files of cache keys are removed on release');
  t.is(statSync(join(base, 'cache.sqlite')).mode & 0o777, 0o600, 'so is the SQLite cache');
});

test('under umask 0, a lock file is 0600 while it is held, removed or not on release', (t) => {
  const dir = join(tempDir(t), 'locks');
  const before = process.umask(0);
  try {
    for (const removeOnRelease of [false, true]) {
      const lock = new FileLock({ dir, removeOnRelease });
      const [guard] = lock.acquire(`report-${removeOnRelease}`);
      if (!guard) return t.fail('the lock was not taken');
      t.is(statSync(guard.path).mode & 0o777, 0o600, `held lock file is private (removeOnRelease ${removeOnRelease})`);
      lock.release(guard);
    }
  } finally {
    process.umask(before);
  }
  t.is(readdirSync(dir).length, 1, 'only the lock file of the FileLock that keeps its files is left');
});

/** Keys meant to climb out of the directory or break the path. */
const hostileKeys = [
  '',
  '.',
  '..',
  '../x',
  '../../../../etc/passwd',
  '/etc/passwd',
  'a/../../b',
  '..\\..\\x',
  '\0',
  'x\0/../../y',
  '%2e%2e%2fx',
  '🔒'.repeat(1000),
  'é'.repeat(100 * 1024),
  '\uD800',
  'lock\n/tmp/x',
  ' ',
  '-rf',
];

const anyKey = fc.oneof(
  fc.constantFrom(...hostileKeys),
  fc.string({ unit: 'binary', maxLength: 300 }),
  fc.string({ unit: fc.constantFrom('.', '/', '\\', '\0', 'a', '%', '~'), maxLength: 40 }),
  fc.string({ unit: 'grapheme', minLength: 1000, maxLength: 3000 }),
);

test('keys of any content and size name only md5(key).lock inside the lock directory (property, fixed seed)', (t) => {
  const base = tempDir(t);
  const dir = join(base, 'locks');
  const lock = new FileLock({ dir });
  fc.assert(
    fc.property(anyKey, (key) => {
      const [guard, error] = lock.acquire(key);
      if (guard === null) throw new Error(`${JSON.stringify(key.slice(0, 40))} was not taken: ${error}`);
      const path = guard.path;
      lock.release(guard);
      return dirname(path) === dir && /^[0-9a-f]{32}\.lock$/.test(basename(path));
    }),
    { seed: 2024, numRuns: 400, examples: hostileKeys.map((key) => [key]) },
  );
  t.deepEqual(readdirSync(base), ['locks'], 'nothing was created beside the lock directory');
  t.true(
    readdirSync(dir).every((name) => /^[0-9a-f]{32}\.lock$/.test(name)),
    'and only lock files inside it',
  );
});

test('a cacheKey made from attacker-controlled input cannot put a lock file outside cacheLockDir', async (t) => {
  const base = tempDir(t);
  const dir = join(base, 'locks');
  mkdirSync(join(base, 'elsewhere'));
  const server = await serve(t, [
    // An application that keys its pages by a query parameter, as given.
    buffer({ cache: true, cacheLockDir: dir, cacheKey: (ctx) => String(ctx.query.k ?? '') }),
    async (ctx) => {
      if (await ctx.bufferIsCached()) return;
      ctx.body = 'ok';
    },
  ]);
  const keys = [
    '../elsewhere/x',
    '../../../../tmp/x',
    '%00',
    'a%2F..%2F..%2Fb',
    encodeURIComponent('🔒'.repeat(200)),
    'x'.repeat(12_000),
  ]; // Node refuses request lines over 16 KiB;
  for (const key of keys) {
    const response = await server.request(`/?k=${key}`);
    t.is(response.status, 200, `${key.slice(0, 30)}: served`);
  }
  t.deepEqual(readdirSync(base).sort(), ['elsewhere', 'locks']);
  t.deepEqual(readdirSync(join(base, 'elsewhere')), [], 'nothing landed outside the lock directory');
  // cacheLockDir's lock files are removed on release: whatever is left is a lock file, and nothing else.
  t.true(readdirSync(dir).every((name) => /^[0-9a-f]{32}\.lock$/.test(name)));
});
