/**
 * A `sqlite:` or `redis://` cache whose driver is not installed is a
 * BufferOptionError when `buffer()` runs, naming the package to install,
 * rather than a log line at the first request and an application running
 * with no cache. Played for real: the package is copied to a temporary
 * directory whose node_modules holds every package of this one but the
 * driver (links to them), and a child loads koa-buffer from there, so the
 * driver does not resolve as it would not in an application that never
 * installed it. A driver that is installed but does not load (a native
 * build for another Node.js) is refused too. A per-response `cache` value
 * whose driver is missing keeps failing closed: the request bypasses the
 * cache (`detail=STORE-ERROR`), it is not stored in the configured one.
 */
import { cpSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test, { type ExecutionContext } from 'ava';
import { packageRoot } from '../../../src/native/binding.ts';
import { fixture, spawnChild } from '../../helpers/children.ts';

/**
 * A copy of the package (src/ and package.json) whose node_modules links to
 * this one's packages less `left out`; `broken` packages are replaced by
 * one whose loading throws.
 */
function copyWithout(t: ExecutionContext, leftOut: string[], broken: string[] = []): string {
  const root = mkdtempSync(join(tmpdir(), 'kb-driver-'));
  t.teardown(() => rmSync(root, { recursive: true, force: true }));
  cpSync(join(packageRoot, 'src'), join(root, 'src'), { recursive: true });
  cpSync(join(packageRoot, 'package.json'), join(root, 'package.json'));
  const modules = join(root, 'node_modules');
  mkdirSync(modules);
  for (const name of readdirSync(join(packageRoot, 'node_modules'))) {
    if (leftOut.includes(name) || broken.includes(name)) continue;
    symlinkSync(join(packageRoot, 'node_modules', name), join(modules, name));
  }
  for (const name of broken) {
    mkdirSync(join(modules, name));
    writeFileSync(join(modules, name, 'package.json'), JSON.stringify({ name, version: '12.0.0', main: 'index.js' }));
    writeFileSync(
      join(modules, name, 'index.js'),
      "throw new Error('The module was compiled against a different Node.js version using NODE_MODULE_VERSION 1');\n",
    );
  }
  return root;
}

/** Runs the child against `root`; its first line is what buffer({ cache }) did. */
async function run(t: ExecutionContext, root: string, cache: string, perResponse?: string) {
  const env: NodeJS.ProcessEnv = { ...process.env, HOME: root, KOA_BUFFER_NATIVE: '0' };
  // No global folder may supply the driver either.
  delete env.NODE_PATH;
  const child = spawnChild(t, fixture('cache-driver-child.ts'), [root, cache, ...(perResponse ? [perResponse] : [])], {
    env,
    lineTimeoutMs: 60_000,
  });
  const made = await child.waitForJson<{ ok: boolean; name?: string; key?: string; message?: string }>(
    (m) => 'ok' in m,
    'what buffer() did',
  );
  const served =
    perResponse === undefined
      ? undefined
      : await child.waitForJson<{ cacheStatus: string; lines: string[] }>((m) => 'cacheStatus' in m, 'the response');
  return { made, served };
}

test('cache: sqlite: without better-sqlite3 installed is a BufferOptionError at buffer() naming the package', async (t) => {
  const root = copyWithout(t, ['better-sqlite3']);
  const { made } = await run(t, root, `sqlite:${join(root, 'cache.sqlite')}`);
  t.like(made, { ok: false, name: 'BufferOptionError', key: 'option_cache_driver' });
  t.is(
    made.message,
    `koa-buffer: cache "sqlite:${join(root, 'cache.sqlite')}" needs the better-sqlite3 package, which is not installed: npm install better-sqlite3`,
  );
  t.deepEqual(readdirSync(root).sort(), ['node_modules', 'package.json', 'src'], 'no SQLite file was made');
});

test('cache: redis:// without ioredis installed is a BufferOptionError at buffer() naming the package, password hidden', async (t) => {
  const root = copyWithout(t, ['ioredis']);
  const { made } = await run(t, root, 'redis://:hunter2@127.0.0.1:1/0');
  t.like(made, { ok: false, name: 'BufferOptionError', key: 'option_cache_driver' });
  t.is(
    made.message,
    'koa-buffer: cache "redis://:***@127.0.0.1:1/0" needs the ioredis package, which is not installed: npm install ioredis',
  );
});

test('a driver that is installed but does not load is refused at buffer(), saying why', async (t) => {
  const root = copyWithout(t, [], ['better-sqlite3']);
  const { made } = await run(t, root, 'sqlite::memory:');
  t.like(made, { ok: false, key: 'option_cache_driver_broken' });
  t.regex(
    made.message!,
    /needs the better-sqlite3 package, which is installed but does not load \(The module was compiled against a different Node\.js version/,
  );
  t.regex(made.message!, /npm rebuild better-sqlite3$/);
});

test('the same copy with its drivers takes both URLs: the refusals come from the missing package alone', async (t) => {
  const root = copyWithout(t, []);
  t.deepEqual((await run(t, root, 'sqlite::memory:')).made, { ok: true });
  t.deepEqual((await run(t, root, 'redis://127.0.0.1:1/0')).made, { ok: true }, 'nothing connects at buffer()');
});

test('a per-response sqlite: cache without its driver bypasses the cache for that response, logged, rather than using the configured one', async (t) => {
  const root = copyWithout(t, ['better-sqlite3']);
  const { made, served } = await run(t, root, 'sqlite::memory:', 'sqlite::memory:');
  t.is(made.key, 'option_cache_driver');
  t.is(served!.cacheStatus, 'koa-buffer; fwd=bypass; detail=STORE-ERROR');
  t.true(
    served!.lines.some((line) => line.includes('needs the better-sqlite3 package')),
    JSON.stringify(served!.lines),
  );
});
