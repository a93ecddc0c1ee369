/**
 * An expired slow page under load, with and without stale-while-revalidate:
 * 2 worker processes sharing a SQLite cache and a FileLock directory, a page
 * whose action takes 1 s. Reported: the p99 latency of 200 requests (50 at
 * a time, over both workers) sent as soon as the entry has expired, against
 * the p99 of the same load on a fresh entry (a plain hit); and how many times
 * the action ran per expiry (the targets: with SWR, p99 within 2× of
 * the hit's, and one build). Without SWR the same load waits for the
 * rebuild: its p99 is shown for comparison.
 *
 * Method: the workers run in child processes pinned to core 0 and core 1
 * (`taskset`) and import the built package (dist/). The page's own
 * `Cache-Control: s-maxage=N` sets its TTL: each rep builds a new path that
 * lives 10 minutes and runs the hit load on it, and another that lives
 * `ttlMs`, waits for it to expire and runs the expired load; for SWR, the
 * background refresh is awaited before the build count is read. (A
 * loaded machine can take longer than a short TTL over the hit load, which
 * would then not be all hits.) Fresh connections, br.
 * 5 reps (2 with --quick), alternating which mode goes first; medians over
 * reps, with their spread.
 *
 * Run: node --import tsx bench/swr.bench.ts [--quick]
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { isMain, median, percentile, quick, report, sample, type Row } from './lib/harness.ts';
import { htmlPage } from '../support/pages.ts';
import { builtPackage, ensureBuilt } from './lib/package.ts';
import { pinned } from './lib/load.ts';

const self = fileURLToPath(import.meta.url);
const now = (): number => performance.timeOrigin + performance.now();
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

type Mode = 'swr' | 'no-swr';
interface ServeConfig {
  mode: Mode;
  sqlite: string;
  lockDir: string;
}

/** How long the action takes, and how long the expiring entry stays fresh, ms. */
const buildMs = 1000;
const ttlMs = 5000;

// --- server side (a child process) -------------------------------------------

function tell(message: Record<string, unknown>): void {
  if (process.connected) process.send!(message);
}

async function serveMode(config: ServeConfig): Promise<void> {
  const { default: Koa } = await import('koa');
  const { buffer } = await builtPackage();
  const app = new Koa();
  app.silent = true;
  const page = htmlPage(50 * 1024, 9);
  app.use(
    buffer({
      cache: `sqlite:${config.sqlite}`,
      cacheLockDir: config.lockDir,
      varyBy: [],
      cacheStaleWhileRevalidate: config.mode === 'swr' ? 60 : 0,
    }),
  );
  app.use(async (ctx) => {
    if (await ctx.bufferIsCached()) return;
    tell({ building: ctx.path });
    await sleep(buildMs);
    ctx.set('Cache-Control', `s-maxage=${Number(ctx.query.ttl)}`);
    ctx.type = 'html';
    ctx.body = page;
    tell({ built: now() });
  });
  const server = http.createServer(app.callback() as http.RequestListener); // Koa catches its own errors: its promise never rejects
  server.listen(0, '127.0.0.1', () => tell({ port: (server.address() as AddressInfo).port }));
  process.on('disconnect', () => process.exit(0));
}

// --- driver side ---------------------------------------------------------------

interface Worker {
  child: ChildProcess;
  port: number;
  builds: number;
  /** When the last build ended, ms since the epoch. */
  builtAt: number;
}

function startWorker(config: ServeConfig, core: number): Promise<Worker> {
  const [cmd, rest] = pinned(core, [process.execPath, '--import', 'tsx', self, '--serve', JSON.stringify(config)]);
  const child = spawn(cmd, rest, { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const worker: Worker = { child, port: 0, builds: 0, builtAt: 0 };
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (code) => reject(new Error(`worker exited with ${code}`)));
    child.on('message', (message: { port?: number; building?: string; built?: number }) => {
      if (message.building !== undefined) worker.builds += 1;
      if (message.built !== undefined) worker.builtAt = message.built;
      if (message.port !== undefined) {
        worker.port = message.port;
        resolve(worker);
      }
    });
  });
}

/** One GET, its latency in ms and its X-Cache. */
function get(port: number, path: string): Promise<{ ms: number; status: number; xCache: string | undefined }> {
  const sent = now();
  return new Promise((resolve, reject) => {
    http
      .get(
        { host: '127.0.0.1', port, path, agent: false, headers: { host: 'bench.example', 'accept-encoding': 'br' } },
        (res) => {
          res.resume();
          res.on('end', () =>
            resolve({
              ms: now() - sent,
              status: res.statusCode!,
              xCache: res.headers['x-cache'] as string | undefined,
            }),
          );
        },
      )
      .on('error', reject);
  });
}

/** 200 requests, 50 at a time (each lane sends its next when its last is answered), over both workers. */
async function loadOf(
  workers: Worker[],
  path: string,
): Promise<Array<{ ms: number; status: number; xCache?: string }>> {
  const lanes = 50;
  const perLane = 4;
  const results = await Promise.all(
    Array.from({ length: lanes }, async (_, lane) => {
      const mine = [];
      for (let i = 0; i < perLane; i++) mine.push(await get(workers[lane % workers.length]!.port, path));
      return mine;
    }),
  );
  return results.flat();
}

const builds = (workers: Worker[]): number => workers.reduce((n, w) => n + w.builds, 0);

async function main(): Promise<void> {
  ensureBuilt();
  const reps = quick ? 2 : 5;
  const dir = mkdtempSync(join(tmpdir(), 'kb-swr-'));
  const problems: string[] = [];
  const hitP99 = { swr: [] as number[], 'no-swr': [] as number[] };
  const expiredP99 = { swr: [] as number[], 'no-swr': [] as number[] };
  const expiredP50 = { swr: [] as number[], 'no-swr': [] as number[] };
  const buildsPerExpiry = { swr: [] as number[], 'no-swr': [] as number[] };
  const start = (mode: Mode): Promise<Worker[]> =>
    Promise.all(
      [0, 1].map((core) =>
        startWorker({ mode, sqlite: join(dir, `${mode}.sqlite`), lockDir: join(dir, `${mode}-locks`) }, core),
      ),
    );
  const modes: Record<Mode, Worker[]> = { swr: await start('swr'), 'no-swr': await start('no-swr') };
  try {
    for (let rep = 0; rep < reps; rep++) {
      const order: Mode[] = rep % 2 === 0 ? ['swr', 'no-swr'] : ['no-swr', 'swr'];
      for (const mode of order) {
        const workers = modes[mode];
        const hitPath = `/report-${rep}?ttl=600`;
        await get(workers[0]!.port, hitPath); // builds the long-lived entry
        const hits = await loadOf(workers, hitPath);
        if (hits.some((h) => h.xCache !== 'HIT')) problems.push(`${mode} rep ${rep}: the hit load was not all hits`);
        const path = `/report-${rep}?ttl=${ttlMs / 1000}`;
        await get(workers[0]!.port, path); // builds the entry that expires
        const storedAt = Math.max(...workers.map((w) => w.builtAt));
        hitP99[mode].push(
          percentile(
            hits.map((h) => h.ms),
            99,
          ),
        );
        await sleep(Math.max(0, storedAt + ttlMs + 50 - now()));
        const before = builds(workers);
        const expired = await loadOf(workers, path);
        if (expired.some((h) => h.status !== 200)) problems.push(`${mode} rep ${rep}: an expired answer was not 200`);
        const latencies = expired.map((h) => h.ms);
        expiredP99[mode].push(percentile(latencies, 99));
        expiredP50[mode].push(percentile(latencies, 50));
        await sleep(buildMs + 300); // a background refresh ends
        buildsPerExpiry[mode].push(builds(workers) - before);
      }
    }
  } finally {
    for (const w of [...modes.swr, ...modes['no-swr']]) w.child.kill();
    rmSync(dir, { recursive: true, force: true });
  }
  const rows: Row[] = [
    {
      figure: 'expired 1 s page, 200 requests (50 at a time) over 2 workers on SQLite: p99 with SWR vs a plain hit p99',
      ours: sample('expired, SWR', expiredP99.swr, 'ms'),
      peer: sample('plain hit', hitP99.swr, 'ms'),
      ratio: median(expiredP99.swr) / median(hitP99.swr),
      target: '<= 2 (ratio here is expired/hit: lower is better)',
    },
    {
      figure: 'builds per expiry with SWR, across both workers',
      ours: sample('SWR', buildsPerExpiry.swr, 'builds'),
      target: '1',
    },
    {
      figure: 'expired 1 s page, same load: p99 without SWR (waits for the rebuild) vs with SWR',
      ours: sample('SWR', expiredP99.swr, 'ms'),
      peer: sample('no SWR', expiredP99['no-swr'], 'ms'),
      ratio: median(expiredP99['no-swr']) / median(expiredP99.swr),
      note: `p50: SWR ${median(expiredP50.swr).toFixed(1)} ms, no SWR ${median(expiredP50['no-swr']).toFixed(1)} ms; builds per expiry without SWR ${median(buildsPerExpiry['no-swr'])}`,
    },
  ];
  report('Stale-while-revalidate: an expired slow page under load', rows);
  if (problems.length > 0) {
    console.error(problems.join('\n'));
    process.exitCode = 1;
  }
}

if (process.argv.includes('--serve')) {
  await serveMode(JSON.parse(process.argv[process.argv.indexOf('--serve') + 1]!) as ServeConfig);
} else if (isMain(import.meta.url)) {
  await main();
}
