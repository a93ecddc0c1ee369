/**
 * The stat of a file the stream path read lately, kept for a second, so a
 * static file the memo answers costs one stat per request (koa-send's own)
 * rather than two.
 *
 * Why: on the stream path a stat is a thread-pool round trip, and a 100 KB
 * stylesheet the memo answered spent about a sixth of its CPU on the second
 * one (docs/performance.md, "Streams and static files"). A kept stat is used
 * only while the size and the second of the mtime that koa-send stated this
 * very request (its Content-Length and Last-Modified) still match it: any
 * edit that changes either is a new stat at once. What remains is a file
 * replaced within the same second by one of the same size, answered with the
 * bytes of the one before for at most a second (nginx's open_file_cache keeps
 * stats for 60 s by default); docs/decisions/0050-recent-file-stats.md.
 */
import type { Stats } from 'node:fs';
import { stat } from 'node:fs/promises';

/** How long a stat is used again, ms. */
export const statValidMs = 1000;
/** The bytes the kept stats may take (paths and a fixed overhead each): the oldest go first. */
export const statsBytesMax = 256 * 1024;
/** What one kept stat costs beyond its path, bytes: the record, the Stats object, the Map slot. */
const entryOverhead = 400;

interface Kept {
  readonly stats: Stats;
  /** The mtime as Last-Modified states it (koa-send's `toUTCString`), made once. */
  readonly lastModified: string;
  readonly at: number;
  readonly bytes: number;
}

const kept = new Map<string, Kept>();
let keptBytes = 0;

/** The bytes the kept stats take now, for the memory budgets. */
export function keptStatsBytes(): number {
  return keptBytes;
}

/** What the response already says of the file: koa-send's Content-Length and Last-Modified, as set this request. */
export interface Declared {
  readonly size: number | undefined;
  readonly lastModified: string | undefined;
}

/**
 * The stat of `path`: one kept from under a second ago when the response
 * declares the same size and mtime (to the second), else a new one, kept.
 * A response that declares no size always stats. Rejects as `stat` does.
 */
export async function recentStat(path: string | Buffer, declared: Declared, now = Date.now()): Promise<Stats> {
  if (typeof path !== 'string' || declared.size === undefined) return stat(path);
  const known = kept.get(path);
  if (known !== undefined) {
    if (now - known.at < statValidMs && matches(known, declared)) return known.stats;
    forget(path, known);
  }
  const stats = await stat(path);
  keep(path, stats, now);
  return stats;
}

function matches(known: Kept, declared: Declared): boolean {
  if (known.stats.size !== declared.size) return false;
  return declared.lastModified === undefined || known.lastModified === declared.lastModified;
}

function keep(path: string, stats: Stats, at: number): void {
  const bytes = path.length * 2 + entryOverhead;
  if (bytes > statsBytesMax) return;
  const before = kept.get(path);
  if (before !== undefined) forget(path, before);
  while (keptBytes + bytes > statsBytesMax) {
    const oldest = kept.entries().next().value!;
    forget(oldest[0], oldest[1]);
  }
  kept.set(path, { stats, lastModified: stats.mtime.toUTCString(), at, bytes });
  keptBytes += bytes;
}

function forget(path: string, known: Kept): void {
  kept.delete(path);
  keptBytes -= known.bytes;
}
