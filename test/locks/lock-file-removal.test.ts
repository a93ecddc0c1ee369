/**
 * Lock files removed on release (FileLock `removeOnRelease`, on for the lock
 * `cacheLockDir` makes): real child processes race for one key while every
 * release removes the file, and never are there two holders; the directory
 * is empty afterwards. An explicit FileLock keeps its files unless it opts
 * in. And over real HTTP: a cacheLockDir holds no file per URL built.
 */
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test, { type ExecutionContext } from 'ava';
import { BufferOptionError } from '../../src/base/errors.ts';
import { FileLock } from '../../src/locks/file-lock.ts';
import { buffer } from '../../src/buffer.ts';
import { fixture, spawnChild } from '../helpers/children.ts';
import { serve } from '../helpers/serve.ts';

function tempDir(t: ExecutionContext): string {
  const dir = mkdtempSync(join(tmpdir(), 'kb-lock-removal-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** Each racer holds the lock this many times (within a minute), so the lock changes hands hundreds of times. */
const holdsEach = 60;

test('four processes racing for one key against removal on release: never two holders', async (t) => {
  const dir = tempDir(t);
  const locks = join(dir, 'locks');
  const marker = join(dir, 'holder');
  const children = Array.from({ length: 4 }, () =>
    spawnChild(t, fixture('removal-racer.ts'), [locks, marker, String(holdsEach)], { lineTimeoutMs: 120_000 }),
  );
  const reports = await Promise.all(
    children.map(
      async (child) => JSON.parse(await child.waitForLine((l) => l.startsWith('{'))) as Record<string, number>,
    ),
  );
  const held = reports.reduce((sum, r) => sum + r.held!, 0);
  const busy = reports.reduce((sum, r) => sum + r.busy!, 0);
  t.is(
    reports.reduce((sum, r) => sum + r.overlaps!, 0),
    0,
    'no two holders at any time',
  );
  t.is(held, 4 * holdsEach, `every racer had its ${holdsEach} turns within the minute (${held} in all)`);
  t.true(busy > 0, `and the processes did collide (${busy} busy answers)`);
  t.deepEqual(readdirSync(locks), [], 'no lock file is left');
});

test('a FileLock keeps its files unless removeOnRelease is on', (t) => {
  const dir = tempDir(t);
  const keeping = new FileLock({ dir });
  const [kept] = keeping.acquire('a');
  keeping.release(kept);
  t.is(readdirSync(dir).length, 1, 'the default is unchanged');
  const removing = new FileLock({ dir: join(dir, 'removing'), removeOnRelease: true });
  const [guard] = removing.acquire('a');
  t.truthy(guard);
  t.is(readdirSync(join(dir, 'removing')).length, 1, 'the file exists while held');
  t.is(removing.acquire('a')[0], null, 'and a second acquire is busy');
  t.deepEqual(removing.release(guard), [true, undefined]);
  t.deepEqual(readdirSync(join(dir, 'removing')), []);
  t.throws(() => new FileLock({ dir, removeOnRelease: 'yes' as unknown as boolean }), {
    instanceOf: BufferOptionError,
  });
});

test('a cacheLockDir holds no lock file per URL built', async (t) => {
  const dir = tempDir(t);
  const server = await serve(t, [
    buffer({ cache: true, cacheLockDir: dir, varyBy: [] }),
    async (ctx) => {
      if (await ctx.bufferIsCached()) return;
      ctx.type = 'html';
      ctx.body = `<!doctype html><p>${ctx.path}</p>`;
    },
  ]);
  for (let i = 0; i < 20; i++) t.is((await server.request(`/page/${i}`)).headers['x-cache'], 'MISS');
  t.true(existsSync(dir));
  t.deepEqual(readdirSync(dir), [], 'twenty URLs built, no file left');
});
