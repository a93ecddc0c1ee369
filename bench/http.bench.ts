/**
 * koa-buffer over real HTTP against the usual peer stack
 * (koa-compress + koa-conditional-get + koa-etag) and against bare Koa
 * serving a precompressed Buffer (the ceiling), side by side in one run.
 * Bare Koa runs twice: handing out the bytes alone, and rendering the page
 * on every request as the application behind the other stacks does.
 *
 * Method: every server runs in its own child process pinned to core 0
 * (`taskset -c 0`), the load generator (bench/lib/load.ts: wrk, or autocannon
 * without it) runs in another pinned to core 1, 50 connections;
 * configurations alternate rep by rep (5 × 3 s each, 1 × 2 s with --quick)
 * and the median req/s is reported with its spread. The page
 * is a 50 KiB HTML document rendered afresh per request (a new string with
 * the same bytes), or with one changed number per request. A last part
 * measures the event-loop delay (p99, perf_hooks) inside the server while
 * 5 MiB pages are compressed on every request.
 *
 * Clients: br-only, gzip-only and Chrome's Accept-Encoding
 * (`gzip, deflate, br, zstd`), each measured in new server processes: a
 * Node process that served one coding and then only another serves the
 * second about a third slower than a new one (bench/cache.bench.ts), an
 * artefact of the bench that real, mixed clients do not meet. With
 * adaptive compression (the default) a repeated page is measured hot: the
 * warm-up waits until its upgraded bytes (an ETag ending in the level) are
 * served; the changing page is always cold. Bytes rows compare what each
 * stack puts on the wire.
 *
 * `--baseline <git-ref>` adds koa-buffer as it was at that commit (bench/lib/baseline.ts)
 * serving the repeated page, and a row comparing today's code with it,
 * measured in ABBA blocks of new processes (bench/lib/server-process.ts).
 *
 * A section of cache hits sends koa-buffer's own hot bytes from every
 * contender: koa-buffer inside Koa, bare Koa, front(app) before Koa, raw
 * node:http, and Varnish (gzip; bench/lib/references.ts); `--hits-only`
 * runs that section alone.
 *
 * Run: node --import tsx bench/http.bench.ts [--quick] [--hits-only] [--baseline <git-ref>]
 */
import type http from 'node:http';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
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
import { load, once, reportHttp } from './lib/load.ts';
import {
  freshProcessContender,
  serveToDriver,
  startServerProcess,
  untilHot,
  type ServerProcess,
} from './lib/server-process.ts';
import { baselinePackage, baselineRef, buildBaseline } from './lib/baseline.ts';
import { hasVarnish, rawPrecompressed, startVarnish, type Varnish } from './lib/references.ts';

const self = fileURLToPath(import.meta.url);

type Mode =
  | 'bare'
  | 'bare-rendering'
  | 'ours'
  | 'ours-nomemo'
  | 'ours-changing'
  | 'peers'
  | 'ours-5mib'
  | 'peers-5mib'
  | 'baseline'
  | 'hit'
  | 'front'
  | 'bare-same'
  | 'raw'
  | 'origin';

/** The bytes koa-buffer's hit sends, handed to the reference servers so they send exactly them (a JSON file). */
interface SameBytes {
  br: Buffer;
  gzip: Buffer;
  identity: Buffer;
}

function sameBytes(): SameBytes {
  const file = process.env.KB_BENCH_SAME_BYTES;
  if (file === undefined) throw new Error('KB_BENCH_SAME_BYTES is not set');
  const json = JSON.parse(readFileSync(file, 'utf8')) as Record<keyof SameBytes, string>;
  return {
    br: Buffer.from(json.br, 'base64'),
    gzip: Buffer.from(json.gzip, 'base64'),
    identity: Buffer.from(json.identity, 'base64'),
  };
}

// --- server side (a child process) -------------------------------------------

async function serveMode(mode: Mode): Promise<void> {
  const { default: Koa } = await import('koa');
  const app = new Koa();
  app.silent = true; // a load generator closing its connections mid-response is not news
  const big = mode.endsWith('5mib');
  const lines = htmlPage(big ? 5 * 1024 * 1024 : 50 * 1024, 42)
    .split('\n')
    .map((line) => `${line}\n`);
  let counter = 0;
  // "Rendered afresh": a new string per request, built from the template's lines.
  // The changing page differs in text the squasher keeps (a comment would be squashed away and the bytes would repeat).
  const render = (): string =>
    mode === 'ours-changing' ? `${lines.join('')}<p>request ${counter++}</p>` : lines.join('');

  if (mode === 'raw' || mode === 'origin') {
    const same = sameBytes();
    if (mode === 'raw') return void serveToDriver(rawPrecompressed(same));
    const head = ['content-type', 'text/html; charset=utf-8', 'content-length', String(same.identity.length)];
    return void serveToDriver((_req, res) => {
      res.writeHead(200, head);
      res.end(same.identity);
    });
  }
  if (mode === 'bare-same') {
    const same = sameBytes();
    app.use((ctx) => {
      const coding = ctx.get('Accept-Encoding').includes('br') ? 'br' : 'gzip';
      ctx.type = 'html';
      ctx.set('Content-Encoding', coding);
      ctx.set('Vary', 'Accept-Encoding');
      ctx.body = same[coding];
    });
    return void serveToDriver(app.callback() as http.RequestListener);
  }
  if (mode === 'hit' || mode === 'front') {
    const { buffer, front } = await builtPackage();
    const middleware = buffer({ cache: true, optimiseContent: 1 });
    app.use(middleware);
    app.use(async (ctx) => {
      if (await ctx.bufferIsCached()) return;
      ctx.body = render();
    });
    const listener = mode === 'front' ? front(app, { paths: ['/'] }) : (app.callback() as http.RequestListener);
    return void serveToDriver(listener, { 'front-hits': () => ({ hits: middleware.stats().frontHits }) });
  }

  if (mode === 'bare' || mode === 'bare-rendering') {
    useBarePrecompressed(app, render(), mode === 'bare-rendering' ? render : undefined);
  } else if (mode.startsWith('peers')) {
    const { default: compress } = await import('koa-compress');
    const { default: conditional } = await import('koa-conditional-get');
    const { default: etag } = await import('koa-etag');
    app.use(compress());
    app.use(conditional());
    app.use(etag());
    app.use((ctx) => {
      ctx.body = render();
    });
  } else {
    const { buffer } = mode === 'baseline' ? await baselinePackage() : await builtPackage();
    app.use(buffer({ optimiseContent: 1, ...(mode === 'ours-nomemo' || big ? { memoMaxSize: 0 } : {}) }));
    app.use((ctx) => {
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
  const reps = quick ? 1 : 5; // five: on a shared machine one rep in three can be a busy one
  const seconds = quick ? 2 : 3;
  if (process.argv.includes('--hits-only')) {
    const rows: Row[] = [];
    const problems: string[] = [];
    await hitsAndReferences(rows, problems, reps, seconds);
    reportHttp('HTTP: cache hits and the references beside them (ratio > 1: koa-buffer better)', rows, problems);
    return;
  }
  const modes: Mode[] = ['bare', 'bare-rendering', 'ours', 'ours-nomemo', 'ours-changing', 'peers'];
  const servers = new Map<Mode, ServerProcess>();
  /** New processes for `list`, the old ones stopped: each client coding gets its own (see the module comment). */
  const restart = async (list: readonly Mode[]): Promise<void> => {
    for (const server of servers.values()) server.child.kill();
    servers.clear();
    for (const mode of list) servers.set(mode, await startServer(mode));
  };
  const rows: Row[] = [];
  const problems: string[] = [];
  const run = (mode: Mode, headers: Record<string, string>, expect: number) => async () => {
    const result = await load(servers.get(mode)!.port, headers, seconds);
    if (result.errors > 0 || (expect === 200 && result.non2xx > 0))
      problems.push(`${mode} ${JSON.stringify(headers)}: ${result.errors} errors, ${result.non2xx} non-2xx`);
    return result.rps;
  };

  try {
    const clients = [
      ['br', 'br'],
      ['gzip', 'gzip'],
      ['chrome', 'gzip, deflate, br, zstd'],
    ] as const;
    for (const [coding, acceptEncoding] of clients) {
      const headers = { 'accept-encoding': acceptEncoding };
      await restart(modes);
      for (const mode of modes) await load(servers.get(mode)!.port, headers, 1); // warm up (JIT, memo)
      // The repeated page's hot bytes are made off the request path: measure once they are served.
      await untilHot(servers.get('ours')!.port, headers);
      const [bare, bareRendering, ours, nomemo, changing, peers] = (await alternate(
        modes.map((mode) => ({ name: `${mode} ${coding}`, run: run(mode, headers, 200) })),
        reps,
        'req/s',
      )) as [Sample, Sample, Sample, Sample, Sample, Sample];
      if (baselineRef) {
        // Today's code against the commit given, in ABBA blocks of new processes, each measured inside one
        // load run (bench/lib/server-process.ts): a regression worth catching is 5%.
        const contender = (mode: Mode) =>
          freshProcessContender(self, mode, `${mode} ${coding}`, headers, problems, async (server) => {
            if (mode === 'ours') await untilHot(server.port, headers);
          });
        const [rps] = await paired(contender('ours'), contender('baseline'), quick ? 1 : 5, [
          { unit: 'req/s', higherIsBetter: true },
          { unit: 'µs CPU/req', higherIsBetter: false },
        ]);
        rows.push(comparePaired(`50 KiB page, ${coding}, koa-buffer vs itself at ${baselineRef}`, rps!, '>= 0.95'));
      }
      rows.push(compare(`50 KiB page, ${coding}, same bytes per request (memo)`, ours, peers, true, '>= 10'));
      rows.push(compare(`50 KiB page, ${coding}, memo vs bare Koa precompressed`, ours, bare, true, '>= 0.65'));
      // Bare Koa above never renders the page; the application behind koa-buffer renders it on every request
      // (a join of 1,500 lines). With the same render on both sides, only the handling of the response differs.
      rows.push(
        compare(
          `50 KiB page, ${coding}, memo vs bare Koa precompressed, both rendering the page`,
          ours,
          bareRendering,
          true,
          '>= 0.65',
        ),
      );
      // What the render alone costs: the ceiling of the first row for any middleware, koa-buffer's included.
      rows.push(
        compare(
          `50 KiB page, ${coding}, bare Koa rendering vs bare Koa (the render's cost)`,
          bareRendering,
          bare,
          true,
        ),
      );
      // A report: the changing-body row below is the target for bodies the memo cannot help.
      // Every body new (the memo cannot help): a target for br-only clients, a report for the others.
      rows.push(compare(`50 KiB page, ${coding}, memo off`, nomemo, peers, true, coding === 'br' ? '>= 3' : undefined));
      // A gzip-only client gets gzip 6 cold, as from the peers (no cheaper level keeps the bytes at or below
      // theirs: src/encoding/coding-table.ts), so that row is a report, not a target.
      rows.push({
        ...compare(
          `50 KiB page, ${coding}, bytes change every request`,
          changing,
          peers,
          true,
          coding === 'gzip' ? undefined : '>= 4',
        ),
        ...(coding === 'gzip' ? { note: 'report row: gzip 6 cold, the level the peers use' } : {}),
      });
      rows.push(compare(`50 KiB page, ${coding}, peers vs bare Koa (ceiling)`, peers, bare, true));
      const wire: Partial<Record<Mode, Sample>> = {};
      for (const mode of ['ours', 'ours-changing', 'peers', 'bare'] as const) {
        const r = await once(servers.get(mode)!.port, headers);
        wire[mode] = { name: mode, median: r.bytes, min: r.bytes, max: r.bytes, unit: 'B' };
        rows.push({
          figure: `bytes on the wire, ${coding}, ${mode}`,
          ours: wire[mode],
          note: `Content-Encoding ${r.headers['content-encoding'] ?? 'none'}, ETag ${r.headers.etag ?? 'none'}`,
        });
      }
      rows.push({
        ...compare(`bytes, ${coding}, repeated page (hot) vs peers`, wire.ours!, wire.peers, false, '>= 1.25'),
        ...(coding === 'gzip'
          ? { note: 'out of reach for gzip: Zopfli gets 7,923 B at best (coding-table bench, "gzip floor")' }
          : {}),
      });
      rows.push(
        compare(`bytes, ${coding}, changing page (cold) vs peers`, wire['ours-changing']!, wire.peers, false, '>= 1'),
      );
      const plain = await once(servers.get('ours')!.port, {});
      if (coding === 'br')
        rows.push({
          figure: 'bytes on the wire, identity, ours (squashed)',
          ours: { name: 'ours', median: plain.bytes, min: plain.bytes, max: plain.bytes, unit: 'B' },
        });
    }

    // 304: each stack answers the tag it gave.
    const headers = { 'accept-encoding': 'br' };
    await restart(['ours', 'peers']);
    for (const mode of ['ours', 'peers'] as const) await load(servers.get(mode)!.port, headers, 1);
    await untilHot(servers.get('ours')!.port, headers);
    const oursTag = (await once(servers.get('ours')!.port, headers)).headers.etag!;
    const peersTag = (await once(servers.get('peers')!.port, headers)).headers.etag!;
    const [ours304, peers304] = (await alternate(
      [
        { name: 'ours 304', run: run('ours', { ...headers, 'if-none-match': oursTag }, 304) },
        { name: 'peers 304', run: run('peers', { ...headers, 'if-none-match': peersTag }, 304) },
      ],
      reps,
      'req/s',
    )) as [Sample, Sample];
    rows.push(compare('50 KiB page, matching If-None-Match (304)', ours304, peers304, true, '>= 1.5'));
    const check = await once(servers.get('ours')!.port, { ...headers, 'if-none-match': oursTag });
    if (check.status !== 304) problems.push(`ours did not answer 304 (${check.status})`);
  } finally {
    for (const server of servers.values()) server.child.kill();
  }

  await hitsAndReferences(rows, problems, reps, seconds);

  // Event-loop delay while 5 MiB pages are compressed on every request (memo off).
  const delays: Record<string, number[]> = { 'ours-5mib': [], 'peers-5mib': [] };
  for (const mode of ['ours-5mib', 'peers-5mib'] as const) {
    const server = await startServer(mode);
    try {
      for (let rep = 0; rep < reps; rep++) {
        await server.ask('delay-start');
        await load(server.port, { 'accept-encoding': 'br' }, seconds, 4);
        delays[mode]!.push((await server.ask('delay-stop')).p99!);
      }
    } finally {
      server.child.kill();
    }
  }
  rows.push(
    compare(
      'event-loop delay p99 while compressing 5 MiB pages (br, 4 connections)',
      sample('ours', delays['ours-5mib']!, 'ms'),
      sample('peers', delays['peers-5mib']!, 'ms'),
      false,
    ),
  );

  reportHttp(
    'HTTP: koa-buffer vs koa-compress + koa-etag + koa-conditional-get (ratio > 1: koa-buffer better)',
    rows,
    problems,
  );
}

/**
 * Cache hits against what a user could put in their place, all sending the
 * very bytes koa-buffer's hit sends (read from it once it is hot): bare
 * Koa, raw node:http, koa-buffer's front before Koa, and Varnish (gzip).
 *
 * Each client coding gets new Node processes, as in cache.bench.ts: a
 * process that served br hits and then only gzip hits serves them a third
 * slower than a new one (V8 optimised Node's stream code for the first
 * coding), which is the bench's artefact, not a cost any server pays with
 * mixed clients. Varnish is not Node, and serves gzip only: it runs once.
 */
async function hitsAndReferences(rows: Row[], problems: string[], reps: number, seconds: number): Promise<void> {
  const br = { 'accept-encoding': 'br' };
  const gzip = { 'accept-encoding': 'gzip' };
  const started: ServerProcess[] = [];
  const start = async (mode: Mode): Promise<ServerProcess> => {
    const server = await startServer(mode);
    started.push(server);
    return server;
  };
  const stop = (server: ServerProcess): void => {
    server.child.kill();
    started.splice(started.indexOf(server), 1);
  };
  const dir = mkdtempSync(join(tmpdir(), 'kb-http-bench-'));
  let varnish: Varnish | undefined;
  try {
    const source = await start('hit');
    await once(source.port, br); // the build
    await untilHot(source.port, br);
    await untilHot(source.port, gzip);
    const same = {
      br: (await once(source.port, br)).body,
      gzip: (await once(source.port, gzip)).body,
      identity: (await once(source.port, {})).body,
    };
    stop(source);
    const file = join(dir, 'same.json');
    writeFileSync(
      file,
      JSON.stringify({
        br: same.br.toString('base64'),
        gzip: same.gzip.toString('base64'),
        identity: same.identity.toString('base64'),
      }),
    );
    process.env.KB_BENCH_SAME_BYTES = file;
    if (hasVarnish) varnish = await startVarnish((await start('origin')).port);
    else problems.push('varnishd is missing: install the Debian package varnish for the Varnish reference rows');
    for (const [coding, headers] of [
      ['br', br],
      ['gzip', gzip],
    ] as const) {
      const fresh: ServerProcess[] = [];
      const servers: Partial<Record<Mode | 'varnish', { port: number }>> = {};
      for (const mode of ['hit', 'front', 'bare-same', 'raw'] as const) {
        const server = await start(mode);
        fresh.push(server);
        servers[mode] = server;
      }
      if (varnish !== undefined && coding === 'gzip') servers.varnish = varnish;
      const hit = servers.hit!.port;
      const front = servers.front!.port;
      for (const port of [hit, front]) {
        await once(port, headers); // the build
        await untilHot(port, headers);
      }
      const names = (['hit', 'bare-same', 'front', 'raw', 'varnish'] as const).filter(
        (name) => servers[name] !== undefined,
      );
      const run = (name: (typeof names)[number]) => async () => {
        const result = await load(servers[name]!.port, headers, seconds);
        if (result.errors > 0 || result.non2xx > 0)
          problems.push(`${name} ${coding}: ${result.errors} errors, ${result.non2xx} non-2xx`);
        return result.rps;
      };
      for (const name of names) await load(servers[name]!.port, headers, 1); // warm up; the front learns here
      const samples = await alternate(
        names.map((name) => ({ name: `${name} ${coding}`, run: run(name) })),
        reps,
        'req/s',
      );
      const of = (name: string): Sample => samples[names.indexOf(name as never)]!;
      rows.push(
        compare(
          `cache hit, 50 KiB page, ${coding}: koa-buffer inside Koa vs bare Koa sending the same bytes`,
          of('hit'),
          of('bare-same'),
          true,
          '>= 1.05',
        ),
      );
      rows.push(
        compare(
          `cache hit, 50 KiB page, ${coding}: front(app) vs raw node:http sending the same bytes (reference)`,
          of('front'),
          of('raw'),
          true,
          '>= 0.85',
        ),
      );
      rows.push(
        compare(`cache hit, 50 KiB page, ${coding}: front(app) vs koa-buffer inside Koa`, of('front'), of('hit'), true),
      );
      rows.push(
        compare(
          `cache hit, 50 KiB page, ${coding}: bare Koa vs raw node:http, same bytes (reference: Koa's own cost)`,
          of('bare-same'),
          of('raw'),
          true,
        ),
      );
      if (names.includes('varnish')) {
        rows.push(
          compare(
            `cache hit, 50 KiB page, gzip: front(app) vs Varnish 7.1 (reference)`,
            of('front'),
            of('varnish'),
            true,
          ),
        );
        const ours = await once(front, headers);
        const theirs = await once(varnish!.port, headers);
        rows.push(
          compare(
            'bytes, gzip hit: front(app) vs Varnish 7.1 (reference, its own gzip of the same entity)',
            { name: 'front', median: ours.bytes, min: ours.bytes, max: ours.bytes, unit: 'B' },
            { name: 'varnish', median: theirs.bytes, min: theirs.bytes, max: theirs.bytes, unit: 'B' },
            false,
          ),
        );
      }
      const hitBody = await once(hit, headers);
      const frontBody = await once(front, headers);
      if (!hitBody.body.equals(same[coding])) problems.push(`hit ${coding}: its bytes differ from the references'`);
      if (!frontBody.body.equals(hitBody.body)) problems.push(`front ${coding}: its bytes differ from the hit's`);
      const frontServer = fresh.find((server) => server.mode === 'front')!;
      const { hits } = await frontServer.ask('front-hits');
      if (!(hits! > 0)) problems.push(`the front answered no ${coding} request: its rows measured Koa`);
      for (const server of fresh) stop(server);
    }
  } finally {
    varnish?.stop();
    for (const server of started) server.child.kill();
    rmSync(dir, { recursive: true, force: true });
  }
}

if (process.argv.includes('--serve')) {
  await serveMode(process.argv[process.argv.indexOf('--serve') + 1] as Mode);
} else if (isMain(import.meta.url)) {
  await main();
}
