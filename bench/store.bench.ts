/**
 * How fast does each embedded cache store take and give back a 50 KiB page?
 * Operations per second, one awaited call after another as the middleware
 * makes them: `set` is encodeEntry + store.set (with a TTL), `get` is
 * store.get + decodeEntry, over 100 keys. Memory, a SQLite file in a temp
 * directory, and a redis-server on loopback started here (skipped when
 * redis-server is not installed). Medians of alternating reps; ratios are
 * against the memory store; a control row (memory get against itself) must
 * come out within 10% of 1, or the row says the run is rejected. Run:
 *   node --import tsx bench/store.bench.ts [--quick]
 */
import { Buffer } from 'node:buffer';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { decodeEntry, encodeEntry, type CacheEntry } from '../src/cache/entry.ts';
import type { CacheStore } from '../src/base/store.ts';
import { MemoryStore } from '../src/cache/stores/memory.ts';
import { RedisStore } from '../src/cache/stores/redis.ts';
import { SqliteStore } from '../src/cache/stores/sqlite.ts';
import { startServer } from '../support/redis-server.ts';
import { alternate, compare, quick, report, type Row, type Sample } from './lib/harness.ts';

const reps = quick ? 3 : 7;
const repMs = quick ? 200 : 800;
const keys = Array.from({ length: 100 }, (_, i) => `buffer:${i.toString(16).padStart(32, '0')}`);

function page(): CacheEntry {
  const paragraph =
    '<p>Lorem ipsum dolor sit amet, <a href="/consectetur">adipiscing</a> elit, sed do eiusmod tempor — ünïcode ✓.</p>\n';
  const body = Buffer.from(
    `<!doctype html><html><head><title>Report</title></head><body>\n${paragraph.repeat(Math.ceil(51_200 / paragraph.length))}`,
  ).subarray(0, 51_200);
  return {
    status: 200,
    headers: {
      'content-type': 'text/html; charset=utf-8',
      'cache-control': 'public, max-age=60',
      link: ['</app.css>; rel=preload; as=style', '</app.js>; rel=preload; as=script'],
    },
    body,
    created: Date.now(),
    expires: Date.now() + 600_000,
  };
}

/** Calls `op` back to back for about `ms` and returns calls per second. */
async function rate(op: (i: number) => unknown, ms: number): Promise<number> {
  let calls = 0;
  const start = performance.now();
  let now = start;
  while (now - start < ms) {
    await op(calls);
    calls++;
    now = performance.now();
  }
  return calls / ((now - start) / 1000);
}

/** The same contender measured twice: off by more than 10%, the run is marked rejected (as the md5 and flock benches do). */
function controlRow(figure: string, again: Sample, first: Sample): Row {
  const row = compare(figure, again, first, true, '≈ 1');
  const off = Math.abs((row.ratio ?? 1) - 1);
  row.note =
    off > 0.1
      ? `REJECTED: the control is off by ${(off * 100).toFixed(0)}%; rerun on a quieter machine`
      : 'the same call twice: drift on this machine';
  if (off > 0.1)
    console.error(`store bench: ${figure} off by ${(off * 100).toFixed(0)}%, the figures of this run are not reliable`);
  return row;
}

const entry = page();
const setOp = (store: CacheStore) => (i: number) => store.set(keys[i % keys.length]!, encodeEntry(entry), 600_000);
const getOp = (store: CacheStore) => async (i: number) => {
  const decoded = decodeEntry(await store.get(keys[i % keys.length]!));
  if (!decoded || decoded.body.length !== entry.body.length)
    throw new Error('the store lost an entry during the bench');
};

const dir = mkdtempSync(join(tmpdir(), 'kb-store-bench-'));
const stores: Array<[string, CacheStore]> = [
  ['memory', new MemoryStore()],
  ['sqlite', new SqliteStore({ path: join(dir, 'cache.sqlite') })],
];
let redisServer: Awaited<ReturnType<typeof startServer>> | undefined;
let redisNote: string | undefined;
if (!spawnSync('redis-server', ['--version']).error) {
  redisServer = await startServer();
  stores.push(['redis', new RedisStore({ url: `redis://127.0.0.1:${redisServer.port}` })]);
} else {
  redisNote = 'redis row skipped: install redis-server (Debian package redis-server)';
}

try {
  const codec = Buffer.from(encodeEntry(entry));
  for (const [, store] of stores) for (const i of keys.keys()) await setOp(store)(i); // every key present before the first get
  // Sets and gets alternate in separate groups: the 50 KiB of garbage per set would otherwise land in the gets' reps.
  const setSamples = await alternate(
    [
      { name: 'codec only (encode + decode)', run: () => rate(() => decodeEntry(encodeEntry(entry)) ?? codec, repMs) },
      ...stores.map(([name, store]) => ({ name: `${name} set`, run: () => rate(setOp(store), repMs) })),
    ],
    reps,
    'ops/s',
  );
  const memory = stores[0]![1];
  const getSamples = await alternate(
    [
      ...stores.map(([name, store]) => ({ name: `${name} get`, run: () => rate(getOp(store), repMs) })),
      { name: 'memory get (control)', run: () => rate(getOp(memory), repMs) },
    ],
    reps,
    'ops/s',
  );
  const samples = [...setSamples, ...getSamples];
  const by = (name: string): Sample => samples.find((s) => s.name === name)!;
  const rows: Row[] = [
    compare('encode + decode of a 50 KiB entry, no store (the floor)', by('codec only (encode + decode)'), undefined),
  ];
  for (const [name] of stores) {
    for (const op of ['set', 'get'] as const) {
      rows.push(
        name === 'memory'
          ? compare(`${op} of a 50 KiB entry`, by(`memory ${op}`), undefined)
          : compare(`${op} of a 50 KiB entry, against memory`, by(`${name} ${op}`), by(`memory ${op}`)),
      );
    }
  }
  rows.push(controlRow('control: memory get against itself', by('memory get (control)'), by('memory get')));
  if (redisNote)
    rows.push({
      figure: 'redis',
      ours: { name: 'skipped', median: 0, min: 0, max: 0, unit: 'ops/s' },
      note: redisNote,
    });
  report('cache stores: get and set of a 50 KiB entry (sequential awaited calls)', rows);
} finally {
  for (const [, store] of stores) await store.close?.();
  await redisServer?.stop();
  rmSync(dir, { recursive: true, force: true });
}
