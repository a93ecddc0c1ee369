/**
 * What a hot upgrade costs the requests around it: the p99 latency of 100
 * concurrent small requests while a 4 MiB body is being recompressed at br
 * 11 off the request path, against the same bursts with no upgrade running,
 * and the event loop's longest block meanwhile (adaptive compression,
 * src/encoding/upgrades.ts; the targets: p99 within 2× of without, no block
 * over 5 ms).
 *
 * Method: the koa-buffer server runs in a child process pinned to core 0
 * (`taskset -c 0`), the upgrade thread with it, so the niced thread and the
 * event loop share one core, the hardest case; the requests come from this
 * process over loopback, 100 at once on kept-alive sockets, four bursts a
 * window. Windows alternate rep by rep, each "during" window with a new 4
 * MiB body (each is upgraded once): first half a second with no requests,
 * from the response that queued the upgrade (the body is copied to the
 * thread in slices, the thread gets it), then the bursts; the run checks
 * the upgrade was still under way when they ended. The "without" windows
 * have the same quiet half second. Inside the server, each window reads the event-loop
 * delay (monitorEventLoopDelay's max) and the loop's longest block of its
 * own (support/loop-blocks.ts), which, unlike the delay, does not count the
 * time the OS gives the core to the other processes of this shared machine.
 *
 * Run: node --import tsx bench/upgrade-latency.bench.ts [--quick]
 */
import http from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { compare, isMain, percentile, quick, sample, type Row } from './lib/harness.ts';
import { htmlPage } from '../support/pages.ts';
import { builtPackage, ensureBuilt } from './lib/package.ts';
import { reportHttp } from './lib/load.ts';
import { loopWatchCommands } from '../support/loop-blocks.ts';
import { serveToDriver, startServerProcess, type ServerProcess } from './lib/server-process.ts';

const self = fileURLToPath(import.meta.url);
const reps = quick ? 2 : 5;
const burstSize = 100;
const burstsPerWindow = 4;

// --- server side (a child process) -------------------------------------------

async function serve(): Promise<void> {
  const { default: Koa } = await import('koa');
  const { buffer } = await builtPackage();
  const { upgradeMaxSize } = await import('../src/encoding/upgrades.ts');
  const app = new Koa();
  app.silent = true;
  // Bodies just under the size cap, one per rep: each is upgraded once.
  const bigs = Array.from({ length: reps }, (_, i) => Buffer.from(htmlPage(upgradeMaxSize - 64 * 1024, 7 + i)));
  app.use(buffer({}));
  app.use((ctx) => {
    if (ctx.path === '/small') {
      ctx.body = { ok: true }; // below minCompressSize: a plain small answer
      return;
    }
    ctx.type = 'html';
    ctx.body = bigs[Number(ctx.query.n ?? 0)];
  });

  serveToDriver(app.callback() as http.RequestListener, loopWatchCommands());
}

// --- driver side ---------------------------------------------------------------

type Server = ServerProcess;

const startServer = (): Promise<Server> => startServerProcess(self, 'upgrade');

const agent = new http.Agent({ keepAlive: true, maxSockets: burstSize });

/** One request: its latency in ms and its ETag. */
function request(port: number, path: string, method = 'GET', headers = {}): Promise<{ ms: number; etag: string }> {
  return new Promise((resolve, reject) => {
    const started = process.hrtime.bigint();
    http
      .request({ host: '127.0.0.1', port, path, method, headers, agent }, (res) => {
        res.resume();
        res.on('end', () =>
          resolve({ ms: Number(process.hrtime.bigint() - started) / 1e6, etag: String(res.headers.etag ?? '') }),
        );
      })
      .on('error', reject)
      .end();
  });
}

/** The server's loop over `ms` with no requests. */
async function quiet(server: Server, ms: number): Promise<{ max: number; busy: number }> {
  await server.ask('watch-start');
  await sleep(ms);
  const { max, busy } = await server.ask('watch-stop');
  return { max: max!, busy: busy! };
}

/** Latencies of `burstsPerWindow` bursts of `burstSize` concurrent small requests, and the server's loop meanwhile. */
async function window(server: Server): Promise<{ latencies: number[]; max: number; busy: number }> {
  await server.ask('watch-start');
  const latencies: number[] = [];
  for (let i = 0; i < burstsPerWindow; i++) {
    const burst = await Promise.all(Array.from({ length: burstSize }, () => request(server.port, '/small')));
    latencies.push(...burst.map((r) => r.ms));
  }
  const { max, busy } = await server.ask('watch-stop');
  return { latencies, max: max!, busy: busy! };
}

const br = { 'accept-encoding': 'br' };
const upgradedTag = /-br11"$/;

async function main(): Promise<void> {
  ensureBuilt();
  const server = await startServer();
  const problems: string[] = [];
  const p99 = { without: [] as number[], during: [] as number[] };
  const loopMax = { without: [] as number[], during: [] as number[] };
  const busy = { without: [] as number[], during: [] as number[] };
  const quietBusy = { without: [] as number[], during: [] as number[] };
  const upgradeSeconds: number[] = [];
  try {
    for (let i = 0; i < 3; i++)
      await Promise.all(Array.from({ length: burstSize }, () => request(server.port, '/small'))); // warm up
    for (let rep = 0; rep < reps; rep++) {
      quietBusy.without.push((await quiet(server, 500)).busy);
      const without = await window(server);
      p99.without.push(percentile(without.latencies, 99));
      loopMax.without.push(without.max);
      busy.without.push(without.busy);

      // The second sighting of a new 4 MiB body queues its br 11 upgrade, once that response is sent.
      const big = `/big?n=${rep}`;
      await request(server.port, big, 'GET', br);
      await request(server.port, big, 'GET', br);
      const queued = Date.now();
      quietBusy.during.push((await quiet(server, 500)).busy);
      const during = await window(server);
      if (upgradedTag.test((await request(server.port, big, 'HEAD', br)).etag))
        problems.push(`rep ${rep}: the upgrade ended before its window did; raise the body size`);
      p99.during.push(percentile(during.latencies, 99));
      loopMax.during.push(during.max);
      busy.during.push(during.busy);
      // Wait for the upgrade to end, so the next "without" window has none running.
      while (!upgradedTag.test((await request(server.port, big, 'HEAD', br)).etag)) {
        if (Date.now() - queued > 300_000) throw new Error('the upgrade did not end within 5 minutes');
        await sleep(250);
      }
      upgradeSeconds.push((Date.now() - queued) / 1000);
    }
  } finally {
    agent.destroy();
    server.child.kill();
  }
  const rows: Row[] = [
    compare(
      `p99 of ${burstSize} concurrent small requests: during a 4 MiB br 11 upgrade vs without (lower is better)`,
      sample('during', p99.during, 'ms'),
      sample('without', p99.without, 'ms'),
      false,
      '>= 0.5',
    ),
    compare(
      'event-loop delay max: during the upgrade vs without (the OS counts here too)',
      sample('during', loopMax.during, 'ms'),
      sample('without', loopMax.without, 'ms'),
      false,
    ),
    {
      ...compare(
        "event loop's longest block of its own, no requests: the half second after queueing vs without",
        sample('during', quietBusy.during, 'ms'),
        sample('without', quietBusy.without, 'ms'),
        false,
        'during <= 5 ms',
      ),
      note: Number.isNaN(quietBusy.during[0]) ? 'no /proc/self/task/PID/schedstat: not measured' : 'the upgrade alone',
    },
    {
      ...compare(
        "event loop's longest block of its own, in the bursts: during the upgrade vs without",
        sample('during', busy.during, 'ms'),
        sample('without', busy.without, 'ms'),
        false,
      ),
      note: 'a burst of 100 requests is parsed in one turn: this is the burst, the same with or without',
    },
    {
      figure: 'a 4 MiB br 11 upgrade, from queued to served (niced thread, one core shared with the requests)',
      ours: sample('upgrade', upgradeSeconds, 's'),
    },
  ];
  reportHttp('Hot upgrade under load: 100 concurrent small requests while a 4 MiB body is upgraded', rows, problems);
}

if (process.argv.includes('--serve')) {
  await serve();
} else if (isMain(import.meta.url)) {
  await main();
}
