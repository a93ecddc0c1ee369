/**
 * Is the native MD5 as fast as node:crypto? Three questions, each side by
 * side in one run with the contenders alternating rep by rep:
 * - 1 MiB: throughput (MB/s) of `md5(buf)` and streaming `Md5` against
 *   `createHash('md5')` (target: within 10%, i.e. ratio >= 0.90);
 * - 1 KiB and 256 B: time per call (ns/op) of `md5(buf)` and `md5(string)`
 *   against `crypto.hash('md5', …)` (target: faster, ratio > 1), where the
 *   binding's call overhead is what is measured;
 * - a control row, `crypto.hash` against itself, which must come out near 1
 *   (off by more than 10%, the row says the run is rejected).
 * The twin is node:crypto plus an argument check, so its row shows that cost.
 * Run: node --import tsx bench/md5.bench.ts [--quick]
 */
import * as crypto from 'node:crypto';
import { alternate, compare, opsPerSecond, quick, report, type Row, type Sample } from './lib/harness.ts';
import { native as maybeNative, twins } from '../src/native/core.ts';
import { addonUnavailableReason } from '../src/native/binding.ts';

if (!maybeNative) {
  console.error(
    `md5 bench: the native addon is unavailable (${addonUnavailableReason}); build it with npx node-gyp rebuild`,
  );
  process.exit(1);
}
const native = maybeNative;

const reps = quick ? 3 : 9;
const budgetMs = quick ? 100 : 300;
let sink = 0; // keeps results alive so nothing is optimised away

function bytes(size: number): Buffer {
  const out = Buffer.allocUnsafe(size);
  for (let i = 0; i < size; i++) out[i] = (i * 131 + 17) & 0xff;
  return out;
}

/** Median MB/s of each contender hashing `data` whole. */
async function throughput(contenders: Record<string, (data: Buffer) => unknown>, data: Buffer): Promise<Sample[]> {
  const entries = Object.entries(contenders);
  for (const [, fn] of entries) fn(data); // warm up
  return alternate(
    entries.map(([name, fn]) => ({
      name,
      run: () =>
        (opsPerSecond(() => {
          sink ^= (fn(data) as { length: number }).length;
          return 1;
        }, budgetMs) *
          data.length) /
        1e6,
    })),
    reps,
    'MB/s',
  );
}

/** Median ns per call of each contender, 64 calls per timing. */
async function latency<T>(contenders: Record<string, (data: T) => unknown>, data: T): Promise<Sample[]> {
  const entries = Object.entries(contenders);
  for (const [, fn] of entries) for (let i = 0; i < 10_000; i++) fn(data); // warm up
  return alternate(
    entries.map(([name, fn]) => ({
      name,
      run: () =>
        1e9 /
        opsPerSecond(() => {
          for (let i = 0; i < 64; i++) sink ^= (fn(data) as { length: number }).length;
          return 64;
        }, budgetMs),
    })),
    reps,
    'ns/op',
  );
}

/** The same contender measured twice: its ratio shows the drift of this run; off by more than 10%, the run is marked rejected. */
function controlRow(figure: string, again: Sample, first: Sample): Row {
  const row = compare(figure, again, first, false, '≈ 1');
  const off = Math.abs((row.ratio ?? 1) - 1);
  row.note =
    off > 0.1
      ? `REJECTED: the control is off by ${(off * 100).toFixed(0)}%; rerun on a quieter machine`
      : 'the same call twice: drift on this machine';
  if (off > 0.1)
    console.error(`md5 bench: ${figure} off by ${(off * 100).toFixed(0)}%, the figures of this run are not reliable`);
  return row;
}

const rows: Row[] = [];
const MiB = 1 << 20;

{
  const [oneShot, streaming, peer] = await throughput(
    {
      'native md5()': (d) => native.md5(d),
      'native Md5 stream': (d) => new native.Md5().update(d).digest(),
      "createHash('md5')": (d) => crypto.createHash('md5').update(d).digest(),
    },
    bytes(MiB),
  );
  rows.push(compare('1 MiB Buffer, one-shot', oneShot!, peer, true, '>= 0.90'));
  rows.push(compare('1 MiB Buffer, streaming', streaming!, peer, true, '>= 0.90'));
}

for (const size of [1024, 256]) {
  const buffer = bytes(size);
  const [ours, twin, peer, control] = await latency(
    {
      'native md5()': (d: Buffer) => native.md5(d),
      'twin md5()': (d: Buffer) => twins.md5(d),
      "crypto.hash('md5')": (d: Buffer) => crypto.hash('md5', d),
      "crypto.hash('md5') again": (d: Buffer) => crypto.hash('md5', d),
    },
    buffer,
  );
  rows.push(compare(`${size} B Buffer`, ours!, peer, false, '> 1'));
  rows.push(compare(`${size} B Buffer, twin`, twin!, peer, false));
  rows.push(controlRow(`${size} B control`, control!, peer!));

  const text = 'é'.repeat(size / 4) + 'x'.repeat(size / 2); // size bytes of UTF-8, part multi-byte
  const [ourText, peerText] = await latency(
    { 'native md5()': (s: string) => native.md5(s), "crypto.hash('md5')": (s: string) => crypto.hash('md5', s) },
    text,
  );
  rows.push(compare(`${size} B string (UTF-8)`, ourText!, peerText, false, '> 1'));
}

if (sink === 0.5) console.log(sink);
report('MD5: native vs node:crypto (ratio > 1: native better)', rows);
