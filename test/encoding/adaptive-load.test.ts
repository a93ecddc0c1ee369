/**
 * An upgrade of a 4 MiB body, running off the request path, does not block
 * the event loop (its longest block of its own, around the upgrade's start
 * and while it runs, against the same windows without one), and every burst
 * of 100 concurrent small requests is answered while it runs (their p99
 * before and during it is reported). In a file of its own: the upgrade holds the process's one upgrade
 * thread for seconds, which would hold up every other test's upgrades.
 */
import test from 'ava';
import http from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { buffer } from '../../src/buffer.ts';
import { upgradeMaxSize } from '../../src/encoding/upgrades.ts';
import { hasSchedstat, LoopBlocks, type LoopWindow } from '../../support/loop-blocks.ts';
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
  /** Over `ms`: the event loop's longest delay, and its longest block of its own (support/loop-blocks.ts). */
  const window = async (ms: number): Promise<LoopWindow> => {
    const watch = new LoopBlocks();
    watch.start();
    await sleep(ms);
    return watch.stop();
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
  const after: LoopWindow[] = [];
  const without: LoopWindow[] = [];
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
  const show = (list: LoopWindow[], key: 'max' | 'busy'): string => list.map((v) => v[key].toFixed(1)).join(', ');
  t.log(`event-loop delay max (ms), with an upgrade: ${show(after, 'max')}; without: ${show(without, 'max')}`);
  t.log(`the loop's longest block (ms), with an upgrade: ${show(after, 'busy')}; without: ${show(without, 'busy')}`);
  // On this shared machine the OS alone delays an idle loop by 10 to 300 ms at times (measured), so the
  // delay's max measures the neighbours; the loop's own block measures the upgrade. The windows also
  // hold this test's own work (its client, the collector): the longest block without an upgrade, plus
  // 1 ms, is what the upgrade is held to when that exceeds 5 ms. Measured: 1.2 to 2.7 ms with an
  // upgrade, 0.5 to 1.6 ms without, under two CPU hogs too; a 4 MiB structured clone in one turn reads
  // 32 ms.
  const longest = median(after.map((v) => v.busy));
  const allowed = Math.max(5, ...without.map((v) => v.busy + 1));
  t.true(longest <= allowed, `the loop's longest block was ${longest.toFixed(1)} ms (allowed ${allowed.toFixed(1)})`);
  if (!hasSchedstat) t.log("no /proc/self/task/PID/schedstat (not Linux): the loop's blocks were not measured");

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
