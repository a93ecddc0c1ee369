/**
 * What observability costs a scrape and a loop turn: `mw.metrics()` and
 * `mw.stats()` with every counter family filled (a middleware that has seen
 * hits, misses, bypasses, waits, builds that failed and were not storable,
 * purges and several codings over real HTTP), and the longest single call
 * among them, which is how long a scrape holds the event loop.
 * Target: a scrape of metrics() under 1 ms.
 *
 * What counting costs the cache hit is measured where the hit is: side by
 * side with the commit before counting, in bench/cache.bench.ts
 * (`--baseline <ref>`, target within 2%).
 *
 * Run: node --import tsx bench/observe.bench.ts [--quick]
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import Koa from 'koa';
import { buffer } from '../src/buffer.ts';
import { htmlPage } from '../support/pages.ts';
import { quick, report, sample, type Row } from './lib/harness.ts';

const page = htmlPage(20_000);
const mw = buffer({ cache: true, varyBy: [], optimiseContent: 1, metrics: { routes: ['/a', '/b'] } });
const app = new Koa();
app.use(mw);
app.use(async (ctx) => {
  (ctx as { _matchedRoute?: string })._matchedRoute = ctx.path.slice(0, 2);
  if (await ctx.bufferIsCached()) return;
  if (ctx.path.startsWith('/fail')) throw new Error('failed');
  if (ctx.path.startsWith('/cookie')) ctx.cookies.set('c', '1');
  ctx.type = 'html';
  ctx.body = page;
});
const server = app.listen(0, '127.0.0.1');
await new Promise((resolve) => server.once('listening', resolve));
const { port } = server.address() as AddressInfo;

function get(path: string, headers: Record<string, string> = {}, method = 'GET'): Promise<void> {
  return new Promise((resolve) => {
    const request = http.request({ port, host: '127.0.0.1', path, method, headers }, (response) => {
      response.resume();
      response.on('end', resolve);
    });
    request.on('error', () => resolve());
    request.end();
  });
}

// Fill every family: outcomes, bypass details, not-storable details, codings, waits, purges.
for (const coding of ['br', 'gzip', 'zstd', 'deflate', 'identity'])
  for (let i = 0; i < 20; i++) await get(`/a${i % 5}`, { 'accept-encoding': coding });
await Promise.all(Array.from({ length: 10 }, () => get('/b-wait')));
await get('/a', {}, 'POST');
await get('/a', { authorization: 'x' });
await get('/cookie');
await get('/fail');
await mw.purge('/a0');
await mw.purgeTag('t');

const calls = quick ? 200 : 2000;
function timings(fn: () => unknown): number[] {
  const out: number[] = [];
  for (let i = 0; i < calls; i++) {
    const started = performance.now();
    fn();
    out.push(performance.now() - started);
  }
  return out;
}
timings(() => mw.metrics()); // warm up
const metricsMs = timings(() => mw.metrics());
const statsMs = timings(() => mw.stats());
const lines = mw
  .metrics()
  .split('\n')
  .filter((line) => line !== '' && !line.startsWith('#')).length;
server.close();

const p99 = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length * 0.99)]!;
const rows: Row[] = [
  {
    figure: `a scrape: mw.metrics() with every family filled (${lines} samples), median`,
    ours: sample('metrics()', metricsMs, 'ms'),
    target: '< 1 ms',
    note: `p99 ${p99(metricsMs).toFixed(3)} ms; longest ${Math.max(...metricsMs).toFixed(3)} ms`,
  },
  {
    figure: 'mw.stats(), median',
    ours: sample('stats()', statsMs, 'ms'),
    note: `p99 ${p99(statsMs).toFixed(3)} ms`,
  },
];
report('Observability: the cost of a scrape', rows);
process.exit(0);
