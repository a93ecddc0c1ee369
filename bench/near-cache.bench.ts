/**
 * The near cache and purges (docs/decisions/0027-near-cache.md,
 * docs/decisions/0026-purge-by-ban-records.md):
 *
 * 1. Cache hits of the 50 KiB page (br client, wrk, server pinned to core 0,
 *    load generator to core 1) from the in-memory store, from SQLite and
 *    Redis without the near cache (`cacheNearBytes: 0`) and with it, and
 *    from the in-memory store with tags on (entries tagged, a purge of
 *    another tag made, so every hit reads its records). Ratios against the
 *    in-memory hit; targets ≥ 0.9 with the near cache, ≥ 0.95 with tags.
 * 2. Purge visibility: two unpinned server processes share a SQLite file
 *    (then a redis-server); the driver purges through one and asks the
 *    other every 2 ms until its page changes. p50 and p99 over the trials.
 *
 * Run: node --import tsx bench/near-cache.bench.ts [--quick]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { alternate, compare, isMain, median, percentile, quick, sample, type Row, type Sample } from './lib/harness.ts';
import { htmlPage } from '../support/pages.ts';
import { builtPackage, ensureBuilt } from './lib/package.ts';
import { generator, load, once, reportHttp } from './lib/load.ts';
import { serveToDriver, startServerProcess, type ServerProcess } from './lib/server-process.ts';
import { startServer as startRedis } from '../support/redis-server.ts';

const self = fileURLToPath(import.meta.url);

type Mode = 'memory' | 'memory-tags' | 'sqlite' | 'sqlite-near' | 'redis' | 'redis-near';

// --- server side (a child process) -------------------------------------------

async function serveMode(mode: Mode, cache: string): Promise<void> {
  const { default: Koa } = await import('koa');
  const { buffer } = await builtPackage();
  const app = new Koa();
  app.silent = true;
  const lines = htmlPage(50 * 1024, 42)
    .split('\n')
    .map((line) => `${line}\n`);
  const near = mode.endsWith('-near') || mode.startsWith('memory');
  const middleware = buffer({
    cache: mode.startsWith('memory') ? true : cache,
    cacheNearBytes: near ? 32 * 1024 * 1024 : 0,
    varyBy: [],
  });
  // With tags on, a purge of another tag makes every hit look at its records.
  if (mode === 'memory-tags') await middleware.purgeTag('unrelated');
  app.use(async (ctx, next) => {
    if (ctx.method !== 'POST') return next();
    await middleware.purge(ctx.path);
    ctx.body = 'purged';
  });
  app.use(middleware);
  let builds = 0;
  app.use(async (ctx) => {
    if (await ctx.bufferIsCached()) return;
    builds++;
    if (mode === 'memory-tags') {
      ctx.state.buffer = { cacheTags: ['page', 'site'] };
      ctx.set('Cache-Tag', 'section-1, layout');
    }
    ctx.type = 'html';
    ctx.body = `${lines.join('')}<!-- build ${process.pid}.${builds} -->`;
  });
  serveToDriver(app.callback() as http.RequestListener); // Koa catches its own errors: its promise never rejects
}

// --- driver side ---------------------------------------------------------------

const startServer = (mode: Mode, cache: string, pin: boolean): Promise<ServerProcess> =>
  startServerProcess(self, mode, [cache], { pin });

function body(port: number, path: string): Promise<string> {
  return new Promise((resolve, reject) => {
    http
      .get({ host: '127.0.0.1', port, path, agent: false }, (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => (text += chunk));
        res.on('end', () => resolve(text.slice(-40)));
      })
      .on('error', reject);
  });
}

function post(port: number, path: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const request = http.request({ host: '127.0.0.1', port, path, method: 'POST', agent: false }, (res) => {
      res.resume();
      res.on('end', () => resolve());
    });
    request.on('error', reject);
    request.end();
  });
}

/** Ms from a purge through `a` until `b` answers another page, over `trials` trials. */
async function visibility(a: number, b: number, trials: number): Promise<number[]> {
  const times: number[] = [];
  for (let i = 0; i < trials; i++) {
    const path = `/visible-${i % 5}`;
    await body(a, path);
    const old = await body(b, path);
    const at = performance.now();
    await post(a, path);
    while ((await body(b, path)) === old) await new Promise((resolve) => setTimeout(resolve, 2));
    times.push(performance.now() - at);
    // A pause that is not a multiple of the sync interval: purges land at every phase of it.
    await new Promise((resolve) => setTimeout(resolve, 37 + (i % 7) * 11));
  }
  return times;
}

async function main(): Promise<void> {
  ensureBuilt();
  const dir = mkdtempSync(join(tmpdir(), 'kb-near-bench-'));
  const redis = await startRedis().catch(() => undefined);
  const servers: ServerProcess[] = [];
  const rows: Row[] = [];
  const problems: string[] = [];
  if (redis === undefined) problems.push('redis-server is missing: the Redis rows were not measured');
  try {
    const modes: Mode[] = ['memory', 'memory-tags', 'sqlite', 'sqlite-near'];
    if (redis !== undefined) modes.push('redis', 'redis-near');
    const cacheOf = (mode: Mode): string =>
      mode.startsWith('redis') ? `redis://127.0.0.1:${redis!.port}` : `sqlite:${join(dir, `${mode}.sqlite`)}`;
    const ports = new Map<Mode, number>();
    for (const mode of modes) {
      const server = await startServer(mode, cacheOf(mode), true);
      servers.push(server);
      ports.set(mode, server.port);
    }
    const headers = { 'accept-encoding': 'br' };
    for (const warmUp of quick ? [1] : [2, 1]) for (const mode of modes) await load(ports.get(mode)!, headers, warmUp);
    for (const mode of modes) {
      const answer = await once(ports.get(mode)!, headers);
      if (answer.headers['x-cache'] !== 'HIT') problems.push(`${mode} did not answer from the cache`);
    }
    const samples = await alternate(
      modes.map((mode) => ({
        name: mode,
        run: async () => {
          const result = await load(ports.get(mode)!, headers, 2);
          if (result.errors > 0 || result.non2xx > 0)
            problems.push(`${mode}: ${result.errors} errors, ${result.non2xx} non-2xx`);
          return result.rps;
        },
      })),
      quick ? 1 : 5,
      'req/s',
    );
    const of = (mode: Mode): Sample | undefined => samples[modes.indexOf(mode)];
    const memory = of('memory')!;
    rows.push(
      compare('cache hit, 50 KiB, br: in-memory with tags on vs without', of('memory-tags')!, memory, true, '>= 0.95'),
    );
    for (const store of ['sqlite', 'redis'] as const) {
      if (of(store) === undefined) continue;
      rows.push(compare(`cache hit, 50 KiB, br: ${store} without near cache vs in-memory`, of(store)!, memory, true));
      rows.push(
        compare(
          `cache hit, 50 KiB, br: ${store} with near cache vs in-memory`,
          of(`${store}-near`)!,
          memory,
          true,
          '>= 0.9',
        ),
      );
    }
    for (const server of servers.splice(0)) server.child.kill();

    // Purge visibility between two processes sharing the store.
    const trials = quick ? 20 : 100;
    for (const store of ['sqlite', 'redis'] as const) {
      if (store === 'redis' && redis === undefined) continue;
      const cache = store === 'redis' ? `redis://127.0.0.1:${redis!.port}` : `sqlite:${join(dir, 'visibility.sqlite')}`;
      const mode: Mode = store === 'redis' ? 'redis-near' : 'sqlite-near';
      const [a, b] = [await startServer(mode, cache, false), await startServer(mode, cache, false)];
      servers.push(a, b);
      const times = await visibility(a.port, b.port, trials);
      const p99 = percentile(times, 99);
      rows.push({
        figure: `purge seen by the other process, ${store}, p99 of ${trials} (p50 ${median(times).toFixed(0)} ms)`,
        ours: sample(`${store} p99`, [p99], 'ms'),
        target: '<= 250 ms',
        note: p99 <= 250 ? 'within target' : 'OVER TARGET',
      });
      for (const server of servers.splice(0)) server.child.kill();
    }
  } finally {
    for (const server of servers) server.child.kill();
    await redis?.stop();
    rmSync(dir, { recursive: true, force: true });
  }
  console.log(`load generator: ${generator}`);
  reportHttp('Near cache and purges: hits against the in-memory store, purge visibility', rows, problems);
}

if (process.argv.includes('--serve')) {
  const at = process.argv.indexOf('--serve');
  await serveMode(process.argv[at + 1] as Mode, process.argv[at + 2] ?? '');
} else if (isMain(import.meta.url)) {
  await main();
}
