/**
 * The demo's /stale page (`npm start`), as a visitor meets it: the real demo
 * (a cluster primary and two workers on SQLite) on a free port with a fresh
 * data directory. Once the page is past its 5 fresh seconds, concurrent
 * requests on both workers are answered at once and stale, and the build log
 * grows by one line per expiry, however many requests came.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import test from 'ava';
import { staleFreshSeconds } from '../../../examples/demo/pages/stale.ts';
import { startExample, tempDir } from '../../helpers/examples.ts';
import { decode } from '../../helpers/serve.ts';

const builds = (dataDir: string): number =>
  readFileSync(join(dataDir, 'report-builds.log'), 'utf8')
    .split('\n')
    .filter((line) => line.endsWith(' /stale')).length;

test('/stale: past its fresh seconds, 20 requests are answered at once and stale, and it is rebuilt once per expiry', async (t) => {
  const dataDir = tempDir(t, 'kb-demo-stale-');
  const demo = await startExample(t, 'demo/server.ts', {
    env: { KOA_BUFFER_DEMO_DIR: dataDir },
    urlLine: /^koa-buffer demo: http:\/\//,
  });
  const first = await demo.request('/stale');
  t.is(first.headers['x-cache'], 'MISS');
  t.is(first.headers['cache-control'], 's-maxage=5, stale-while-revalidate=60');
  t.regex(decode(first).toString(), /build number <strong id="build-number">1<\/strong>/);
  for (let expiry = 1; expiry <= 2; expiry += 1) {
    await sleep(staleFreshSeconds * 1000 + 200);
    const answers = await Promise.all(Array.from({ length: 20 }, () => demo.request('/stale')));
    const workers = new Set(answers.map((a) => a.headers['x-worker']));
    // Nobody waited for the build: none is a miss or collapsed onto it. Stale, or on a machine so loaded that
    // the refresh ended before the last request came, the refreshed page.
    for (const answer of answers) {
      t.is(answer.status, 200);
      t.regex(answer.headers['cache-status']!, /^koa-buffer; hit(; fwd=stale)?; ttl=-?\d+$/);
    }
    t.true(answers.filter((a) => a.headers['x-cache'] === 'STALE').length >= 10, 'most were stale');
    t.is(workers.size, 2, 'both workers answered');
    await sleep(1500); // the background refresh builds for a second, then stores
    const fresh = await demo.request('/stale');
    t.is(fresh.headers['x-cache'], 'HIT');
    t.regex(decode(fresh).toString(), new RegExp(`build number <strong id="build-number">${expiry + 1}</strong>`));
    t.is(builds(dataDir), expiry + 1, 'one build per expiry');
  }
});
