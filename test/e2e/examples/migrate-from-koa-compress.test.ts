/**
 * examples/migrate-from-koa-compress.ts: the peer stack (STACK=before) and
 * buffer() (after) run side by side as a user would, checking what the
 * example's comment says stays the same and what changes.
 */
import test from 'ava';
import { startExample, type RunningExample } from '../../helpers/examples.ts';
import { decode } from '../../helpers/serve.ts';

async function exercise(app: RunningExample) {
  const concurrent = await Promise.all(
    Array.from({ length: 4 }, () => app.request('/items', { 'Accept-Encoding': 'br' })),
  );
  const br = await app.request('/items', { 'Accept-Encoding': 'br' });
  const gzip = await app.request('/items', { 'Accept-Encoding': 'gzip' });
  const revalidated = await app.request('/items', { 'Accept-Encoding': 'br', 'If-None-Match': br.headers.etag ?? '' });
  return {
    concurrent,
    br,
    gzip,
    revalidated,
    builds: app.child.lines.filter((line) => line.startsWith('building /items')).length,
  };
}

test('both stacks compress, tag, answer 304 and cache; buffer() builds concurrent misses once and tags each coding', async (t) => {
  const [before, after] = await Promise.all([
    startExample(t, 'migrate-from-koa-compress.ts', { env: { STACK: 'before' } }),
    startExample(t, 'migrate-from-koa-compress.ts'),
  ]);
  const peers = await exercise(before);
  const ours = await exercise(after);

  for (const [name, run] of [
    ['before', peers],
    ['after', ours],
  ] as const) {
    t.true(
      run.concurrent.every((r) => r.status === 200 && r.headers['content-encoding'] === 'br'),
      `${name}: br for br clients`,
    );
    t.is(run.gzip.headers['content-encoding'], 'gzip', `${name}: gzip for gzip clients`);
    t.deepEqual(
      JSON.parse(decode(run.br).toString('utf8')),
      JSON.parse(decode(run.gzip).toString('utf8')),
      `${name}: the same JSON either way`,
    );
    t.truthy(run.br.headers.etag, `${name}: an ETag`);
    t.is(run.revalidated.status, 304, `${name}: 304 for a matching If-None-Match`);
  }
  t.deepEqual(
    JSON.parse(decode(peers.br).toString('utf8')),
    JSON.parse(decode(ours.br).toString('utf8')),
    'both stacks send the same data',
  );
  t.is(peers.br.headers['x-cached-response'], 'HIT', 'before: koa-cash answers later requests from its cache');
  t.is(ours.br.headers['x-cache'], 'HIT', 'after: buffer() answers later requests from its cache');

  t.is(peers.builds, 4, 'before: four concurrent misses build four times');
  t.is(ours.builds, 1, 'after: four concurrent misses build once');
  t.is(peers.br.headers.etag, peers.gzip.headers.etag, 'before: br and gzip share one ETag');
  t.not(ours.br.headers.etag, ours.gzip.headers.etag, 'after: each coding has its own ETag');
  // Cold bytes ("-br") or, once the background upgrade has run, hot ones
  // ("-br11"): which one a hit gets depends on how busy the machine is.
  t.regex(ours.br.headers.etag!, /^"[0-9a-f]{32}-br(11)?"$/, 'after: the ETag names the coding');
});
