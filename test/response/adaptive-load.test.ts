/**
 * An upgrade of a 4 MiB body, running off the request path, does not block
 * the event loop (every burst of 100 concurrent small requests is answered
 * while it runs, and their p99 before and during it is reported)
 * (monitorEventLoopDelay's max, around the upgrade's start and while it
 * runs). In a file of its own: the upgrade holds the process's one upgrade
 * thread for seconds, which would hold up every other test's upgrades.
 */
import test from 'ava';
import http from 'node:http';
import { existsSync, readFileSync } from 'node:fs';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { buffer } from '../../src/middleware.ts';
import { upgradeMaxSize } from '../../src/response/upgrades.ts';
import { htmlPage, recordingLogger, serve } from '../helpers/serve.ts';

const upgraded = /^recompressed /;

/** Sends `n` GETs at once to `path`; their latencies in ms. */
function burst(port: number, path: string, n: number): Promise<number[]> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: n });
  const one = (): Promise<number> =>
    new Promise((resolve, reject) => {
      const started = process.hrtime.bigint();
      http
        .get({ host: '127.0.0.1', port, path, agent }, (res) => {
          res.resume();
          res.on('end', () => resolve(Number(process.hrtime.bigint() - started) / 1e6));
        })
        .on('error', reject);
    });
  return Promise.all(Array.from({ length: n }, one)).finally(() => agent.destroy());
}

function p99(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(0.99 * sorted.length))]!;
}

const median = (values: number[]): number => [...values].sort((a, b) => a - b)[values.length >> 1]!;

const schedstat = `/proc/self/task/${process.pid}/schedstat`;
const hasSchedstat = existsSync(schedstat);

/** CPU time of the main thread (the event loop's), in ms; 0 where the kernel does not say. */
function mainThreadCpuMs(): number {
  return hasSchedstat ? Number(readFileSync(schedstat, 'utf8').split(' ')[0]) / 1e6 : 0;
}

test('upgrading a 4 MiB body delays neither 100 concurrent small requests nor the event loop', async (t) => {
  t.timeout(240_000);
  const logger = recordingLogger();
  const trials = 3;
  // Bodies just under the size cap, one per trial: each is upgraded once.
  const bigs = Array.from({ length: trials + 1 }, (_, i) => Buffer.from(htmlPage(upgradeMaxSize - 64 * 1024, 7 + i)));
  const server = await serve(t, [
    buffer({ logger }),
    (ctx) => {
      if (ctx.path === '/small') {
        ctx.body = { ok: true }; // below minCompressSize: a plain small answer
        return;
      }
      ctx.type = 'html';
      ctx.body = bigs[Number(ctx.query.n ?? 0)];
      if (ctx.path === '/pinned') ctx.state.buffer = { adaptiveCompression: false }; // never upgraded
    },
  ]);
  /**
   * Over `ms`: the event loop's longest delay, and its longest block in CPU time of the main thread
   * (the most CPU it spent between two consecutive turns, read from the kernel's per-thread counter),
   * which, unlike the delay, does not count the time the OS gives the CPU to other processes.
   */
  const window = async (ms: number): Promise<{ max: number; busy: number }> => {
    const delay = monitorEventLoopDelay({ resolution: 1 });
    delay.enable();
    let longest = 0;
    let last = mainThreadCpuMs();
    let running = true;
    const tick = (): void => {
      const now = mainThreadCpuMs();
      longest = Math.max(longest, now - last);
      last = now;
      if (running) setImmediate(tick);
    };
    setImmediate(tick);
    await sleep(ms);
    running = false;
    delay.disable();
    return { max: delay.max / 1e6, busy: longest };
  };
  const twice = async (path: string, headers: Record<string, string>): Promise<void> => {
    await server.request(path, { headers });
    await server.request(path, { headers });
  };

  // 1. The event loop: the half second after the response that queues an upgrade (the body is copied
  // to the upgrade thread in slices, the thread starts and gets it, the bytes come back to the memo)
  // against the same half second after the same response that queues none. gzip 9 upgrades, quick, so
  // that each trial starts its own.
  const gzip = { 'accept-encoding': 'gzip' };
  const after: Array<{ max: number; busy: number }> = [];
  const without: Array<{ max: number; busy: number }> = [];
  for (let i = 0; i < trials; i++) {
    await twice('/pinned', gzip);
    without.push(await window(500));
    const done = logger.count(upgraded);
    await twice(`/big?n=${i + 1}`, gzip);
    t.is(logger.count(/^queued the upgrade/), i + 1);
    after.push(await window(500));
    const until = Date.now() + 120_000;
    while (logger.count(upgraded) === done && Date.now() < until) await sleep(50);
  }
  const show = (list: Array<{ max: number; busy: number }>, key: 'max' | 'busy'): string =>
    list.map((v) => v[key].toFixed(1)).join(', ');
  t.log(`event-loop delay max (ms), with an upgrade: ${show(after, 'max')}; without: ${show(without, 'max')}`);
  t.log(
    `longest block, main-thread CPU (ms), with an upgrade: ${show(after, 'busy')}; without: ${show(without, 'busy')}`,
  );
  // On this shared machine the OS alone delays an idle loop by 10 to 300 ms at times (measured), so the
  // delay's max measures the neighbours; the CPU the loop spends in one turn measures the upgrade.
  // The windows also hold this test's own work (its client, the collector): the loop's longest block
  // without an upgrade is what the upgrade is held to when that exceeds 5 ms; 1 ms for the reading itself.
  const longest = median(after.map((v) => v.busy));
  // The windows without an upgrade read 4.0 to 8.4 ms on a loaded run: the bound is their worst, so that
  // only a block of the upgrade's own (a 4 MiB copy in one turn costs 90 ms and more) fails.
  const allowed = Math.max(5, ...without.map((v) => v.busy)) + 1;
  t.true(longest <= allowed, `the loop's longest block was ${longest.toFixed(1)} ms of CPU (allowed ${allowed})`);
  if (!hasSchedstat) t.log('no /proc/self/task/PID/schedstat (not Linux): the CPU per turn was not measured');

  // 2. Concurrent requests while a br 11 upgrade of 4 MiB runs, against the same bursts just before.
  const rounds = 4;
  await burst(server.port, '/small', 100); // warm up
  const before: number[] = [];
  for (let i = 0; i < rounds; i++) before.push(...(await burst(server.port, '/small', 100)));
  const br = { 'accept-encoding': 'br' };
  const done = logger.count(upgraded);
  await twice('/big?n=0', br);
  t.is(logger.count(/^queued the upgrade of \d+ bytes to br level 11/), 1);
  await sleep(200); // under way
  const during: number[] = [];
  for (let i = 0; i < rounds; i++) during.push(...(await burst(server.port, '/small', 100)));
  const { max: idle } = await window(500);
  t.is(logger.count(upgraded), done, 'the upgrade was still running while measured');
  const [p99Before, p99During] = [p99(before), p99(during)];
  t.log(`p99 of 100 concurrent small requests: ${p99Before.toFixed(1)} ms before, ${p99During.toFixed(1)} ms during`);
  t.log(`event-loop delay max while it ran, idle: ${idle.toFixed(1)} ms`);
  // Latency is a speed, and speeds are measured in bench/ (the test suite shares two cores with other
  // test files, which move a p99 by 4x either way): here it is reported, and the upgrade's cost to the
  // loop is held by the CPU-per-turn check above.
  t.true(Number.isFinite(p99During) && during.length === rounds * 100, 'every request during the upgrade was answered');
});
