/**
 * Files from koa-static: koa-buffer against the usual peer stack
 * (koa-compress + koa-conditional-get + koa-etag), side by side in one run,
 * for br and gzip: requests a second, bytes on the wire, and the event-loop
 * delay p99 inside the server while it compresses. The file is a 5 MiB HTML
 * document (index.html, so koa-static answers `/`, the path the load
 * generator asks for); both stacks compress it as a stream at the same
 * levels (br 4, gzip 6). A last part streams a generated 1 GiB body through
 * koa-buffer once and reports the server's RSS growth, which must stay flat.
 *
 * Method as in http.bench.ts: servers in child processes pinned to core 0,
 * the load generator on core 1, 4 connections (each request compresses
 * 5 MiB), configurations alternating rep by rep (5 × 3 s, 1 × 2 s with
 * --quick), medians with their spread. Requests a second are the bytes
 * received a second over the bytes of one response (each stack sends the
 * same bytes): whole responses, about 18 a run, would move by 5% with one
 * response more or less.
 *
 * Run: node --import tsx bench/static.bench.ts [--quick]
 */
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { alternate, compare, isMain, quick, sample, type Row, type Sample } from './lib/harness.ts';
import { htmlPage } from '../support/pages.ts';
import { builtPackage, ensureBuilt } from './lib/package.ts';
import { load, once, reportHttp } from './lib/load.ts';
import { serveToDriver, startServerProcess, type ServerProcess } from './lib/server-process.ts';

const self = fileURLToPath(import.meta.url);

type Mode = 'ours' | 'peers' | 'ours-gib';

/** Bytes the 1 GiB part streams. */
const gib = 1024 * 1024 * 1024;

// --- server side (a child process) -------------------------------------------

async function serveMode(mode: Mode, dir: string): Promise<void> {
  const { default: Koa } = await import('koa');
  const { default: serveStatic } = await import('koa-static');
  const app = new Koa();
  app.silent = true;
  if (mode === 'peers') {
    const { default: compress } = await import('koa-compress');
    const { default: conditional } = await import('koa-conditional-get');
    const { default: etag } = await import('koa-etag');
    app.use(compress());
    app.use(conditional());
    app.use(etag());
  } else {
    const { buffer } = await builtPackage();
    app.use(buffer());
  }
  if (mode === 'ours-gib') {
    const chunk = Buffer.from(htmlPage(64 * 1024, 7).slice(0, 64 * 1024));
    app.use((ctx) => {
      let sent = 0;
      ctx.type = 'html';
      ctx.body = new Readable({
        read() {
          sent += chunk.length;
          this.push(sent <= gib ? chunk : null);
        },
      });
    });
  } else {
    app.use(serveStatic(dir));
  }

  let peakRss = 0;
  let sampler: NodeJS.Timeout | undefined;
  // Koa catches its own errors: its promise never rejects.
  serveToDriver(app.callback() as http.RequestListener, {
    'rss-start': () => {
      peakRss = process.memoryUsage().rss;
      sampler = setInterval(() => (peakRss = Math.max(peakRss, process.memoryUsage().rss)), 20);
      return { rss: peakRss };
    },
    'rss-stop': () => {
      clearInterval(sampler);
      return { peak: peakRss };
    },
  });
}

// --- driver side ---------------------------------------------------------------

const startServer = (mode: Mode, dir: string): Promise<ServerProcess> => startServerProcess(self, mode, [dir]);

/** One GET read to the end, discarding the bytes; how many arrived. */
function drain(port: number, headers: Record<string, string>): Promise<number> {
  return new Promise((resolve, reject) => {
    http
      .get({ host: '127.0.0.1', port, headers, agent: false }, (res) => {
        let bytes = 0;
        res.on('data', (chunk: Buffer) => (bytes += chunk.length));
        res.on('end', () => resolve(bytes));
        res.on('error', reject);
      })
      .on('error', reject);
  });
}

async function main(): Promise<void> {
  ensureBuilt();
  const reps = quick ? 1 : 5;
  const seconds = quick ? 2 : 3;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'koa-buffer-static-bench-'));
  fs.writeFileSync(path.join(dir, 'index.html'), htmlPage(5 * 1024 * 1024, 42));
  const rows: Row[] = [];
  const problems: string[] = [];
  const servers = { ours: await startServer('ours', dir), peers: await startServer('peers', dir) };
  try {
    for (const coding of ['br', 'gzip'] as const) {
      const headers = { 'accept-encoding': coding };
      const delays: Record<'ours' | 'peers', number[]> = { ours: [], peers: [] };
      const [oursOnce, peersOnce] = [await once(servers.ours.port, headers), await once(servers.peers.port, headers)];
      const sizes = { ours: oursOnce.bytes, peers: peersOnce.bytes };
      // Requests a second from the bytes received: a run of 3 s completes about 18 responses, so a count of
      // whole responses moves by 5% with one response more or less; the bytes count the one still arriving.
      const run = (mode: 'ours' | 'peers') => async () => {
        const server = servers[mode];
        await server.ask('delay-start');
        const result = await load(server.port, headers, seconds, 4);
        delays[mode].push((await server.ask('delay-stop')).p99!);
        if (result.errors > 0 || result.non2xx > 0)
          problems.push(`${mode} ${coding}: ${result.errors} errors, ${result.non2xx} non-2xx`);
        return result.bytesPerSecond > 0 ? result.bytesPerSecond / sizes[mode] : result.rps;
      };
      for (const mode of ['ours', 'peers'] as const) await load(servers[mode].port, headers, 1, 4); // warm up
      const [ours, peers] = (await alternate(
        [
          { name: `ours ${coding}`, run: run('ours') },
          { name: `peers ${coding}`, run: run('peers') },
        ],
        reps,
        'req/s',
      )) as [Sample, Sample];
      rows.push(compare(`5 MiB file via koa-static, ${coding}: requests a second`, ours, peers, true, '>= 1.0'));
      rows.push(
        compare(
          `5 MiB file via koa-static, ${coding}: event-loop delay p99`,
          sample('ours', delays.ours, 'ms'),
          sample('peers', delays.peers, 'ms'),
          false,
          '>= 1.0',
        ),
      );
      for (const [name, r] of [
        ['ours', oursOnce],
        ['peers', peersOnce],
      ] as const) {
        if (r.headers['content-encoding'] !== coding) problems.push(`${name} sent ${r.headers['content-encoding']}`);
      }
      rows.push(
        compare(
          `5 MiB file via koa-static, ${coding}: bytes on the wire`,
          { name: 'ours', median: oursOnce.bytes, min: oursOnce.bytes, max: oursOnce.bytes, unit: 'B' },
          { name: 'peers', median: peersOnce.bytes, min: peersOnce.bytes, max: peersOnce.bytes, unit: 'B' },
          false,
          '>= 1.0',
        ),
      );
    }
  } finally {
    servers.ours.child.kill();
    servers.peers.child.kill();
  }

  // 1 GiB generated stream through koa-buffer, once: the server's RSS must stay flat.
  const streaming = await startServer('ours-gib', dir);
  try {
    const before = (await streaming.ask('rss-start')).rss!;
    const started = Date.now();
    const bytes = await drain(streaming.port, { 'accept-encoding': 'gzip' });
    const peak = (await streaming.ask('rss-stop')).peak!;
    const seconds = (Date.now() - started) / 1000;
    const growth = (peak - before) / (1024 * 1024);
    rows.push({
      figure: '1 GiB generated stream, gzip: server RSS growth',
      ours: { name: 'ours', median: growth, min: growth, max: growth, unit: 'MiB' },
      target: '< 64',
      note: `${bytes} compressed bytes in ${seconds.toFixed(1)} s, RSS ${(before / 2 ** 20).toFixed(0)} → peak ${(peak / 2 ** 20).toFixed(0)} MiB`,
    });
    if (growth >= 64) problems.push(`RSS grew by ${growth.toFixed(1)} MiB streaming 1 GiB`);
  } finally {
    streaming.child.kill();
    fs.rmSync(dir, { recursive: true, force: true });
  }

  reportHttp(
    'Static files: koa-buffer vs koa-compress + koa-etag + koa-conditional-get over koa-static (ratio > 1: koa-buffer better)',
    rows,
    problems,
  );
}

if (process.argv.includes('--serve')) {
  const at = process.argv.indexOf('--serve');
  await serveMode(process.argv[at + 1] as Mode, process.argv[at + 2]!);
} else if (isMain(import.meta.url)) {
  await main();
}
