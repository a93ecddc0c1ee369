/**
 * A server-side cache hit of a 50 KiB HTML page over real HTTP: koa-buffer
 * (`cache: true`, a hit replayed, compressed from the representation memo,
 * ETag and Last-Modified) against bare Koa serving a precompressed Buffer
 * (the ceiling) and against koa-cash (its best case: `compression: true`,
 * an in-memory store), for a br client and a gzip client, side by side in
 * one run.
 *
 * Method: every server runs in its own child process pinned to core 0
 * (`taskset -c 0`), the load generator (bench/lib/load.ts: wrk, or autocannon
 * without it) in another pinned to core 1, 50 connections; configurations
 * alternate rep by rep (9 × 2 s each, 1 × 2 s with --quick) and the median
 * req/s is reported with its spread. KB_BENCH_VERBOSE=1 prints every rep,
 * with its process and CPU time. A second bare server is the control
 * row: it must come out within 10% of the first, or the run is marked
 * rejected (the machine was too busy to compare).
 *
 * Each configuration runs in three server processes (one with --quick),
 * the reps taking them in turn. One process measures that process: V8 can
 * settle, at random, into a state in which Node's own per-request code
 * (the tick objects of process.nextTick) takes a slow path on every call,
 * and a server that did served a third fewer requests than its twin for as
 * long as it ran.
 *
 * Each client coding gets new processes. A koa-buffer process that had
 * served br hits for a minute and a half, then only gzip hits, served the
 * gzip hits a third slower than a new process (bench runs of 2026-11-30,
 * either order): V8 had optimised Node's stream code for the first coding,
 * and afterwards created Node's tick objects through its runtime (perf:
 * DefineKeyedOwnPropertyInLiteral, MigrateToMap under process.nextTick). A
 * process that serves both codings from its first request does not slow
 * down, and real clients come mixed, so the switch is the bench's artefact.
 *
 * Requests a second measure only what the load generator can send: with
 * autocannon on one core the client saturates first and squeezes every
 * ratio toward 1 (koa-cash then even "beats" bare Koa). So each run also
 * reads the server's own CPU time (utime + stime from /proc) and reports
 * CPU microseconds per request, the server's cost whatever the client.
 *
 * `--baseline <git-ref>` adds koa-buffer as it was at that commit (bench/lib/baseline.ts)
 * and rows comparing today's code with it, measured in ABBA blocks of their
 * own after the other configurations (bench/lib/harness.ts `paired`).
 *
 * Run: node --import tsx bench/cache.bench.ts [--quick] [--baseline <git-ref>]
 */
import type http from 'node:http';
import { fileURLToPath } from 'node:url';
import {
  alternate,
  compare,
  comparePaired,
  isMain,
  paired,
  quick,
  sample,
  type Row,
  type Sample,
} from './lib/harness.ts';
import { useBarePrecompressed } from './lib/bare.ts';
import { htmlPage } from '../support/pages.ts';
import { builtPackage, ensureBuilt } from './lib/package.ts';
import { generator, load, once, reportHttp } from './lib/load.ts';
import {
  cpuMicros,
  freshProcessContender,
  serveToDriver,
  startServerProcess,
  untilHot,
  type ServerProcess,
} from './lib/server-process.ts';
import { baselinePackage, baselineRef, buildBaseline } from './lib/baseline.ts';

const self = fileURLToPath(import.meta.url);

type Mode = 'bare' | 'bare-control' | 'ours' | 'koa-cash' | 'baseline';

/**
 * The configurations alternated, in the order measureCoding reads their samples back; `--baseline REF`
 * adds that commit's koa-buffer, compared with today's in blocks of new processes of their own.
 */
const modes: readonly Mode[] = ['bare', 'ours', 'koa-cash', 'bare-control'];

// --- server side (a child process) -------------------------------------------

async function serveMode(mode: Mode): Promise<void> {
  const { default: Koa } = await import('koa');
  const app = new Koa();
  app.silent = true;
  const lines = htmlPage(50 * 1024, 42)
    .split('\n')
    .map((line) => `${line}\n`);
  // "Rendered": a new string per build, as a template engine would make it.
  const render = (): string => lines.join('');

  if (mode === 'bare' || mode === 'bare-control') {
    useBarePrecompressed(app, render());
  } else if (mode === 'koa-cash') {
    // koa-cash ships no types; this is the part of its API the bench uses.
    type Cash = (options: {
      compression: boolean;
      get(key: string): Promise<unknown>;
      set(key: string, value: object): Promise<void>;
    }) => import('koa').Middleware;
    const { default: cash } = (await import('koa-cash' as string)) as { default: Cash };
    const { LRUCache } = await import('lru-cache');
    const lru = new LRUCache<string, object>({ max: 1000 });
    app.use(
      cash({
        compression: true,
        get: async (key: string) => lru.get(key),
        set: async (key: string, value: object) => {
          lru.set(key, value);
        },
      }),
    );
    app.use(async (ctx) => {
      if (await (ctx as unknown as { cashed(): Promise<boolean> }).cashed()) return;
      ctx.type = 'html';
      ctx.body = render();
    });
  } else {
    const { buffer } = mode === 'baseline' ? await baselinePackage() : await builtPackage();
    app.use(buffer({ cache: true }));
    app.use(async (ctx) => {
      if (await ctx.bufferIsCached()) return;
      ctx.type = 'html';
      ctx.body = render();
    });
  }

  serveToDriver(app.callback() as http.RequestListener); // Koa catches its own errors: its promise never rejects
}

// --- driver side ---------------------------------------------------------------

const startServer = (mode: Mode): Promise<ServerProcess> => startServerProcess(self, mode);

async function main(): Promise<void> {
  ensureBuilt();
  if (baselineRef) process.env.KB_BENCH_BASELINE_DIR = buildBaseline(baselineRef);
  const processes = quick ? 1 : 3;
  // Each process three times, two seconds each: on this shared machine a rep can lose a third of its
  // requests to a neighbour's burst, and many short reps outvote bursts better than a few long ones.
  const reps = quick ? 1 : 3 * processes;
  const seconds = 2;
  console.log(`load generator: ${generator}`);
  const rows: Row[] = [];
  const problems: string[] = [];
  for (const coding of ['br', 'gzip'] as const) {
    // New processes for each client coding: see the header comment.
    const servers = new Map<Mode, ServerProcess[]>();
    try {
      for (const mode of modes) {
        const started = [];
        for (let i = 0; i < processes; i++) started.push(await startServer(mode));
        servers.set(mode, started);
      }
      rows.push(...(await measureCoding(coding, servers, { processes, reps, seconds }, problems)));
    } finally {
      for (const started of servers.values()) for (const server of started) server.child.kill();
    }
  }
  reportHttp(
    'Cache hit: koa-buffer vs bare Koa (precompressed) and koa-cash (ratio > 1: koa-buffer better)',
    rows,
    problems,
  );
}

/** The rows of one client coding, measured on `servers` (each mode's processes take the reps in turn). */
async function measureCoding(
  coding: 'br' | 'gzip',
  servers: Map<Mode, ServerProcess[]>,
  { processes, reps, seconds }: { processes: number; reps: number; seconds: number },
  problems: string[],
): Promise<Row[]> {
  const headers = { 'accept-encoding': coding };
  const rows: Row[] = [];
  const cpu = new Map<Mode, number[]>();
  const turns = new Map<Mode, number>();
  /** One load run on the mode's next process: its req/s and the server's CPU µs per request. */
  const measure = async (mode: Mode): Promise<{ rps: number; micros: number | undefined }> => {
    const turn = turns.get(mode) ?? 0;
    turns.set(mode, turn + 1);
    const server = servers.get(mode)![turn % processes]!;
    const pid = server.child.pid!;
    const before = cpuMicros(pid);
    const result = await load(server.port, headers, seconds);
    const after = cpuMicros(pid);
    const micros =
      before !== undefined && after !== undefined && result.total > 0 ? (after - before) / result.total : undefined;
    if (process.env.KB_BENCH_VERBOSE === '1')
      console.error(
        `${mode} ${coding} p${turn % processes} pid ${pid}: ${result.rps.toFixed(0)} req/s ${micros?.toFixed(1) ?? '?'} µs`,
      );
    if (result.errors > 0 || result.non2xx > 0)
      problems.push(`${mode} ${JSON.stringify(headers)}: ${result.errors} errors, ${result.non2xx} non-2xx`);
    return { rps: result.rps, micros };
  };
  const run = (mode: Mode) => async () => {
    const { rps, micros } = await measure(mode);
    if (micros !== undefined) cpu.set(mode, [...(cpu.get(mode) ?? []), micros]);
    return rps;
  };
  // Warm up: the first request builds the cache entry, the rest warm the JIT and the memo. Twice: the
  // end of a load run resets its connections mid-response, which is new to the JIT too, and after a
  // single warm-up run every server, bare Koa's too, served its first rep a fifth slower than the next.
  for (const warmUp of quick ? [1] : [2, 1])
    for (const mode of modes) for (const server of servers.get(mode)!) await load(server.port, headers, warmUp);
  for (const server of servers.get('ours')!) {
    // A cache entry is hot from its second hit: its smallest encoding is made off the request path.
    // Measure once it is served (an ETag ending in the level, e.g. "…-br11").
    await untilHot(server.port, headers);
    const oursHeaders = await once(server.port, headers);
    if (oursHeaders.headers['x-cache'] !== 'HIT')
      problems.push(`ours did not answer from the cache (${coding}): X-Cache ${oursHeaders.headers['x-cache']}`);
  }
  const [bare, ours, cash, control] = (await alternate(
    modes.map((mode) => ({ name: `${mode} ${coding}`, run: run(mode) })),
    reps,
    'req/s',
  )) as [Sample, Sample, Sample, Sample];
  rows.push(
    compare(
      `cache hit, 50 KiB page, ${coding} client: koa-buffer vs bare Koa precompressed`,
      ours,
      bare,
      true,
      '>= 0.8',
    ),
  );
  rows.push(
    compare(
      `cache hit, 50 KiB page, ${coding} client: koa-buffer vs koa-cash`,
      ours,
      cash,
      true,
      coding === 'br' ? '>= 1.7' : '>= 1.2',
    ),
  );
  const cpuOf = (mode: Mode): Sample | undefined => {
    const values = cpu.get(mode);
    return values === undefined ? undefined : sample(`${mode} ${coding}`, values, 'µs CPU/req');
  };
  const [cpuOurs, cpuBare, cpuCash] = [cpuOf('ours'), cpuOf('bare'), cpuOf('koa-cash')];
  if (cpuOurs && cpuBare && cpuCash) {
    rows.push(
      compare(
        `server CPU per request, ${coding} client: koa-buffer vs bare Koa precompressed`,
        cpuOurs,
        cpuBare,
        false,
        '>= 0.8',
      ),
    );
    rows.push(
      compare(
        `server CPU per request, ${coding} client: koa-buffer vs koa-cash`,
        cpuOurs,
        cpuCash,
        false,
        coding === 'br' ? '>= 1.7' : '>= 1.2',
      ),
    );
  }
  if (baselineRef) {
    // Today's code against the commit given, in ABBA blocks of their own (bench/lib/harness.ts `paired`), each run
    // on a new process measured inside one load run (bench/lib/server-process.ts): a regression worth catching is 5%.
    const contender = (mode: Mode) =>
      freshProcessContender(self, mode, `${mode} ${coding}`, headers, problems, async (server) => {
        // Hot bytes first for today's code, as on every other row; the first request stores the entry.
        if (mode === 'ours') await untilHot(server.port, headers);
        else await once(server.port, headers);
      });
    const [rps, micros] = await paired(contender('ours'), contender('baseline'), quick ? 1 : 6, [
      { unit: 'req/s', higherIsBetter: true },
      { unit: 'µs CPU/req', higherIsBetter: false },
    ]);
    const against = `koa-buffer vs itself at ${baselineRef}`;
    rows.push(comparePaired(`cache hit, ${coding} client: ${against}`, rps!, '>= 0.95'));
    if (Number.isFinite(micros!.ratio.median))
      rows.push(comparePaired(`server CPU per request, ${coding} client: ${against}`, micros!, '>= 0.95'));
  }
  const drift = control.median / bare.median;
  rows.push({
    ...compare(`control, ${coding}: bare Koa vs a second bare Koa`, control, bare, true, '0.9–1.1'),
    note: drift < 0.9 || drift > 1.1 ? 'REJECTED: drift over 10%, the machine was too busy' : 'within 10%',
  });
  const wire: Partial<Record<Mode, Sample>> = {};
  for (const mode of ['ours', 'koa-cash', 'bare'] as const) {
    const r = await once(servers.get(mode)![0]!.port, headers);
    wire[mode] = { name: mode, median: r.bytes, min: r.bytes, max: r.bytes, unit: 'B' };
    rows.push({
      figure: `bytes on the wire, ${coding} client, ${mode}`,
      ours: wire[mode],
      note: `Content-Encoding ${r.headers['content-encoding'] ?? 'none'}, ETag ${r.headers.etag ?? 'none'}`,
    });
  }
  rows.push(
    compare(`bytes, ${coding} client, cache hit (hot) vs koa-cash`, wire.ours!, wire['koa-cash'], false, '>= 1.25'),
  );
  rows.push(
    compare(
      `bytes, ${coding} client, cache hit (hot) vs bare Koa precompressed`,
      wire.ours!,
      wire.bare,
      false,
      '>= 1.25',
    ),
  );
  return rows;
}

if (process.argv.includes('--serve')) {
  await serveMode(process.argv[process.argv.indexOf('--serve') + 1] as Mode);
} else if (isMain(import.meta.url)) {
  await main();
}
