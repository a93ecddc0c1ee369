/** examples/one-process.ts: buffer() with `cache: true` in one process, run as a user would. */
import test from 'ava';
import { startExample } from '../../helpers/examples.ts';
import { decode } from '../../helpers/serve.ts';

test('concurrent misses build the page once; it is squashed, compressed, and then a hit; SIGTERM exits 0', async (t) => {
  const app = await startExample(t, 'one-process.ts');
  const first = await Promise.all(
    Array.from({ length: 5 }, (_, i) => app.request('/report', i < 3 ? { 'Accept-Encoding': 'br' } : {})),
  );
  t.deepEqual(
    first.map((r) => r.status),
    [200, 200, 200, 200, 200],
  );
  t.deepEqual(
    first.map((r) => r.headers['x-cache']).sort(),
    ['HIT', 'HIT', 'HIT', 'HIT', 'MISS'],
    'one builds, four wait for it',
  );
  t.deepEqual(
    first.slice(0, 3).map((r) => r.headers['content-encoding']),
    ['br', 'br', 'br'],
    'br for br clients',
  );
  const pages = new Set(first.map((r) => decode(r).toString('utf8')));
  t.is(pages.size, 1, 'all five got the same page');
  const page = [...pages][0]!;
  t.regex(page, /<p>\nBuild number 1, made at /, 'build number 1, its indentation squashed');
  t.notRegex(page, /\n[ \t]/, 'no indentation left');
  t.is(app.child.lines.filter((line) => line.startsWith('building the report')).length, 1, 'the action ran once');

  const later = await app.request('/report');
  t.is(later.headers['x-cache'], 'HIT');
  t.is(decode(later).toString('utf8'), page);
  t.is((await app.request('/elsewhere')).status, 404);

  app.child.process.kill('SIGTERM');
  t.deepEqual(await app.child.exited, { code: 0, signal: null });
});
