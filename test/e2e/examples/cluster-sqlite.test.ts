/** examples/cluster-sqlite.ts: node:cluster workers sharing a SQLite cache and cacheLockDir, run as a user would. */
import { statSync } from 'node:fs';
import { join } from 'node:path';
import test from 'ava';
import { startExample, tempDir, waitGone } from '../../helpers/examples.ts';
import { decode } from '../../helpers/serve.ts';

test('concurrent misses on both workers build the page once; the other worker then hits; SIGTERM stops all', async (t) => {
  const dataDir = tempDir(t, 'kb-cluster-example-');
  const app = await startExample(t, 'cluster-sqlite.ts', { env: { DATA_DIR: dataDir } });
  const first = await Promise.all(
    Array.from({ length: 8 }, () => app.request('/report', { 'Accept-Encoding': 'gzip' })),
  );
  t.true(first.every((r) => r.status === 200));
  const caches = first.map((r) => r.headers['x-cache']);
  t.is(caches.filter((c) => c === 'MISS').length, 1, `one request builds (X-Cache: ${caches.join(' ')})`);
  const workers = new Set(first.map((r) => r.headers['x-worker']));
  t.is(workers.size, 2, 'both workers answered');
  t.is(new Set(first.map((r) => decode(r).toString('utf8'))).size, 1, 'every request got the same page');
  t.is(
    app.child.lines.filter((line) => / builds \/report$/.test(line)).length,
    1,
    `one build across the workers: ${app.child.lines.join(' | ')}`,
  );

  const later = await Promise.all([app.request('/report'), app.request('/report')]);
  t.deepEqual(
    later.map((r) => r.headers['x-cache']),
    ['HIT', 'HIT'],
    'later requests are hits on whichever worker',
  );
  t.is(statSync(join(dataDir, 'cache.sqlite')).mode & 0o777, 0o600, 'the cache file is private to the user');
  t.is(statSync(join(dataDir, 'locks')).mode & 0o777, 0o700, 'the lock directory is private to the user');

  const pids = [...workers].map(Number);
  app.child.process.kill('SIGTERM');
  t.deepEqual(await app.child.exited, { code: 0, signal: null });
  t.deepEqual(await waitGone(pids), [], 'no worker is left running');
});
