/**
 * Memory under floods: what a worker's RSS settles at when every request is
 * new, against the per-worker figure the README states (which is this
 * bench's measure; see "Memory per worker" there).
 *
 * For each store (the in-memory store, SQLite, Redis), each flood (unique
 * URLs; unique cookies, keyed by `varyBy: ['cookie']`; unique hosts, with
 * `cacheHosts` unset so every host is cached; unique 8 KB URLs), without and
 * with a purge made before it (which makes every lookup read the purge
 * records), a new server process (`node --expose-gc`, pinned to core 0)
 * serves a 10 KiB page naming what it was built for, under `cache`. The
 * driver sends each new request twice (a miss, then a hit), over 32
 * keep-alive connections, as a browser would (`Accept-Encoding: gzip,
 * deflate, br`), for `--seconds` (default 60) a row, and decodes and checks
 * every fourth answer: the page must name the request's own URL, host and
 * cookie (a wrong body is counted and fails the bench). Every 5 s, and at
 * the end, the server collects garbage twice and reports its RSS over IPC.
 *
 * Reported per row: RSS idle (after start-up and 200 requests of one page,
 * after GC), the plateau (the highest after-GC RSS of the second half of
 * the flood and its end), the growth over idle, and its ratio to the
 * README's figure; the target is at most 1.25×.
 *
 * Run: node --import tsx bench/flood.bench.ts [--seconds N] [--stores memory,sqlite,redis]
 *      [--floods urls,cookies,hosts,long-urls] [--purge no,yes]
 * The whole matrix takes about 27 minutes; `--quick` runs 5 s rows on the
 * memory store only (a smoke run: no plateau is reached in 5 s).
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import zlib from 'node:zlib';
import { Redis } from 'ioredis';
import { isMain, quick, report, sample, type Row } from './lib/harness.ts';
import { htmlPage } from '../support/pages.ts';
import { builtPackage, ensureBuilt } from './lib/package.ts';
import { serveToDriver, startServerProcess, type ServerProcess } from './lib/server-process.ts';
import { startServer as startRedis } from '../support/redis-server.ts';

const self = fileURLToPath(import.meta.url);
const readme = fileURLToPath(new URL('../README.md', import.meta.url));

type Store = 'memory' | 'sqlite' | 'redis';
type Flood = 'urls' | 'cookies' | 'hosts' | 'long-urls';
const stores: readonly Store[] = ['memory', 'sqlite', 'redis'];
const floods: readonly Flood[] = ['urls', 'cookies', 'hosts', 'long-urls'];

/** The target: the plateau's growth over idle, at most this many times the README's figure. */
const targetRatio = 1.25;
const MiB = 1024 * 1024;

// --- server side (a child process) -------------------------------------------

async function serveMode(mode: string, cache: string): Promise<void> {
  const [, flood] = mode.split(':') as [Store, Flood];
  const { default: Koa } = await import('koa');
  const { buffer } = await builtPackage();
  const app = new Koa();
  app.silent = true;
  const filler = htmlPage(10 * 1024, 7);
  let errors = 0;
  const logger = { debug() {}, info() {}, warn() {}, error: () => void errors++ };
  const middleware = buffer({
    cache: cache === 'memory' ? true : cache,
    ...(flood === 'cookies' ? { varyBy: ['cookie'] } : {}),
    logger,
  });
  app.use(async (ctx, next) => {
    if (ctx.method !== 'POST') return next();
    await middleware.purge('/never-built');
    ctx.body = 'purged';
  });
  app.use(middleware);
  app.use(async (ctx) => {
    if (await ctx.bufferIsCached()) return;
    ctx.type = 'html';
    const visitor = ctx.cookies.get('visitor') ?? '-';
    ctx.body = `${filler}<!-- page ${ctx.host} ${ctx.url} ${visitor} -->`;
  });
  const gc = (globalThis as { gc?: () => void }).gc;
  if (gc === undefined) throw new Error('the flood server needs node --expose-gc');
  serveToDriver(app.callback() as http.RequestListener, {
    'gc-rss': () => {
      gc();
      gc();
      const use = process.memoryUsage();
      return { rss: use.rss, heapUsed: use.heapUsed, external: use.external, errors };
    },
  });
}

// --- driver side ---------------------------------------------------------------

/** The README's per-worker figure, MiB: the number in "RSS plateau … at most N MiB". */
function readmeFigure(): number {
  const found = /RSS\s+plateau\s+is\s+at\s+most\s+(\d+)\s+MiB/.exec(readFileSync(readme, 'utf8'));
  if (!found) throw new Error('README.md states no "RSS plateau is at most N MiB" under "Memory per worker"');
  return Number(found[1]);
}

interface Request {
  path: string;
  headers: Record<string, string>;
  /** What the page must name. */
  marker: string;
}

const browser = { 'accept-encoding': 'gzip, deflate, br' };
const long = 'a'.repeat(8 * 1024);

function requestFor(flood: Flood, run: string, i: number): Request {
  const host = flood === 'hosts' ? `h${i}.${run}.flood.example` : 'site.example';
  const path =
    flood === 'urls' || flood === 'cookies' || flood === 'hosts' ? `/u/${run}/${i}` : `/l/${run}/${i}/${long}`;
  const path2 = flood === 'cookies' || flood === 'hosts' ? `/u/${run}/page` : path;
  const visitor = flood === 'cookies' ? `v${run}x${i}` : '-';
  const headers: Record<string, string> = { ...browser, host };
  if (flood === 'cookies') headers.cookie = `visitor=${visitor}`;
  return { path: path2, headers, marker: `<!-- page ${host} ${path2} ${visitor} -->` };
}

function decodeBody(encoding: string | undefined, body: Buffer): Buffer {
  if (encoding === 'br') return zlib.brotliDecompressSync(body);
  if (encoding === 'gzip') return zlib.gunzipSync(body);
  if (encoding === 'deflate') return zlib.inflateSync(body);
  return body;
}

interface FloodCount {
  requests: number;
  checked: number;
  wrong: number;
  failed: number;
}

function send(agent: http.Agent, port: number, request: Request, check: boolean, count: FloodCount): Promise<void> {
  return new Promise((resolve) => {
    const req = http.get({ host: '127.0.0.1', port, path: request.path, headers: request.headers, agent }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => check && chunks.push(chunk));
      res.on('end', () => {
        count.requests++;
        if (res.statusCode !== 200) count.failed++;
        else if (check) {
          count.checked++;
          try {
            const body = decodeBody(res.headers['content-encoding'], Buffer.concat(chunks)).toString();
            if (!body.endsWith(request.marker)) count.wrong++;
          } catch {
            count.wrong++;
          }
        }
        resolve();
      });
      res.on('error', () => (count.failed++, resolve()));
    });
    req.on('error', () => (count.failed++, resolve()));
  });
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

interface RowResult extends FloodCount {
  idle: number;
  plateau: number;
  samples: number[];
  errors: number;
  /** At the end, after GC: V8's heap in use, and memory outside it (Buffers), bytes. */
  heapUsed: number;
  external: number;
}

async function floodRow(server: ServerProcess, flood: Flood, purge: boolean, seconds: number): Promise<RowResult> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 32 });
  const warm: FloodCount = { requests: 0, checked: 0, wrong: 0, failed: 0 };
  const one = requestFor(flood, 'warm', 0);
  for (let i = 0; i < 200; i++) await send(agent, server.port, one, i % 4 === 0, warm);
  const idle = (await server.ask('gc-rss')).rss!;
  if (purge)
    await new Promise<void>((resolve, reject) =>
      http
        .request({ host: '127.0.0.1', port: server.port, method: 'POST', path: '/', agent }, (res) =>
          res.resume().on('end', resolve),
        )
        .on('error', reject)
        .end(),
    );
  const count: FloodCount = { requests: 0, checked: 0, wrong: warm.wrong, failed: warm.failed };
  const run = Math.random().toString(36).slice(2, 8);
  const deadline = Date.now() + seconds * 1000;
  let next = 0;
  const loop = async (): Promise<void> => {
    while (Date.now() < deadline) {
      const i = next++;
      const request = requestFor(flood, run, i);
      await send(agent, server.port, request, i % 4 === 0, count);
      await send(agent, server.port, request, i % 4 === 2, count);
    }
  };
  const loops = Array.from({ length: 32 }, loop);
  const samples: Array<{ at: number; rss: number }> = [];
  const started = Date.now();
  while (Date.now() < deadline - 2500) {
    await sleep(Math.min(5000, deadline - Date.now() - 2500));
    samples.push({ at: Date.now() - started, rss: (await server.ask('gc-rss')).rss! });
  }
  await Promise.all(loops);
  const end = await server.ask('gc-rss');
  samples.push({ at: Date.now() - started, rss: end.rss! });
  agent.destroy();
  const late = samples.filter((s) => s.at >= (seconds * 1000) / 2).map((s) => s.rss);
  return {
    ...count,
    idle,
    plateau: Math.max(...late),
    samples: samples.map((s) => s.rss),
    errors: end.errors!,
    heapUsed: end.heapUsed!,
    external: end.external!,
  };
}

function listArg(name: string, all: readonly string[], defaults: readonly string[] = all): string[] {
  const at = process.argv.indexOf(name);
  if (at < 0) return [...defaults];
  const wanted = process.argv[at + 1]!.split(',');
  for (const one of wanted) if (!all.includes(one)) throw new Error(`${name}: ${one} is not one of ${all.join(', ')}`);
  return wanted;
}

async function main(): Promise<void> {
  const at = process.argv.indexOf('--seconds');
  const seconds = at < 0 ? (quick ? 5 : 60) : Number(process.argv[at + 1]);
  if (!(seconds >= 5)) throw new Error('--seconds must be at least 5');
  // A smoke run (--quick): 5 s rows on the memory store; the plateau is not reached then.
  const chosenStores = listArg('--stores', stores, quick ? ['memory'] : stores) as Store[];
  const chosenFloods = listArg('--floods', floods) as Flood[];
  const purges = listArg('--purge', ['no', 'yes']).map((p) => p === 'yes');
  ensureBuilt();
  const figure = readmeFigure();
  const redis = chosenStores.includes('redis') ? await startRedis() : undefined;
  const client = redis ? new Redis({ port: redis.port, host: '127.0.0.1', lazyConnect: true }) : undefined;
  const rows: Row[] = [];
  const problems: string[] = [];
  let worst = 0;
  let wrong = 0;
  try {
    for (const store of chosenStores)
      for (const flood of chosenFloods)
        for (const purge of purges) {
          const dir = store === 'sqlite' ? mkdtempSync(join(tmpdir(), 'kb-flood-')) : undefined;
          if (client) await client.flushall();
          const cache =
            store === 'memory'
              ? 'memory'
              : store === 'sqlite'
                ? `sqlite:${join(dir!, 'cache.db')}`
                : `redis://127.0.0.1:${redis!.port}`;
          const server = await startServerProcess(self, `${store}:${flood}`, [cache], { nodeArgs: ['--expose-gc'] });
          try {
            const result = await floodRow(server, flood, purge, seconds);
            const growth = (result.plateau - result.idle) / MiB;
            const ratio = growth / figure;
            worst = Math.max(worst, ratio);
            wrong += result.wrong;
            const name = `${store}, unique ${flood}${purge ? ', after a purge' : ''}`;
            const line =
              `${name}: ${result.requests} requests (${(result.requests / seconds).toFixed(0)}/s), ` +
              `${result.checked} checked, ${result.wrong} wrong, ${result.failed} failed, ${result.errors} logged errors; ` +
              `RSS idle ${(result.idle / MiB).toFixed(0)} MiB, plateau ${(result.plateau / MiB).toFixed(0)} MiB ` +
              `(+${growth.toFixed(0)} MiB, ${ratio.toFixed(2)}× the README's ${figure} MiB); at the end heap ` +
              `${(result.heapUsed / MiB).toFixed(0)} MiB, external ${(result.external / MiB).toFixed(0)} MiB; after-GC samples ` +
              result.samples.map((rss) => (rss / MiB).toFixed(0)).join(' ');
            console.error(line);
            if (result.wrong > 0) problems.push(`${name}: ${result.wrong} wrong bodies`);
            if (result.failed > 0) problems.push(`${name}: ${result.failed} failed requests`);
            if (ratio > targetRatio)
              problems.push(`${name}: +${growth.toFixed(0)} MiB is ${ratio.toFixed(2)}× the README's ${figure} MiB`);
            rows.push({
              figure: `RSS growth over idle after GC, ${seconds} s flood: ${name}`,
              ours: sample('koa-buffer', [growth], 'MiB'),
              ratio: 1 / ratio,
              target: `<= ${targetRatio}× ${figure} MiB`,
              note: `idle ${(result.idle / MiB).toFixed(0)} MiB; ${result.checked} bodies checked, ${result.wrong} wrong`,
            });
          } finally {
            server.child.kill();
            if (dir) rmSync(dir, { recursive: true, force: true });
          }
        }
  } finally {
    client?.disconnect();
    await redis?.stop();
  }
  console.log(
    `wrong bodies: ${wrong}; worst plateau growth ${worst.toFixed(2)}× the README's ${figure} MiB (target <= ${targetRatio}×)`,
  );
  for (const problem of problems) console.log(`WARNING: ${problem}`);
  report('Memory under floods of unique requests', rows);
  if (problems.length > 0) process.exitCode = 1;
}

if (process.argv[2] === '--serve') void serveMode(process.argv[3]!, process.argv[4]!);
else if (isMain(import.meta.url)) await main();
