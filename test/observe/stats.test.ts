/**
 * mw.stats() counts what happened, over real HTTP: every outcome of
 * ctx.bufferIsCached(), builds and waiters, bytes per coding, 304s, store
 * calls, purges, the memory budgets, and the histograms; and it is a copy.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import test from 'ava';
import { buffer } from '../../src/buffer.ts';
import { htmlPage, serve } from '../helpers/serve.ts';

const page = htmlPage(20_000);

async function site(t: import('ava').ExecutionContext) {
  const mw = buffer({ cache: true, varyBy: [], optimiseContent: 1, cacheLockTimeout: 2 });
  let slowRuns = 0;
  const server = await serve(t, [
    mw,
    async (ctx) => {
      if (await ctx.bufferIsCached()) return;
      if (ctx.path === '/cookie') ctx.cookies.set('csrf', 'token');
      if (ctx.path === '/slow') {
        slowRuns++;
        await sleep(150);
      }
      if (ctx.path === '/fail') {
        await sleep(100);
        throw new Error('the action failed');
      }
      ctx.type = 'html';
      ctx.body = page;
    },
  ]);
  return { mw, server, slowRuns: () => slowRuns };
}

test('every outcome of the cache is counted, with builds, waiters, bytes per coding and 304s', async (t) => {
  const { mw, server, slowRuns } = await site(t);
  const br = { 'accept-encoding': 'br' };
  t.is((await server.request('/a', { headers: br })).headers['x-cache'], 'MISS');
  t.is((await server.request('/a', { headers: br })).headers['x-cache'], 'HIT');
  const hit = await server.request('/a', { headers: br });
  t.is(hit.headers['x-cache'], 'HIT');
  t.is((await server.request('/a', { headers: { ...br, 'if-none-match': hit.headers.etag! } })).status, 304);
  await server.request('/a', { method: 'POST' });
  await server.request('/a', { headers: { authorization: 'Bearer x' } });
  await server.request('/cookie', { headers: br });
  const slow = await Promise.all(Array.from({ length: 5 }, () => server.request('/slow', { headers: br })));
  t.is(slowRuns(), 1, 'one build for five');
  t.deepEqual(
    slow.map((r) => r.status),
    [200, 200, 200, 200, 200],
  );
  const failed = await Promise.all(Array.from({ length: 3 }, () => server.request('/fail')));
  t.deepEqual(failed.map((r) => r.status).sort(), [500, 503, 503]);
  await sleep(50); // a stored build is counted when its head is written

  const s = mw.stats();
  t.is(s.requests.hit, 3, 'three hits of /a, one of them a 304, and none else');
  t.is(s.requests.collapsed, 4, 'four waiters answered from the slow build');
  t.is(s.requests.miss, 4, 'the builders of /a, /cookie, /slow and /fail ran the action');
  t.is(s.requests.failed, 2, 'the waiters of /fail were answered 503');
  t.is(s.requests.bypass, 2);
  const r = s.requests;
  const outcomes = r.hit + r.collapsed + r.failed + r.miss + r.bypass + r.stale + r.staleOnError;
  t.is(outcomes, 15, 'each of the 15 requests has one outcome');
  t.deepEqual(s.requests.bypassByDetail, { METHOD: 1, AUTHORIZATION: 1 });
  t.is(s.requests.stored, 2, '/a and /slow were stored');
  t.deepEqual(s.requests.notStorableByDetail, { 'SET-COOKIE': 1, ERROR: 1 });
  t.is(s.builds.started, 4);
  t.is(s.builds.failed, 1);
  t.is(s.builds.notStorable, 1);
  t.deepEqual(s.waiters, { waited: 6, woken: 4, refused: 2, ranAction: 0 });
  t.is(s.notModified, 1);
  const coded = s.responses.br;
  t.true(coded.responses >= 6, `br responses: ${coded.responses}`);
  t.true(coded.bytesOut < coded.bytesIn / 3, `br saved bytes: ${coded.bytesIn} in, ${coded.bytesOut} out`);
  t.true(s.store.memory!.calls >= 8, 'the memory store was called');
  t.is(s.store.memory!.errors, 0);
  t.is(s.histograms.buildSeconds.count, 4, 'every build timed');
  t.true(s.histograms.buildSeconds.sum >= 0.25, 'the slow and failing builds took their time');
  t.is(s.histograms.waitSeconds.count, 6);
  t.is(s.histograms.hitSeconds.count, 3);
  t.is(s.histograms.hitSeconds.counts.at(-1), 3, 'cumulative: the +Inf bucket holds every hit');
  for (const name of ['memo', 'store', 'prepared', 'keyTables', 'changing', 'sightings']) {
    const budget = s.budgets[name];
    t.truthy(budget, `the ${name} budget is reported`);
    t.true(budget!.bytes <= budget!.limit, `${name}: ${budget!.bytes} of ${budget!.limit}`);
  }
  t.true(s.budgets.store!.bytes > page.length / 2, 'the store holds the squashed pages');
});

test('purges are counted by kind', async (t) => {
  const { mw } = await site(t);
  await mw.purge('/a');
  await mw.purgeTag('news');
  await mw.purgeAll();
  t.deepEqual(mw.stats().purges, { url: 1, tag: 1, all: 1 });
});

test('stats() is a copy: changing it changes nothing of the counters', async (t) => {
  const { mw, server } = await site(t);
  await server.request('/a');
  const first = mw.stats();
  (first.requests as { miss: number }).miss = 1000;
  first.requests.bypassByDetail.INVENTED = 1;
  const second = mw.stats();
  t.is(second.requests.miss, 1);
  t.is(second.requests.bypassByDetail.INVENTED, undefined);
  t.notThrows(() => JSON.stringify(second), 'a snapshot serialises');
});
