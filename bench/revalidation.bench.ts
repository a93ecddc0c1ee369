/**
 * What revalidation saves on expiry: a page whose full render takes 50 ms
 * and whose validator takes 1 ms to compute. The action sets the ETag,
 * answers 304 when `ctx.fresh` (the stored ETag is in If-None-Match on a
 * revalidating rebuild), and only otherwise renders. Reported: the latency
 * of the request that meets an expired entry, revalidated (the action
 * answers 304, the stored page is renewed and sent) against rebuilt (the
 * same page and action with `cacheRevalidationWindow: 0`, so the expired
 * entry is not kept and the action renders it again). Target: a revalidated
 * expiry costs under a tenth of a rebuilt one.
 *
 * Method: two servers in this process, koa-buffer from dist/ (`cache: true`,
 * `cacheDuration: 0.05`: the page says no lifetime of its own, so it lives
 * 50 ms), a 50 KiB HTML page, a br client on fresh connections. Each round
 * waits 60 ms for both entries to expire, then times one GET to each (the
 * order alternating round by round), and checks its X-Cache (REVALIDATED,
 * MISS), and right after the revalidated one a GET that is a plain hit of
 * the renewed entry, for reference. 100 rounds (20 with --quick); medians
 * per expiry with their range.
 * The requests go one at a time, so client and server sharing a process
 * only adds the client's own few hundred µs to both sides.
 *
 * Run: node --import tsx bench/revalidation.bench.ts [--quick]
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Context } from 'koa';
import { compare, isMain, quick, report, sample, type Row } from './lib/harness.ts';
import { builtPackage, ensureBuilt } from './lib/package.ts';
import { htmlPage } from '../support/pages.ts';

const renderMs = 50;
const validatorMs = 1;
const ttlMs = 50;

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

type Mode = 'revalidated' | 'rebuilt';

interface Server {
  port: number;
  renders: number;
  server: http.Server;
  stats: () => { builds: { revalidated: number } };
}

async function start(mode: Mode): Promise<Server> {
  const { default: Koa } = await import('koa');
  const { buffer } = await builtPackage();
  const page = htmlPage(50 * 1024, 7);
  const middleware = buffer({
    cache: true,
    cacheDuration: ttlMs / 1000,
    cacheRevalidationWindow: mode === 'revalidated' ? 60 : 0,
    varyBy: [],
  });
  const app = new Koa();
  app.silent = true;
  app.use(middleware);
  const served: Server = { port: 0, renders: 0, server: undefined as unknown as http.Server, stats: middleware.stats };
  app.use(async (ctx: Context) => {
    if (await ctx.bufferIsCached()) return;
    await sleep(validatorMs); // e.g. the row's updated_at
    ctx.set('ETag', '"page-v1"');
    ctx.status = 200; // Koa's ctx.fresh is false while the status is still its default 404
    if (ctx.fresh) {
      ctx.status = 304;
      return;
    }
    served.renders += 1;
    await sleep(renderMs);
    ctx.type = 'html';
    ctx.body = page;
  });
  served.server = http.createServer(app.callback() as http.RequestListener); // Koa catches its own errors: its promise never rejects
  await new Promise<void>((resolve) => served.server.listen(0, '127.0.0.1', resolve));
  served.port = (served.server.address() as AddressInfo).port;
  return served;
}

/** One GET on a fresh connection: its latency in ms and its X-Cache. */
function get(port: number): Promise<{ ms: number; status: number; xCache: string | undefined }> {
  const sent = performance.now();
  return new Promise((resolve, reject) => {
    http
      .get({ host: '127.0.0.1', port, path: '/page', agent: false, headers: { 'accept-encoding': 'br' } }, (res) => {
        res.resume();
        res.on('end', () =>
          resolve({
            ms: performance.now() - sent,
            status: res.statusCode!,
            xCache: res.headers['x-cache'] as string | undefined,
          }),
        );
      })
      .on('error', reject);
  });
}

async function main(): Promise<void> {
  ensureBuilt();
  const rounds = quick ? 20 : 100;
  const expected: Record<Mode, string> = { revalidated: 'REVALIDATED', rebuilt: 'MISS' };
  const servers: Record<Mode, Server> = { revalidated: await start('revalidated'), rebuilt: await start('rebuilt') };
  const times: Record<Mode, number[]> = { revalidated: [], rebuilt: [] };
  const hits: number[] = [];
  const problems: string[] = [];
  try {
    for (const mode of ['revalidated', 'rebuilt'] as const) await get(servers[mode].port); // the first build
    const rendersBefore = { revalidated: servers.revalidated.renders, rebuilt: servers.rebuilt.renders };
    for (let round = 0; round < rounds; round++) {
      await sleep(ttlMs + 10);
      const order: Mode[] = round % 2 === 0 ? ['revalidated', 'rebuilt'] : ['rebuilt', 'revalidated'];
      for (const mode of order) {
        const answer = await get(servers[mode].port);
        times[mode].push(answer.ms);
        if (answer.status !== 200 || answer.xCache !== expected[mode])
          problems.push(`${mode} round ${round}: ${answer.status} ${answer.xCache}, not 200 ${expected[mode]}`);
        if (mode !== 'revalidated') continue;
        // At once, while the renewed entry is fresh: what the same request costs when nothing expired.
        const hit = await get(servers[mode].port);
        if (hit.xCache === 'HIT') hits.push(hit.ms);
      }
    }
    const renders = (mode: Mode): number => servers[mode].renders - rendersBefore[mode];
    const revalidatedCount = servers.revalidated.stats().builds.revalidated;
    const rows: Row[] = [
      {
        ...compare(
          `expired 50 KiB page (render ${renderMs} ms, ETag ${validatorMs} ms), ${rounds} expiries one at a time: latency per expiry`,
          sample('revalidated (action answers 304)', times.revalidated, 'ms'),
          sample('rebuilt (cacheRevalidationWindow 0)', times.rebuilt, 'ms'),
          false,
          '>= 10 (rebuilt / revalidated)',
        ),
        note: `revalidated / rebuilt ${(sample('', times.revalidated, 'ms').median / sample('', times.rebuilt, 'ms').median).toFixed(3)}; renders: ${renders('revalidated')} revalidating, ${renders('rebuilt')} rebuilding; builds.revalidated ${revalidatedCount}`,
      },
      compare(
        'the same page: a revalidated expiry against a plain hit of the renewed entry',
        sample('revalidated', times.revalidated, 'ms'),
        sample('hit', hits, 'ms'),
        false,
      ),
    ];
    if (hits.length < rounds / 2) problems.push(`only ${hits.length} of ${rounds} hits after a renewal were hits`);
    report('Revalidation: an expired page renewed by a 304 from its action', rows);
    if (renders('revalidated') !== 0) problems.push(`the revalidating server rendered ${renders('revalidated')} times`);
  } finally {
    for (const mode of ['revalidated', 'rebuilt'] as const) {
      servers[mode].server.closeAllConnections();
      servers[mode].server.close();
    }
  }
  if (problems.length > 0) {
    console.error(problems.slice(0, 10).join('\n'));
    process.exitCode = 1;
  }
}

if (isMain(import.meta.url)) await main();
