/**
 * mw.metrics() in the Prometheus text exposition format, read back line by
 * line; the same families registered on a real prom-client Registry; route
 * names as the only request-derived labels, and only those listed; and the
 * `metrics` option refusing what it cannot use.
 */
import test from 'ava';
import Router from '@koa/router';
import Koa from 'koa';
import { Counter, Registry } from 'prom-client';
import { BufferOptionError } from '../../src/base/errors.ts';
import { buffer } from '../../src/buffer.ts';
import { routesMax } from '../../src/observe/metrics-option.ts';
import { htmlPage, serve } from '../helpers/serve.ts';

const page = htmlPage(8_000);

/** The samples of an exposition, by their full line before the value, and the HELP/TYPE of each family. */
function parse(text: string): { samples: Map<string, number>; types: Map<string, string>; helps: Set<string> } {
  const samples = new Map<string, number>();
  const types = new Map<string, string>();
  const helps = new Set<string>();
  for (const line of text.split('\n')) {
    if (line === '') continue;
    const help = /^# HELP (koa_buffer_[a-z_]+) \S/.exec(line);
    if (help) {
      if (helps.has(help[1]!)) throw new Error(`HELP twice for ${help[1]}`);
      helps.add(help[1]!);
      continue;
    }
    const type = /^# TYPE (koa_buffer_[a-z_]+) (counter|gauge|histogram)$/.exec(line);
    if (type) {
      types.set(type[1]!, type[2]!);
      continue;
    }
    const sample = /^(koa_buffer_[a-z_]+)(\{(?:[a-z_]+="(?:[^"\\\n]|\\.)*",?)*\})? (-?[0-9.e+]+|\+Inf|NaN)$/.exec(line);
    if (!sample) throw new Error(`not a sample line: ${JSON.stringify(line)}`);
    samples.set(`${sample[1]}${sample[2] ?? ''}`, Number(sample[3]));
  }
  return { samples, types, helps };
}

test('metrics() is valid text exposition: every family declared once, counters end in _total, histograms cumulative', async (t) => {
  const mw = buffer({ cache: true, varyBy: [] });
  const server = await serve(t, [
    mw,
    async (ctx) => {
      if (await ctx.bufferIsCached()) return;
      ctx.type = 'html';
      ctx.body = page;
    },
  ]);
  for (let i = 0; i < 3; i++) await server.request('/p', { headers: { 'accept-encoding': 'gzip' } });
  const { samples, types, helps } = parse(mw.metrics());
  for (const [family, type] of types) {
    t.true(helps.has(family), `${family} has a HELP line`);
    if (type === 'counter') t.regex(family, /_total$/, `${family}: a counter's name ends in _total`);
  }
  t.is(samples.get('koa_buffer_requests_total{outcome="hit"}'), 2);
  t.is(samples.get('koa_buffer_requests_total{outcome="miss"}'), 1);
  t.is(samples.get('koa_buffer_store_calls_total{backend="memory"}')! > 0, true);
  t.true(
    samples.get('koa_buffer_bytes_in_total{coding="gzip"}')! >
      samples.get('koa_buffer_bytes_out_total{coding="gzip"}')!,
  );
  t.is(types.get('koa_buffer_build_duration_seconds'), 'histogram');
  t.is(samples.get('koa_buffer_build_duration_seconds_count'), 1);
  t.is(samples.get('koa_buffer_build_duration_seconds_bucket{le="+Inf"}'), 1);
  const buckets = [...samples].filter(([name]) => name.startsWith('koa_buffer_hit_duration_seconds_bucket'));
  for (let i = 1; i < buckets.length; i++) t.true(buckets[i]![1] >= buckets[i - 1]![1], 'buckets are cumulative');
  t.is(buckets.at(-1)![1], 2);
  t.is(samples.get('koa_buffer_budget_limit_bytes{budget="memo"}'), 64 * 1024 * 1024);
});

test('no label takes its values from requests: hostile URLs, hosts and headers never reach the exposition', async (t) => {
  const mw = buffer({ cache: true });
  const server = await serve(t, [
    mw,
    async (ctx) => {
      if (await ctx.bufferIsCached()) return;
      ctx.type = 'html';
      ctx.body = page;
    },
  ]);
  const evil = 'evil"} 1\nkoa_buffer_forged_total 9';
  await server.request(`/${encodeURIComponent(evil)}`, { headers: { cookie: `s=${encodeURIComponent(evil)}` } });
  await server.request('/x', { method: 'POST', headers: { 'x-evil': 'evil' } });
  await server.request('/x', { headers: { host: 'evil.example' } });
  const text = mw.metrics();
  t.false(text.includes('evil'), 'nothing of the requests is in the text');
  t.notThrows(() => parse(text));
});

test('metrics.routes counts requests by the route @koa/router matched, every other route as other', async (t) => {
  const mw = buffer({ cache: true, varyBy: [], metrics: { routes: ['/articles/:id'] } });
  const app = new Koa();
  const router = new Router();
  const render = async (ctx: Koa.Context): Promise<void> => {
    if (await ctx.bufferIsCached()) return;
    ctx.type = 'html';
    ctx.body = page;
  };
  router.get('/articles/:id', render);
  router.get('/users/:id', render);
  app.use(mw);
  app.use(router.routes());
  const server = await serve(t, app);
  await server.request('/articles/1');
  await server.request('/articles/1');
  await server.request('/articles/2');
  await server.request('/users/secret-name');
  const { samples } = parse(mw.metrics());
  t.is(samples.get('koa_buffer_route_requests_total{route="/articles/:id",outcome="hit"}'), 1);
  t.is(samples.get('koa_buffer_route_requests_total{route="/articles/:id",outcome="miss"}'), 2);
  t.is(samples.get('koa_buffer_route_requests_total{route="other",outcome="miss"}'), 1);
  t.false(mw.metrics().includes('secret-name'));
});

test('metrics.registry: the families are registered on a prom-client Registry beside the app’s own', async (t) => {
  const registry = new Registry();
  const own = new Counter({ name: 'app_orders_total', help: 'Orders.', registers: [registry] });
  own.inc(3);
  const mw = buffer({ cache: true, varyBy: [], metrics: { registry } });
  const server = await serve(t, [
    mw,
    async (ctx) => {
      if (await ctx.bufferIsCached()) return;
      ctx.type = 'html';
      ctx.body = page;
    },
  ]);
  await server.request('/p');
  await server.request('/p');
  const text = await registry.metrics();
  t.regex(text, /^app_orders_total 3$/m, 'the app’s own metric is still there');
  const { samples } = parse(
    text
      .split('\n')
      .filter((line) => !line.includes('app_orders'))
      .join('\n'),
  );
  t.is(samples.get('koa_buffer_requests_total{outcome="hit"}'), 1);
  t.is(samples.get('koa_buffer_build_duration_seconds_count'), 1);
  t.is(samples.get('koa_buffer_store_calls_total{backend="memory"}')! > 0, true, 'a family first seen after start');
  t.is(registry.contentType, 'text/plain; version=0.0.4; charset=utf-8');
});

test('a metrics option buffer() cannot use is a BufferOptionError naming it', (t) => {
  const bad: unknown[] = [
    'yes',
    [],
    { registry: {} },
    { registry: new Map() },
    { routes: '/articles' },
    { routes: [''] },
    { routes: Array.from({ length: routesMax + 1 }, (_, i) => `/r${i}`) },
    { labels: ['url'] },
  ];
  for (const metrics of bad) {
    const error = t.throws(() => buffer({ metrics } as never), { instanceOf: BufferOptionError });
    t.is(error.key, 'option_metrics');
    t.regex(error.message, /^koa-buffer: metrics/, error.message);
  }
  t.notThrows(() => buffer({ metrics: { routes: [], registry: new Registry() } }));
});
