/**
 * How many lock-file acquire + release pairs a second do the native flock
 * primitives sustain, against proper-lockfile (mkdir-based) and against the
 * open + close floor, side by side in one run, contenders alternating?
 * - `acquireLockFile` + `unlock` + `closeFd`: the FileLock hot path (target >= 200,000/s);
 * - `acquireLockFile` + `closeFd` (close releases a flock by itself);
 * - the four primitives as separate calls (open, tryLock, unlock, close);
 * - proper-lockfile `lockSync` + its release function, with realpath off;
 * - `fs.openSync` + `fs.closeSync`: the syscall floor any lock file pays;
 * - a busy attempt (`acquireLockFile` on a held lock: open + flock + close);
 * - a control: the floor against itself, which must come out near 1.
 * Run: node --import tsx bench/flock.bench.ts [--quick]
 */
import { closeSync, mkdtempSync, openSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { addon, addonUnavailableReason } from '../src/native/binding.ts';
import { LOCK_BUSY } from '../src/native/types.ts';
import { alternate, compare, opsPerSecond, quick, report, type Row, type Sample } from './lib/harness.ts';

if (!addon) {
  console.error(
    `flock bench: the native addon is unavailable (${addonUnavailableReason}); build it with npx node-gyp rebuild`,
  );
  process.exit(1);
}
const lock = addon;
const lockfile = createRequire(import.meta.url)('proper-lockfile') as typeof import('proper-lockfile');

const reps = quick ? 3 : 9;
const budgetMs = quick ? 100 : 300;
const dir = mkdtempSync(join(tmpdir(), 'kb-flock-bench-'));
process.on('exit', () => rmSync(dir, { recursive: true, force: true }));

function fail(what: string, result: number): never {
  throw new Error(`${what} failed: ${result} (${lock.strerror(result % 100_000)})`);
}

/** Runs `pair` 100 times per timing and returns pairs a second. */
function pairsPerSecond(pair: () => void): () => number {
  return () =>
    opsPerSecond(() => {
      for (let i = 0; i < 100; i++) pair();
      return 100;
    }, budgetMs);
}

const paths = {
  full: join(dir, 'full.lock'),
  close: join(dir, 'close.lock'),
  split: join(dir, 'split.lock'),
  proper: join(dir, 'proper'),
  floor: join(dir, 'floor.lock'),
  busy: join(dir, 'busy.lock'),
};
closeSync(openSync(paths.floor, 'w'));
const held = lock.acquireLockFile(paths.busy);
if (held < 0) fail('holding the busy lock', held);

const contenders = [
  {
    name: 'native acquire+unlock+close',
    run: pairsPerSecond(() => {
      const fd = lock.acquireLockFile(paths.full);
      if (fd < 0) fail('acquireLockFile', fd);
      lock.unlock(fd);
      lock.closeFd(fd);
    }),
  },
  {
    name: 'native acquire+close',
    run: pairsPerSecond(() => {
      const fd = lock.acquireLockFile(paths.close);
      if (fd < 0) fail('acquireLockFile', fd);
      lock.closeFd(fd);
    }),
  },
  {
    name: 'native open+tryLock+unlock+close',
    run: pairsPerSecond(() => {
      const fd = lock.openLockFile(paths.split);
      if (fd < 0) fail('openLockFile', fd);
      const taken = lock.tryLock(fd);
      if (taken !== 0) fail('tryLock', taken);
      lock.unlock(fd);
      lock.closeFd(fd);
    }),
  },
  {
    name: 'proper-lockfile lockSync+release',
    run: pairsPerSecond(() => {
      const release = lockfile.lockSync(paths.proper, { realpath: false });
      release();
    }),
  },
  {
    name: 'fs.openSync+closeSync (floor)',
    run: pairsPerSecond(() => closeSync(openSync(paths.floor, 'r+'))),
  },
  {
    name: 'fs.openSync+closeSync (floor) again',
    run: pairsPerSecond(() => closeSync(openSync(paths.floor, 'r+'))),
  },
  {
    name: 'native acquire on a held lock (busy)',
    run: pairsPerSecond(() => {
      const result = lock.acquireLockFile(paths.busy);
      if (result !== LOCK_BUSY) fail('busy attempt', result);
    }),
  },
];

for (const c of contenders) c.run(); // warm up
const [full, close, split, proper, floor, floorAgain, busy] = await alternate(contenders, reps, 'pairs/s');
lock.closeFd(held);

/** The floor measured twice: its ratio shows the drift of this run; off by more than 10%, the run is marked rejected. */
function controlRow(again: Sample, first: Sample): Row {
  const row = compare('control: the floor against itself', again, first, true, '≈ 1');
  const off = Math.abs((row.ratio ?? 1) - 1);
  row.note =
    off > 0.1
      ? `REJECTED: the control is off by ${(off * 100).toFixed(0)}%; rerun on a quieter machine`
      : 'drift on this machine';
  if (off > 0.1)
    console.error(
      `flock bench: the control is off by ${(off * 100).toFixed(0)}%, the figures of this run are not reliable`,
    );
  return row;
}

const rows: Row[] = [
  compare('acquire + release, FileLock hot path', full!, proper, true, '>= 200,000/s; ratio vs proper-lockfile'),
  compare('acquire + release by close alone', close!, proper, true),
  compare('four separate primitive calls', split!, proper, true),
  {
    ...compare('acquire + release vs the open+close floor', full!, floor, true),
    note: 'a fraction of the floor: open+flock+flock+close vs open+close',
  },
  { ...compare('busy attempt (open + flock + close)', busy!, floor, true), note: 'attempts/s' },
  controlRow(floorAgain!, floor!),
];
report('flock: native lock-file primitives (ratio > 1: native better)', rows);
