/**
 * The diagnostics channels an APM tool subscribes to: a build traced from
 * start to its asynchronous end (and its error), waits and store calls
 * traced, one koa-buffer:request message per request with its final
 * Cache-Status, and the purge and upgrade channels.
 */
import diagnostics from 'node:diagnostics_channel';
import { setTimeout as sleep } from 'node:timers/promises';
import test from 'ava';
import { buffer } from '../../src/buffer.ts';
import { htmlPage, serve } from '../helpers/serve.ts';

const page = htmlPage(20_000);

/** Subscribes to every event of a tracing channel, recording `name event` lines; unsubscribed in teardown. */
function traceOf(
  t: import('ava').ExecutionContext,
  name: string,
): Array<{ event: string; message: Record<string, unknown> }> {
  const seen: Array<{ event: string; message: Record<string, unknown> }> = [];
  const channel = diagnostics.tracingChannel(name);
  const handlers = Object.fromEntries(
    ['start', 'end', 'asyncStart', 'asyncEnd', 'error'].map((event) => [
      event,
      (message: unknown) => seen.push({ event, message: { ...(message as Record<string, unknown>) } }),
    ]),
  ) as unknown as diagnostics.TracingChannelSubscribers<object>;
  channel.subscribe(handlers);
  t.teardown(() => channel.unsubscribe(handlers));
  return seen;
}

function messagesOf(t: import('ava').ExecutionContext, name: string): Array<Record<string, unknown>> {
  const seen: Array<Record<string, unknown>> = [];
  const listener = (message: unknown): void => void seen.push(message as Record<string, unknown>);
  diagnostics.subscribe(name, listener);
  t.teardown(() => diagnostics.unsubscribe(name, listener));
  return seen;
}

test.serial('a build is traced start, end, asyncStart, asyncEnd; a failed one publishes error first', async (t) => {
  const builds = traceOf(t, 'koa-buffer:build');
  const stores = traceOf(t, 'koa-buffer:store');
  const server = await serve(t, [
    buffer({ cache: true, varyBy: [] }),
    async (ctx) => {
      if (await ctx.bufferIsCached()) return;
      if (ctx.path === '/fail') throw new Error('the action failed');
      ctx.type = 'html';
      ctx.body = page;
    },
  ]);
  await server.request('/ok');
  await sleep(20);
  t.deepEqual(
    builds.map((b) => b.event),
    ['start', 'end', 'asyncStart', 'asyncEnd'],
  );
  t.regex(String(builds[0]!.message.url), /\/ok$/);
  t.is(builds.at(-1)!.message.result, 'stored');
  t.true(stores.some((s) => s.event === 'start' && s.message.operation === 'get' && s.message.backend === 'memory'));
  t.true(stores.some((s) => s.event === 'asyncEnd' && s.message.operation === 'set'));
  builds.length = 0;
  t.is((await server.request('/fail')).status, 500);
  t.deepEqual(
    builds.map((b) => b.event),
    ['start', 'end', 'error', 'asyncStart', 'asyncEnd'],
  );
  t.is(builds.at(-1)!.message.result, 'failed');
});

test.serial(
  'waits are traced, and every request through bufferIsCached publishes its final Cache-Status',
  async (t) => {
    const waits = traceOf(t, 'koa-buffer:wait');
    const requests = messagesOf(t, 'koa-buffer:request');
    const server = await serve(t, [
      buffer({ cache: true, varyBy: [] }),
      async (ctx) => {
        if (ctx.path === '/plain') return void (ctx.body = 'not through the cache');
        if (await ctx.bufferIsCached()) return;
        await sleep(100);
        ctx.type = 'html';
        ctx.body = page;
      },
    ]);
    await Promise.all([server.request('/slow'), server.request('/slow'), server.request('/slow')]);
    await server.request('/slow');
    await server.request('/plain');
    await sleep(20);
    t.is(waits.filter((w) => w.event === 'start').length, 2, 'two waited');
    t.true(waits.filter((w) => w.event === 'asyncEnd').every((w) => w.message.result === 'answered'));
    t.is(requests.length, 4, 'one message per request that asked the cache, none for /plain');
    const outcomes = requests.map((r) => r.outcome).sort();
    t.deepEqual(outcomes, ['collapsed', 'collapsed', 'hit', 'miss']);
    const built = requests.find((r) => r.outcome === 'miss')!;
    t.is(built.cacheStatus, 'koa-buffer; fwd=miss; stored', 'the Cache-Status as sent, not as it stood mid-request');
    t.is(built.method, 'GET');
    t.is(built.url, '/slow');
    t.is(built.status, 200);
  },
);

test.serial('purges and upgrades are published', async (t) => {
  const purges = messagesOf(t, 'koa-buffer:purge');
  const upgrades = messagesOf(t, 'koa-buffer:upgrade');
  const mw = buffer({ cache: true, varyBy: [] });
  const server = await serve(t, [
    mw,
    (ctx) => {
      ctx.type = 'html';
      ctx.body = page;
    },
  ]);
  // A body seen twice is hot: its smallest encoding is made off the request path.
  for (let i = 0; i < 3; i++) await server.request('/hot', { headers: { 'accept-encoding': 'br' } });
  for (let i = 0; i < 100 && upgrades.length === 0; i++) await sleep(50);
  t.is(upgrades[0]?.result, 'done');
  t.is(upgrades[0]?.coding, 'br');
  t.true((upgrades[0]?.compressedSize as number) < page.length);
  await mw.purge('/hot');
  await mw.purgeTag('news');
  await mw.purgeAll();
  t.deepEqual(purges, [
    { kind: 'url', target: '/hot' },
    { kind: 'tag', target: 'news' },
    { kind: 'all', target: undefined },
  ]);
});
