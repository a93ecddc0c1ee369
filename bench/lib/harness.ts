/**
 * The measuring kit every benchmark shares: alternate the contenders rep by
 * rep (so drift on a shared machine hits them alike), report medians with
 * their spread, ratios pair by pair, and collect rows for bench/results.
 */
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export interface Sample {
  /** e.g. 'squash, native'. */
  name: string;
  /** Median of the reps, in `unit`. */
  median: number;
  /** Lowest and highest rep. */
  min: number;
  max: number;
  unit: string;
}

export interface Row {
  /** What is measured, e.g. 'squash throughput over the fixture corpus'. */
  figure: string;
  ours: Sample;
  peer?: Sample;
  /** ours / peer, oriented so that > 1 means koa-buffer is better. */
  ratio?: number;
  /** The issue's target, e.g. '>= 20'. */
  target?: string;
  note?: string;
}

export const quick = process.argv.includes('--quick') || process.env.KB_BENCH_QUICK === '1';

export function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

export function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

export function sample(name: string, values: number[], unit: string): Sample {
  return { name, median: median(values), min: Math.min(...values), max: Math.max(...values), unit };
}

/**
 * Runs `fn` repeatedly for about `ms` milliseconds and returns operations per
 * second. `fn` returns how many operations it did (so a batch counts as many).
 */
export function opsPerSecond(fn: () => number, ms: number): number {
  let ops = 0;
  const start = process.hrtime.bigint();
  const deadline = start + BigInt(Math.round(ms * 1e6));
  let now = start;
  while (now < deadline) {
    ops += fn();
    now = process.hrtime.bigint();
  }
  return ops / (Number(now - start) / 1e9);
}

/**
 * Alternates the contenders for `reps` rounds, each measured by `measure`,
 * and returns one Sample each. Order is rotated every round.
 */
export async function alternate(
  contenders: Array<{ name: string; run: () => number | Promise<number> }>,
  reps: number,
  unit: string,
): Promise<Sample[]> {
  const results = contenders.map(() => [] as number[]);
  for (let rep = 0; rep < reps; rep++) {
    for (let i = 0; i < contenders.length; i++) {
      const index = (i + rep) % contenders.length;
      results[index]!.push(await contenders[index]!.run());
    }
  }
  return contenders.map((c, i) => sample(c.name, results[i]!, unit));
}

/** One contender of {@link paired}: each run measures several figures at once (say req/s and CPU µs). */
export interface PairedContender {
  name: string;
  run: () => Promise<number[]>;
}

/** A figure measured by {@link paired}: its unit, and whether a higher value is better. */
export interface PairedFigure {
  unit: string;
  higherIsBetter: boolean;
}

/**
 * Compares two contenders in ABBA blocks: `a`, `b`, `b`, `a`, each block
 * giving one ratio per figure ((a₁ + a₂) / (b₁ + b₂), oriented so that > 1
 * means `a` is better). A shared machine's capacity drifts over seconds (a
 * neighbour's burst lowers every contender measured meanwhile); a ratio taken
 * within a block cancels a drift that is linear over the block, where
 * medians of reps seconds apart do not. The ratio reported is the median of
 * the blocks'.
 *
 * @returns per figure: `a`'s and `b`'s reps, and the blocks' ratios
 */
export async function paired(
  a: PairedContender,
  b: PairedContender,
  blocks: number,
  figures: readonly PairedFigure[],
): Promise<Array<{ a: Sample; b: Sample; ratio: Sample }>> {
  const as = figures.map(() => [] as number[]);
  const bs = figures.map(() => [] as number[]);
  const ratios = figures.map(() => [] as number[]);
  for (let block = 0; block < blocks; block++) {
    const a1 = await a.run();
    const b1 = await b.run();
    const b2 = await b.run();
    const a2 = await a.run();
    figures.forEach((figure, i) => {
      const [sumA, sumB] = [a1[i]! + a2[i]!, b1[i]! + b2[i]!];
      as[i]!.push(a1[i]!, a2[i]!);
      bs[i]!.push(b1[i]!, b2[i]!);
      ratios[i]!.push(figure.higherIsBetter ? sumA / sumB : sumB / sumA);
    });
  }
  return figures.map((figure, i) => ({
    a: sample(a.name, as[i]!, figure.unit),
    b: sample(b.name, bs[i]!, figure.unit),
    ratio: sample(`${a.name} / ${b.name}`, ratios[i]!, '×'),
  }));
}

/** A row from {@link paired}'s result: the ratio is the median of the blocks', its spread in the note. */
export function comparePaired(figure: string, result: { a: Sample; b: Sample; ratio: Sample }, target?: string): Row {
  const { ratio } = result;
  return {
    figure,
    ours: result.a,
    peer: result.b,
    ratio: ratio.median,
    ...(target ? { target } : {}),
    note: `median of ABBA blocks' ratios (${ratio.min.toFixed(2)}–${ratio.max.toFixed(2)})`,
  };
}

/** A row comparing ours with a peer; `higherIsBetter` orients the ratio. */
export function compare(
  figure: string,
  ours: Sample,
  peer: Sample | undefined,
  higherIsBetter = true,
  target?: string,
): Row {
  const ratio = peer ? (higherIsBetter ? ours.median / peer.median : peer.median / ours.median) : undefined;
  return {
    figure,
    ours,
    ...(peer ? { peer } : {}),
    ...(ratio !== undefined ? { ratio } : {}),
    ...(target ? { target } : {}),
  };
}

function fmt(s: Sample): string {
  const digits = s.median >= 100 ? 0 : s.median >= 10 ? 1 : 2;
  return `${s.median.toFixed(digits)} ${s.unit} (${s.min.toFixed(digits)}–${s.max.toFixed(digits)})`;
}

/** Prints rows to the terminal, one line each. */
export function printRows(title: string, rows: Row[]): void {
  console.log(`\n## ${title}`);
  for (const row of rows) {
    const peer = row.peer ? `  vs ${row.peer.name}: ${fmt(row.peer)}` : '';
    const ratio = row.ratio !== undefined ? `  ratio ${row.ratio.toFixed(2)}×` : '';
    const target = row.target ? `  (target ${row.target})` : '';
    console.log(
      `- ${row.figure}: ${row.ours.name}: ${fmt(row.ours)}${peer}${ratio}${target}${row.note ? `  — ${row.note}` : ''}`,
    );
  }
}

/**
 * A bench file that is run directly prints its rows; run by bench/run.ts it
 * also hands them over as one JSON line on stdout, prefixed `KB_ROWS `.
 */
export function report(title: string, rows: Row[]): void {
  printRows(title, rows);
  if (process.env.KB_BENCH_JSON === '1') console.log(`KB_ROWS ${JSON.stringify({ title, rows })}`);
}

/** Runs a bench file in a child process (with e.g. KOA_BUFFER_NATIVE=0) and returns its stdout. */
export function runChild(file: string, env: Record<string, string>, args: string[] = []): string {
  return execFileSync(process.execPath, ['--import', 'tsx', file, ...args], {
    env: { ...process.env, ...env },
    encoding: 'utf8',
    maxBuffer: 64 * 1024 * 1024,
  });
}

/** True when `importMetaUrl` is the file node was started with. */
export function isMain(importMetaUrl: string): boolean {
  return process.argv[1] !== undefined && fileURLToPath(importMetaUrl) === process.argv[1];
}
