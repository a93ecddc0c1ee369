/**
 * Where should compression stop being synchronous? For each coding at its
 * default level and each body size, measures the synchronous call (which
 * blocks the event loop for its whole duration) and the asynchronous path
 * (node:zlib on the threadpool; zstd in slices, yielding between them), and prints the largest size
 * whose synchronous call stays under the budget. `src/encoding/compress.ts`
 * takes its `syncLimit` from this. Run:
 *   node --import tsx bench/compress-threshold.bench.ts [--quick]
 */
import { median, quick, report, sample, type Row } from './lib/harness.ts';
import { htmlPage } from '../support/pages.ts';
import { compressIn, syncLimit } from '../src/encoding/compress.ts';
import { defaultLevels } from '../src/http/codings.ts';
import type { Coding } from '../src/http/negotiate.ts';

/** The longest a request may hold the event loop for one compression. */
const budgetMs = 1;
const sizes = [4, 16, 32, 48, 64, 96, 128, 192, 256, 384, 512, 1024].map((k) => k * 1024);
const reps = quick ? 5 : 15;

const syncCall = (coding: Coding) => (b: Buffer) => compressIn('sync', b, coding, defaultLevels[coding]);
const asyncCall = (coding: Coding) => (b: Buffer) => compressIn('async', b, coding, defaultLevels[coding]);

async function timeAsync(fn: () => Promise<unknown>): Promise<number> {
  const start = process.hrtime.bigint();
  await fn();
  return Number(process.hrtime.bigint() - start) / 1e6;
}

const rows: Row[] = [];
const table: string[] = ['coding  size KiB  sync ms (blocks the loop)  async ms (wall)'];
for (const coding of ['br', 'gzip', 'zstd'] as const) {
  let largestUnderBudget = 0;
  for (const size of sizes) {
    const body = Buffer.from(htmlPage(size, size));
    await syncCall(coding)(body); // warm up
    const syncMs: number[] = [];
    const asyncMs: number[] = [];
    for (let i = 0; i < reps; i++) {
      syncMs.push(await timeAsync(() => syncCall(coding)(body)));
      asyncMs.push(await timeAsync(() => asyncCall(coding)(body)));
    }
    if (median(syncMs) <= budgetMs) largestUnderBudget = size;
    table.push(
      `${coding.padEnd(6)}  ${String(size / 1024).padStart(8)}  ${median(syncMs).toFixed(3).padStart(24)}  ${median(asyncMs).toFixed(3).padStart(15)}`,
    );
    if (size === 64 * 1024 || size === 1024 * 1024) {
      rows.push({
        figure: `${coding} ${size / 1024} KiB, sync vs async`,
        ours: sample(`${coding} sync`, syncMs, 'ms'),
        peer: sample(`${coding} async`, asyncMs, 'ms'),
        ratio: median(asyncMs) / median(syncMs),
      });
    }
  }
  rows.push({
    figure: `${coding}: largest size whose sync call stays under ${budgetMs} ms`,
    ours: {
      name: 'measured',
      median: largestUnderBudget / 1024,
      min: largestUnderBudget / 1024,
      max: largestUnderBudget / 1024,
      unit: 'KiB',
    },
    note: `syncLimit in compress.ts: ${syncLimit[coding] / 1024} KiB`,
  });
}
console.log(table.join('\n'));
report('Sync/async compression threshold (default levels, generated HTML)', rows);
