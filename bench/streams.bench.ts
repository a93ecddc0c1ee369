/**
 * Streams that stay live, and a static file kept compressed: koa-buffer
 * against koa-compress (with koa-conditional-get and koa-etag, the usual
 * peer stack) and bare Koa, side by side in one run.
 *
 * 1. A page React 19 streams (examples/react-stream/page.ts: the shell at
 *    once, a Suspense boundary's content 300 ms later): the time from the
 *    app's write of the shell to the client holding it decoded, and the
 *    bytes of the whole page. The server stamps the moment React writes the
 *    shell (`performance.timeOrigin + performance.now()`, the same clock in
 *    every process of this machine) in a response header; the client stamps
 *    the moment its decoded text holds the shell's last element, decoding
 *    synchronously as the bytes come, as a browser does. Bare Koa sends the
 *    page uncompressed (identity).
 * 2. A 10 MiB generated HTML stream (a Readable that pushes 64 KiB slices
 *    of a page as they are read): requests a second (bytes received a
 *    second over the bytes of one response, as in static.bench.ts; 4
 *    connections), bytes, and the event-loop delay p99 inside the server.
 *    Both stacks run the same compressor at the same level over the same
 *    stream, so the ratios sit within a few percent of 1: they are the
 *    medians of ABBA blocks of new server processes (lib/harness.ts
 *    `paired`), each warmed for a second, then measured, with the server's
 *    CPU time per response (from /proc) beside the requests a second.
 * 3. Server-sent events, 1,000 events of 200 B written 2 ms apart: bytes on
 *    the wire against identity, and how long each event took from its write
 *    to the client holding it decoded (each event carries its write stamp).
 * 4. A 100 KB stylesheet through koa-static (its `index` set to the file,
 *    so `/`, the path the load generator asks for, is the stylesheet),
 *    requests a second and the server's CPU time per request (from /proc,
 *    over each load run), against koa-compress (which recompresses it for
 *    every request), against koa-static alone (no compression: 100 KB a
 *    response), and against bare Koa sending the bytes koa-buffer sends
 *    (br 11 or gzip 9, what its memo settles on): from memory, and from
 *    koa-static's precompressed `style.css.br` and `.gz` beside the file.
 *    koa-buffer is measured once its memo holds those bytes. 50 connections. On a busy machine a server that needs little CPU
 *    may not saturate its share of the core; its CPU per request still says
 *    what each request costs it.
 *
 * Method as in http.bench.ts: every server in a child process pinned to
 * core 0, the load generator (wrk) on core 1, contenders alternating rep by
 * rep, medians with their spread. The sequential parts (1 and 3) read one
 * response at a time in this process. Clients send Chrome's Accept-Encoding
 * (`gzip, deflate, br, zstd`) unless a row names a coding; on Node.js 20
 * koa-compress has no zstd and answers br, as koa-buffer does.
 *
 * By default the run is short (about a minute): parts 1 and 4, the
 * stylesheet for br clients only and without the precompressed files on
 * disk, 5 pages and 3 load runs of 2 s per contender. `--full` runs every
 * part, both codings, every contender, 11 pages and 5 load runs of 3 s
 * (about six minutes); `--only` picks parts by name.
 *
 * `--baseline <git-ref>` adds koa-buffer as it was at that commit
 * (bench/lib/baseline.ts) to the stylesheet part, alternating with the
 * others.
 *
 * Run: node --import tsx bench/streams.bench.ts [--quick | --full] [--only page,big,events,css] [--baseline <git-ref>]
 */
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { PassThrough, Readable, type Transform } from 'node:stream';
import { fileURLToPath } from 'node:url';
import zlib from 'node:zlib';
import {
  alternate,
  compare,
  comparePaired,
  isMain,
  median,
  paired,
  percentile,
  quick,
  sample,
  type Row,
  type Sample,
} from './lib/harness.ts';
import { htmlPage } from '../support/pages.ts';
import { streamPage } from '../examples/react-stream/page.ts';
import { builtPackage, ensureBuilt } from './lib/package.ts';
import { baselinePackage, baselineRef, buildBaseline } from './lib/baseline.ts';
import { load, once, reportHttp } from './lib/load.ts';
import { cpuMicros, serveToDriver, startServerProcess, type ServerProcess } from './lib/server-process.ts';

const self = fileURLToPath(import.meta.url);

type Stack = 'ours' | 'peers' | 'bare';
/**
 * A server's stack: the three compared, bare Koa with koa-static sending precompressed files (`files`) or
 * the file as it is (`plain`), or koa-buffer at `--baseline`.
 */
type ServerStack = Stack | 'baseline' | 'files' | 'plain';
type Route = 'page' | 'big' | 'events' | 'css';

const chrome = 'gzip, deflate, br, zstd';
/** Every part, both codings, more and longer reps: the short default keeps the whole run under a minute. */
const full = process.argv.includes('--full');
/** The parts to run: those `--only` names (comma-separated), else all with `--full`, else the page and the stylesheet. */
const only = process.argv.includes('--only')
  ? process.argv[process.argv.indexOf('--only') + 1]!.split(',')
  : full
    ? undefined
    : ['page', 'css'];
const included = (part: Route): boolean => only === undefined || only.includes(part);
/** When the React page's Suspense boundary resolves: long beside a shell's few ms, short enough to read a page often. */
const lateMs = 300;
const bigBytes = 10 * 1024 * 1024;
const eventCount = 1000;
const eventBytes = 200;
const eventGapMs = 2;
const cssBytes = 100 * 1000;

/**
 * A deterministic stylesheet of about `size` bytes, as a site's bundle has
 * them: rules for many components, each with its own mix of properties,
 * lengths and colours, so it compresses about as real CSS does (br 11 to a
 * fifth or so), not to a repeated line.
 */
export function styleSheet(size: number): string {
  let state = 0x9e3779b9;
  const next = (n: number): number => {
    state ^= state << 13;
    state >>>= 0;
    state ^= state >>> 17;
    state ^= state << 5;
    state >>>= 0;
    return state % n;
  };
  const blocks = ['card', 'menu', 'grid', 'form', 'list', 'modal', 'tabs', 'badge', 'table', 'toast', 'hero', 'nav'];
  const elements = ['item', 'title', 'body', 'footer', 'icon', 'label', 'link', 'header'];
  const states = ['', '', '', ':hover', ':focus-visible', '--active', '--disabled', ' > a'];
  const colour = (): string => `#${(next(0xffffff) | 0x101010).toString(16).padStart(6, '0')}`;
  const length = (): string => [`${next(48)}px`, `${next(40) / 8}rem`, `${next(100)}%`, '0', 'auto'][next(5)]!;
  const props: Array<() => string> = [
    () => `display: ${['flex', 'grid', 'block', 'inline-flex', 'none'][next(5)]}`,
    () => `padding: ${length()} ${length()}`,
    () => `margin: ${length()} ${length()} ${length()}`,
    () => `color: ${colour()}`,
    () => `background-color: ${colour()}`,
    () => `border: ${next(4)}px ${['solid', 'dashed', 'dotted'][next(3)]} ${colour()}`,
    () => `border-radius: ${next(16)}px`,
    () => `font-size: ${(0.625 + next(16) / 16).toFixed(3)}rem`,
    () => `line-height: ${(1 + next(10) / 10).toFixed(1)}`,
    () => `width: ${length()}`,
    () => `gap: ${length()}`,
    () => `transition: ${['color', 'opacity', 'transform', 'background-color'][next(4)]} ${next(500)}ms ease-in-out`,
    () => `box-shadow: 0 ${next(8)}px ${next(24)}px rgba(0, 0, 0, 0.${next(9) + 1})`,
    () => `z-index: ${next(1000)}`,
  ];
  const parts = ['*, *::before, *::after { box-sizing: border-box; }\n'];
  let total = parts[0]!.length;
  for (let i = 0; total < size - 100; i++) {
    const selector = `.${blocks[next(blocks.length)]}__${elements[next(elements.length)]}-${i}${states[next(states.length)]}`;
    const body = Array.from({ length: 2 + next(6) }, () => `  ${props[next(props.length)]!()};`).join('\n');
    const rule = `${selector} {\n${body}\n}\n`;
    parts.push(rule);
    total += rule.length;
  }
  return parts.join('');
}

/** Event `i` of the SSE stream, exactly `eventBytes` long, carrying the moment it is written. */
function sseEvent(i: number, symbols: readonly string[]): string {
  const stamp = (performance.timeOrigin + performance.now()).toFixed(3);
  const head = `id: ${i}\nevent: quote\ndata: {"seq":${i},"t":${stamp},"symbol":"${symbols[i % symbols.length]}","price":${(100 + ((i * 37) % 500) / 100).toFixed(2)},"volume":${(i * 7919) % 10000},"note":"`;
  const tail = '"}\n\n';
  return head + 'steady trading, no news'.repeat(10).slice(0, eventBytes - head.length - tail.length) + tail;
}

/** What koa-buffer's memo settles on for a file in br: quality 11 with the size hint. */
function brotli11(bytes: Buffer): Buffer {
  const { BROTLI_PARAM_QUALITY, BROTLI_PARAM_SIZE_HINT } = zlib.constants;
  return zlib.brotliCompressSync(bytes, {
    params: { [BROTLI_PARAM_QUALITY]: 11, [BROTLI_PARAM_SIZE_HINT]: bytes.length },
  });
}

// --- server side (a child process) -------------------------------------------

async function serveMode(stack: ServerStack, route: Route, dir: string): Promise<void> {
  const { default: Koa } = await import('koa');
  const app = new Koa();
  app.silent = true;
  if (stack === 'peers') {
    const { default: compress } = await import('koa-compress');
    const { default: conditional } = await import('koa-conditional-get');
    const { default: etag } = await import('koa-etag');
    app.use(compress());
    app.use(conditional());
    app.use(etag());
  } else if (stack === 'ours' || stack === 'baseline') {
    const { buffer } = stack === 'baseline' ? await baselinePackage() : await builtPackage();
    app.use(buffer());
  }
  if (route === 'page') {
    app.use(async (ctx) => {
      let shellAt = 0;
      const page = await streamPage(lateMs, () => (shellAt = performance.timeOrigin + performance.now()));
      ctx.set('X-Shell-At', shellAt.toFixed(3));
      ctx.type = 'html';
      ctx.body = page.body;
    });
  } else if (route === 'big') {
    const page = Buffer.from(htmlPage(bigBytes, 11));
    app.use((ctx) => {
      let at = 0;
      ctx.type = 'html';
      ctx.body = new Readable({
        read() {
          const chunk = page.subarray(at, at + 64 * 1024);
          at += chunk.length;
          this.push(chunk.length > 0 ? chunk : null);
        },
      });
    });
  } else if (route === 'events') {
    const symbols = ['KOA', 'BUF', 'ZST', 'BRT', 'GZP'];
    app.use((ctx) => {
      const body = new PassThrough();
      let i = 0;
      let timer: NodeJS.Timeout | undefined;
      const tick = (): void => {
        if (i === eventCount) return void body.end();
        body.write(sseEvent(i++, symbols));
        timer = setTimeout(tick, eventGapMs);
      };
      body.once('close', () => clearTimeout(timer));
      ctx.type = 'text/event-stream';
      ctx.set('Cache-Control', 'no-cache');
      ctx.body = body;
      tick();
    });
  } else if (stack === 'bare') {
    // The bytes koa-buffer's memo settles on for this file: br 11 and gzip 9, each with the size hint.
    const css = fs.readFileSync(path.join(dir, 'style.css'));
    const pre = { br: brotli11(css), gzip: zlib.gzipSync(css, { level: 9 }) };
    app.use((ctx) => {
      const coding = ctx.get('Accept-Encoding').includes('br') ? 'br' : 'gzip';
      ctx.type = 'css';
      ctx.set('Content-Encoding', coding);
      ctx.body = pre[coding];
    });
  } else {
    const { default: serveStatic } = await import('koa-static');
    // koa-send sends style.css.br or .gz in place of the file when it exists; only `files` has them.
    app.use(serveStatic(stack === 'files' ? path.join(dir, 'pre') : dir, { index: 'style.css' }));
  }
  serveToDriver(app.callback() as http.RequestListener);
}

// --- driver side ---------------------------------------------------------------

const now = (): number => performance.timeOrigin + performance.now();

function decoder(coding: string | undefined): Transform | undefined {
  if (coding === 'br') return zlib.createBrotliDecompress();
  if (coding === 'gzip') return zlib.createGunzip();
  if (coding === 'deflate') return zlib.createInflate();
  if (coding === undefined || coding === 'identity') return undefined;
  throw new Error(`the bench cannot decode ${coding}`);
}

/** One GET read to its end: the coding, the bytes of the body as sent, and what `watch` made of the decoded text. */
function read(
  port: number,
  headers: Record<string, string>,
  watch: (text: string, response: http.IncomingMessage) => void,
): Promise<{ coding: string | undefined; bytes: number }> {
  return new Promise((resolve, reject) => {
    http
      .get({ host: '127.0.0.1', port, headers, agent: false }, (response) => {
        const coding = response.headers['content-encoding'];
        let bytes = 0;
        response.on('data', (chunk: Buffer) => (bytes += chunk.length));
        const decoded = decoder(coding);
        const text = decoded ? response.pipe(decoded) : response;
        text.setEncoding('utf8');
        text.on('data', (chunk: string) => watch(chunk, response));
        text.on('end', () => resolve({ coding, bytes }));
        text.on('error', reject);
        response.on('error', reject);
      })
      .on('error', reject);
  });
}

/**
 * Decodes what has come of a response so far, synchronously, as far as it
 * goes: a browser decodes on its network thread as bytes arrive, where
 * Node's zlib streams would add a hop through this process's thread pool
 * to the time measured.
 */
function decodedSoFar(coding: string | undefined, wire: Buffer): string {
  const { BROTLI_OPERATION_FLUSH, Z_SYNC_FLUSH } = zlib.constants;
  if (coding === 'br') return zlib.brotliDecompressSync(wire, { finishFlush: BROTLI_OPERATION_FLUSH }).toString();
  if (coding === 'gzip') return zlib.gunzipSync(wire, { finishFlush: Z_SYNC_FLUSH }).toString();
  if (coding === undefined || coding === 'identity') return wire.toString();
  throw new Error(`the bench cannot decode ${coding}`);
}

/** The React page once: ms from React's write of the shell to the shell decoded here, and the page's bytes. */
function pageOnce(port: number, headers: Record<string, string>): Promise<{ shellMs: number; bytes: number }> {
  return new Promise((resolve, reject) => {
    http
      .get({ host: '127.0.0.1', port, headers, agent: false }, (response) => {
        const coding = response.headers['content-encoding'];
        const wire: Buffer[] = [];
        let bytes = 0;
        let shellMs = Number.NaN;
        response.on('data', (chunk: Buffer) => {
          bytes += chunk.length;
          if (!Number.isNaN(shellMs)) return;
          wire.push(chunk);
          if (decodedSoFar(coding, Buffer.concat(wire)).includes('id="shell-end"'))
            shellMs = now() - Number(response.headers['x-shell-at']);
        });
        response.on('end', () => resolve({ shellMs, bytes }));
        response.on('error', reject);
      })
      .on('error', reject);
  });
}

/**
 * The SSE stream once: its bytes, each event's ms from its write to decoded
 * here, and how many events were decoded before the server wrote the next
 * one (the last: within a gap of its write). A compressor that holds an
 * event back until more come scores none; on a busy machine the scheduling
 * of two processes alone costs identity a few.
 */
async function eventsOnce(
  port: number,
  headers: Record<string, string>,
): Promise<{ bytes: number; delays: number[]; beforeNext: number }> {
  let pending = '';
  const written: number[] = [];
  const decodedAt: number[] = [];
  const { bytes } = await read(port, headers, (chunk) => {
    const at = now();
    pending += chunk;
    let end: number;
    while ((end = pending.indexOf('\n\n')) >= 0) {
      written.push(Number(/"t":([\d.]+)/.exec(pending.slice(0, end))![1]));
      decodedAt.push(at);
      pending = pending.slice(end + 2);
    }
  });
  const delays = written.map((w, i) => decodedAt[i]! - w);
  const beforeNext = written.filter((w, i) => decodedAt[i]! <= (written[i + 1] ?? w + eventGapMs)).length;
  return { bytes, delays, beforeNext };
}

/** Asks until the server sends `target` bytes (koa-buffer's memo: its smallest bytes are made after the second request), at most a minute, or once for a target of 0; the last size. */
async function untilSmallest(port: number, headers: Record<string, string>, target: number): Promise<number> {
  let bytes = 0;
  for (let waited = 0; waited < 60_000; waited += 100) {
    bytes = (await once(port, headers)).bytes;
    if (bytes === target || target === 0) break;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  return bytes;
}

const fixed = (name: string, value: number, unit: string): Sample => ({
  name,
  median: value,
  min: value,
  max: value,
  unit,
});

async function main(): Promise<void> {
  ensureBuilt();
  if (baselineRef) process.env.KB_BENCH_BASELINE_DIR = buildBaseline(baselineRef);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'koa-buffer-streams-bench-'));
  fs.writeFileSync(path.join(dir, 'style.css'), styleSheet(cssBytes));
  const rows: Row[] = [];
  const problems: string[] = [];
  const stacks = ['ours', 'peers', 'bare'] as const;
  const started: ServerProcess[] = [];
  const start = async (stack: ServerStack, route: Route): Promise<ServerProcess> => {
    const server = await startServerProcess(self, stack, [route, dir]);
    started.push(server);
    return server;
  };
  const names: Record<ServerStack, string> = {
    ours: 'koa-buffer',
    peers: 'koa-compress',
    bare: 'bare Koa',
    files: 'bare Koa + koa-static precompressed',
    plain: 'koa-static, no compression',
    baseline: `koa-buffer at ${baselineRef}`,
  };
  try {
    // 1. The React page, read one at a time.
    if (included('page')) {
      const [ours, peers, bare] = await Promise.all(stacks.map((stack) => start(stack, 'page')));
      const servers = { ours: ours!, peers: peers!, bare: bare! };
      for (const [label, headers] of [
        ['br (Chrome)', { 'accept-encoding': chrome }],
        ['gzip', { 'accept-encoding': 'gzip' }],
      ] as const) {
        const shell: Record<Stack, number[]> = { ours: [], peers: [], bare: [] };
        const bytes: Record<Stack, number[]> = { ours: [], peers: [], bare: [] };
        const reps = quick ? 3 : full ? 11 : 5;
        for (const stack of stacks) await pageOnce(servers[stack].port, headers); // warm up
        await alternate(
          stacks.map((stack) => ({
            name: stack,
            run: async () => {
              const result = await pageOnce(servers[stack].port, headers);
              shell[stack].push(result.shellMs);
              bytes[stack].push(result.bytes);
              return result.shellMs;
            },
          })),
          reps,
          'ms',
        );
        const ms = (stack: Stack) => sample(names[stack], shell[stack], 'ms');
        const over = median(shell.ours) - median(shell.bare);
        rows.push({
          ...compare(
            `React stream, ${label}: shell written → decoded by the client, vs identity`,
            ms('ours'),
            ms('bare'),
            false,
          ),
          target: '<= identity + 5 ms',
          note: `${over >= 0 ? '+' : ''}${over.toFixed(1)} ms over identity, ${reps} pages each`,
        });
        rows.push({
          ...compare(`React stream, ${label}: shell written → decoded by the client`, ms('ours'), ms('peers'), false),
          note: `koa-compress holds the shell until the page ends, ${lateMs} ms later`,
        });
        const size = (stack: Stack) => sample(names[stack], bytes[stack], 'B');
        rows.push({
          ...compare(`React stream, ${label}: bytes of the whole page`, size('ours'), size('peers'), false, '>= 1.0'),
          note: `identity ${median(bytes.bare)} B`,
        });
      }
    }

    // 2. A 10 MiB generated HTML stream under load: two stacks doing the same work within a few percent, so
    // measured in ABBA blocks of new server processes (bench/README.md says why long-lived ones misled).
    if (included('big')) {
      const seconds = quick ? 2 : 3;
      for (const coding of ['br', 'gzip'] as const) {
        const headers = { 'accept-encoding': coding };
        const sizes = new Map<Stack, number>();
        const contender = (stack: 'ours' | 'peers') => ({
          name: `${names[stack]} ${coding}`,
          run: async (): Promise<number[]> => {
            const server = await startServerProcess(self, stack, ['big', dir]);
            try {
              if (!sizes.has(stack)) sizes.set(stack, (await once(server.port, headers)).bytes);
              await load(server.port, headers, 1, 4); // warm up
              await server.ask('delay-start');
              const cpu0 = cpuMicros(server.child.pid!);
              const result = await load(server.port, headers, seconds, 4);
              const cpu1 = cpuMicros(server.child.pid!);
              const { p99 } = await server.ask('delay-stop');
              if (result.errors > 0 || result.non2xx > 0)
                problems.push(`${stack} 10 MiB ${coding}: ${result.errors} errors, ${result.non2xx} non-2xx`);
              // Requests a second from the bytes received: a run completes a dozen responses or so.
              const rps = result.bytesPerSecond / sizes.get(stack)!;
              const cpu =
                cpu0 !== undefined && cpu1 !== undefined ? (cpu1 - cpu0) / 1000 / (rps * seconds) : Number.NaN;
              return [rps, p99!, cpu];
            } finally {
              server.child.kill();
            }
          },
        });
        const [rps, delay, cpu] = await paired(contender('ours'), contender('peers'), quick ? 1 : 4, [
          { unit: 'req/s', higherIsBetter: true },
          { unit: 'ms', higherIsBetter: false },
          { unit: 'ms', higherIsBetter: false },
        ]);
        const throughput = comparePaired(`10 MiB generated HTML stream, ${coding}: requests a second`, rps!, '>= 1.0');
        rows.push({
          ...throughput,
          note: `${throughput.note}; server CPU ${cpu!.a.median.toFixed(0)} against ${cpu!.b.median.toFixed(0)} ms a response (${cpu!.ratio.median.toFixed(2)}×)`,
        });
        rows.push(
          compare(
            `10 MiB generated HTML stream, ${coding}: bytes on the wire`,
            fixed('koa-buffer', sizes.get('ours')!, 'B'),
            fixed('koa-compress', sizes.get('peers')!, 'B'),
            false,
            '>= 1.0',
          ),
        );
        rows.push(comparePaired(`10 MiB generated HTML stream, ${coding}: event-loop delay p99`, delay!, '>= 1.0'));
      }
    }

    // 3. Server-sent events, read one stream at a time.
    if (included('events')) {
      const servers = {
        ours: await start('ours', 'events'),
        peers: await start('peers', 'events'),
        bare: await start('bare', 'events'),
      };
      const headers = { 'accept-encoding': chrome };
      const reps = quick ? 1 : 3;
      const runs: Record<Stack, Array<Awaited<ReturnType<typeof eventsOnce>>>> = { ours: [], peers: [], bare: [] };
      await alternate(
        stacks.map((stack) => ({
          name: stack,
          run: async () => {
            const result = await eventsOnce(servers[stack].port, headers);
            if (result.delays.length !== eventCount) problems.push(`${stack} SSE: ${result.delays.length} events read`);
            runs[stack].push(result);
            return result.bytes;
          },
        })),
        reps,
        'B',
      );
      const bytes = (stack: Stack) =>
        sample(
          names[stack],
          runs[stack].map((r) => r.bytes),
          'B',
        );
      const p99 = (stack: Stack) =>
        sample(
          names[stack],
          runs[stack].map((r) => percentile(r.delays, 99)),
          'ms',
        );
      const p50 = (stack: Stack) => median(runs[stack].map((r) => median(r.delays))).toFixed(1);
      const beforeNext = (stack: Stack) => `${median(runs[stack].map((r) => r.beforeNext))}/${eventCount}`;
      const share = median(runs.ours.map((r) => r.bytes)) / median(runs.bare.map((r) => r.bytes));
      rows.push({
        ...compare(
          `SSE, ${eventCount} events of ${eventBytes} B, br: bytes on the wire, vs identity`,
          bytes('ours'),
          bytes('bare'),
          false,
          '>= 3.33',
        ),
        note: `${share.toFixed(3)}× the identity bytes (target at most 0.3×)`,
      });
      rows.push(
        compare(
          `SSE, ${eventCount} events of ${eventBytes} B, br: bytes on the wire`,
          bytes('ours'),
          bytes('peers'),
          false,
        ),
      );
      rows.push({
        ...compare(
          `SSE, ${eventCount} events: write → decoded by the client, p99, vs identity`,
          p99('ours'),
          p99('bare'),
          false,
        ),
        note: `p50 ${p50('ours')} and ${p50('bare')} ms; decoded before the next write: ${beforeNext('ours')} and ${beforeNext('bare')}`,
      });
      rows.push({
        ...compare(`SSE, ${eventCount} events: write → decoded by the client, p99`, p99('ours'), p99('peers'), false),
        note: `koa-compress p50 ${p50('peers')} ms; decoded before the next write: ${beforeNext('peers')}`,
      });
    }

    // 4. A 100 KB stylesheet through koa-static.
    if (included('css')) {
      const css = fs.readFileSync(path.join(dir, 'style.css'));
      const pre = path.join(dir, 'pre');
      fs.mkdirSync(pre);
      fs.writeFileSync(path.join(pre, 'style.css'), css);
      fs.writeFileSync(path.join(pre, 'style.css.br'), brotli11(css));
      fs.writeFileSync(path.join(pre, 'style.css.gz'), zlib.gzipSync(css, { level: 9 }));
      const contenders = [
        'ours',
        'peers',
        'plain',
        'bare',
        ...(full ? ['files' as const] : []),
        ...(baselineRef ? ['baseline' as const] : []),
      ] as const;
      const servers = new Map<ServerStack, ServerProcess>();
      const reps = quick ? 1 : full ? 5 : 3;
      const seconds = full ? 3 : 2;
      for (const coding of full ? (['br', 'gzip'] as const) : (['br'] as const)) {
        const headers = { 'accept-encoding': coding };
        // New processes for each coding: a Node process switched from one coding to another serves the
        // second about a third slower than a new one (bench/cache.bench.ts), which no mixed traffic meets.
        for (const server of servers.values()) {
          server.child.kill();
          started.splice(started.indexOf(server), 1);
        }
        const processes = await Promise.all(contenders.map((stack) => start(stack, 'css')));
        contenders.forEach((stack, i) => servers.set(stack, processes[i]!));
        const bareBytes = (await once(servers.get('bare')!.port, headers)).bytes;
        const bytes = new Map<ServerStack, number>();
        for (const stack of contenders)
          bytes.set(
            stack,
            await untilSmallest(
              servers.get(stack)!.port,
              headers,
              stack === 'peers' || stack === 'plain' ? 0 : bareBytes,
            ),
          );
        for (const stack of ['ours', 'files', 'baseline'] as const)
          if (bytes.has(stack) && bytes.get(stack) !== bareBytes)
            problems.push(`stylesheet ${coding}: ${names[stack]} sent ${bytes.get(stack)} B, bare Koa ${bareBytes} B`);
        for (const stack of contenders) await load(servers.get(stack)!.port, headers, 1); // warm up
        const micros = new Map<ServerStack, number[]>(contenders.map((stack) => [stack, []]));
        const measured = await alternate(
          contenders.map((stack) => ({
            name: `${names[stack]} ${coding}`,
            run: async () => {
              const server = servers.get(stack)!;
              const cpu0 = cpuMicros(server.child.pid!);
              const result = await load(server.port, headers, seconds);
              const cpu1 = cpuMicros(server.child.pid!);
              if (cpu0 !== undefined && cpu1 !== undefined && result.total > 0)
                micros.get(stack)!.push((cpu1 - cpu0) / result.total);
              if (result.errors > 0 || result.non2xx > 0)
                problems.push(`${stack} stylesheet ${coding}: ${result.errors} errors, ${result.non2xx} non-2xx`);
              return result.rps;
            },
          })),
          reps,
          'req/s',
        );
        const rps = new Map(contenders.map((stack, i) => [stack as ServerStack, measured[i]!]));
        const cpu = (stack: ServerStack): number => median(micros.get(stack)!);
        const cpuNote = (other: ServerStack): string =>
          `server CPU ${cpu('ours').toFixed(0)} against ${cpu(other).toFixed(0)} µs a request (${(cpu(other) / cpu('ours')).toFixed(2)}×)`;
        const figure = `100 KB stylesheet via koa-static, ${coding}: requests a second`;
        rows.push({
          ...compare(figure, rps.get('ours')!, rps.get('peers')!, true, '>= 10'),
          note: `${bytes.get('ours')} B against ${bytes.get('peers')} B; ${cpuNote('peers')}`,
        });
        rows.push({
          ...compare(`${figure}, vs no compression`, rps.get('ours')!, rps.get('plain')!, true, '>= 0.9'),
          note: `${bytes.get('ours')} B against ${bytes.get('plain')} B; ${cpuNote('plain')}`,
        });
        rows.push({
          ...compare(
            `${figure}, vs the same bytes precompressed in memory`,
            rps.get('ours')!,
            rps.get('bare')!,
            true,
            '>= 0.9',
          ),
          note: cpuNote('bare'),
        });
        if (full)
          rows.push({
            ...compare(
              `${figure}, vs the same bytes precompressed on disk (koa-static's .br/.gz)`,
              rps.get('ours')!,
              rps.get('files')!,
              true,
              '>= 0.9',
            ),
            note: cpuNote('files'),
          });
        if (baselineRef)
          rows.push({
            ...compare(`${figure}, koa-buffer vs itself at ${baselineRef}`, rps.get('ours')!, rps.get('baseline')!),
            note: cpuNote('baseline'),
          });
      }
    }
  } finally {
    for (const server of started) server.child.kill();
    fs.rmSync(dir, { recursive: true, force: true });
  }

  reportHttp(
    'Streams and static files: koa-buffer vs koa-compress + koa-etag + koa-conditional-get and bare Koa (ratio > 1: koa-buffer better)',
    rows,
    problems,
  );
}

if (process.argv.includes('--serve')) {
  const at = process.argv.indexOf('--serve');
  await serveMode(process.argv[at + 1] as ServerStack, process.argv[at + 2] as Route, process.argv[at + 3]!);
} else if (isMain(import.meta.url)) {
  await main();
}
