/**
 * Last-Modified (the lastModified option): the value forms, and the newest
 * modification time of the application script (`process.argv[1]`) and the
 * `templatePaths`, scanned recursively, optionally remembered in a
 * `templateMtimeCache` (a Keyv works) for `templateMtimeCacheDuration`.
 *
 * The scan uses synchronous stat calls: for the usual handful of files a
 * stat costs far less than a threadpool round trip; a large template tree is
 * what templateMtimeCache is for. The middleware and the server-side cache
 * read the scan through {@link recentNewestMtimeMs}, which trusts an answer
 * for {@link mtimeTrustMs}: per response, the stat was a measurable share of
 * a cache hit and of a memoised page (docs/decisions/0004-trust-windows.md).
 *
 * The scan follows symlinks (a template directory may be one), but no
 * directory twice, by device and inode, so symlink cycles end; and it stops
 * at {@link scanBounds}, logging once, and answers with what it saw.
 */
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { Context } from 'koa';
import type { Logger } from '../base/logger.ts';
import { md5 } from '../native/exports.ts';
import type { Messages } from '../base/messages.ts';

/** A value of `lastModified` other than a function. */
export type LastModifiedValue = boolean | number | string | Date | null | undefined;

/** `lastModified` as the options take it. */
export type LastModifiedOption = LastModifiedValue | ((ctx: Context) => LastModifiedValue | Promise<LastModifiedValue>);

/** An object remembering the scan result: `get(key)` and `set(key, value, ttlMs)`, sync or async (a Keyv works). */
export interface MtimeCache {
  get(key: string): unknown;
  set(key: string, value: number, ttlMs?: number): unknown;
}

/** What the scan needs. */
export interface MtimeSources {
  templatePaths: readonly string[];
  templateMtimeCache: MtimeCache | undefined;
  /** Seconds. */
  templateMtimeCacheDuration: number;
  logger: Logger;
  messages: Messages;
}

/** True when `value` is a form `lastModified` accepts (validation at buffer() time). */
export function isLastModifiedOption(value: unknown): boolean {
  if (value === undefined || value === null || typeof value === 'boolean' || typeof value === 'function') return true;
  if (typeof value === 'number') return Number.isFinite(value) && value >= 0;
  if (typeof value === 'string') return value === '' || !Number.isNaN(Date.parse(value));
  if (value instanceof Date) return !Number.isNaN(value.getTime());
  return false;
}

/**
 * How far one scan goes: no path more than `depth` levels below a template
 * path, and no more than `entries` paths in all, are looked at.
 * A tree beyond these is not a template tree (a path naming `/` or a
 * `node_modules`); each stat is synchronous, and the scan runs every
 * {@link mtimeTrustMs}, so 10,000 stats is as far as it may go before the
 * scan itself holds the event loop (docs/decisions/0040-template-scan-bounds.md).
 */
export const scanBounds = { depth: 32, entries: 10_000 } as const;

/** One scan's progress: the directories listed (device:inode), the paths looked at, and the bound it stopped at. */
interface Walk {
  readonly listed: Set<string>;
  entries: number;
  stopped: string | undefined;
}

const newWalk = (): Walk => ({ listed: new Set(), entries: 0, stopped: undefined });

/** Newest mtime in ms under `path` (a file, or a directory scanned recursively); -Infinity when nothing is there. */
function newestUnder(path: string, sources: MtimeSources, walk: Walk, depth: number): number {
  if (walk.entries >= scanBounds.entries) {
    walk.stopped ??= `${scanBounds.entries} entries`;
    return -Infinity;
  }
  walk.entries++;
  let newest = -Infinity;
  try {
    const stat = statSync(path);
    newest = stat.mtimeMs;
    if (!stat.isDirectory()) return newest;
    if (depth >= scanBounds.depth) {
      walk.stopped ??= `depth ${scanBounds.depth}`;
      return newest;
    }
    // Exact device and inode numbers (a number may round them): a directory reached twice, through a symlink, is listed once.
    const { dev, ino } = statSync(path, { bigint: true });
    const id = `${dev}:${ino}`;
    if (walk.listed.has(id)) return newest;
    walk.listed.add(id);
    for (const name of readdirSync(path))
      newest = Math.max(newest, newestUnder(join(path, name), sources, walk, depth + 1));
  } catch (error) {
    sources.logger.debug(sources.messages.text('log_mtime_scan_failed', { path, error: (error as Error).message }));
  }
  return newest;
}

/** Template path lists whose scan has been told to stop at a bound: told once, by the options' own list. */
const toldStopped = new WeakSet<readonly string[]>();

function scan(paths: readonly string[], sources: MtimeSources): number {
  const walk = newWalk();
  let newest = -Infinity;
  for (const path of paths) newest = Math.max(newest, newestUnder(path, sources, walk, 0));
  if (walk.stopped !== undefined && !toldStopped.has(paths)) {
    toldStopped.add(paths);
    sources.logger.warn(sources.messages.text('log_mtime_scan_bounded', { bound: walk.stopped }));
  }
  return newest;
}

/**
 * The newest modification time, in whole seconds since the epoch, of the
 * application script and the template paths; undefined when none exists.
 * With a templateMtimeCache the template scan is remembered, keyed by the
 * script, its mtime and the template paths; a failing cache is logged at
 * debug level and the scan runs as usual.
 *
 * @param sources - the template paths, the cache and the logger
 * @param script - the application script, `process.argv[1]` by default; null for none
 */
export async function newestMtime(
  sources: MtimeSources,
  script: string | null = process.argv[1] ?? null,
): Promise<number | undefined> {
  const ms = await newestMtimeMs(sources, script);
  return ms === undefined ? undefined : Math.floor(ms / 1000);
}

/**
 * As {@link newestMtime}, in milliseconds and not rounded: the server-side
 * cache compares it with an entry's creation time, where a whole second
 * would make an entry built just after an edit look older than the edit.
 */
export async function newestMtimeMs(
  sources: MtimeSources,
  script: string | null = process.argv[1] ?? null,
): Promise<number | undefined> {
  const scriptMs = script === null ? -Infinity : newestUnder(script, sources, newWalk(), 0);
  let templatesMs: number;
  const cache = sources.templateMtimeCache;
  if (cache === undefined || sources.templatePaths.length === 0) {
    templatesMs = scan(sources.templatePaths, sources);
  } else {
    const key = `koa-buffer:template-mtime:${md5(JSON.stringify([script ?? '', scriptMs, sources.templatePaths]))}`;
    let cached: unknown;
    try {
      cached = await cache.get(key);
    } catch (error) {
      sources.logger.debug(
        sources.messages.text('log_mtime_cache_failed', { op: 'get', error: (error as Error).message }),
      );
    }
    if (typeof cached === 'number') {
      templatesMs = cached;
    } else {
      templatesMs = scan(sources.templatePaths, sources);
      try {
        // A whole number of ms, at most 2^31 s (RFC 9111 1.2.2's bound), which a Redis behind a Keyv accepts.
        const ttlMs = Math.ceil(Math.min(sources.templateMtimeCacheDuration, 2 ** 31) * 1000);
        await cache.set(key, templatesMs, ttlMs);
      } catch (error) {
        sources.logger.debug(
          sources.messages.text('log_mtime_cache_failed', { op: 'set', error: (error as Error).message }),
        );
      }
    }
  }
  const newest = Math.max(scriptMs, templatesMs);
  return Number.isFinite(newest) ? newest : undefined;
}

/**
 * How long the newest mtime of the app script and the templates is trusted
 * before the files are read again, ms. A template edited now is noticed
 * within this time, by Last-Modified and by the server-side cache's
 * staleness rule alike.
 */
export const mtimeTrustMs = 250;

interface Scan {
  readonly newest: number | undefined;
  readonly at: number;
  readonly script: string | null;
}

/** The last scan by what it scanned: the template paths, then the templateMtimeCache, of one set of options. */
const scans = new WeakMap<readonly string[], Map<MtimeCache | undefined, Scan>>();

/**
 * {@link newestMtimeMs} of the app script and `sources`, read at most once
 * per {@link mtimeTrustMs}: synchronous while the last answer is trusted.
 *
 * @param sources - the template paths, the cache and the logger; the same
 *   `templatePaths` array (the options' own) finds the last answer
 * @param script - the app script; `undefined` for the one node runs
 * @param now - the time, ms since the epoch (a caller that has read the clock already passes it)
 */
export function recentNewestMtimeMs(
  sources: MtimeSources,
  script: string | null = process.argv[1] ?? null,
  now: number = Date.now(),
): number | undefined | Promise<number | undefined> {
  let byCache = scans.get(sources.templatePaths);
  if (byCache === undefined) scans.set(sources.templatePaths, (byCache = new Map()));
  const known = byCache.get(sources.templateMtimeCache);
  // A clock set back reads the files again.
  if (known !== undefined && known.script === script && now >= known.at && now - known.at < mtimeTrustMs)
    return known.newest;
  return newestMtimeMs(sources, script).then((newest) => {
    byCache.set(sources.templateMtimeCache, { newest, at: now, script });
    return newest;
  });
}

/** Seconds since the epoch of a non-function value; undefined for "none". */
function valueSeconds(value: unknown): number | 'scan' | undefined {
  if (value === true || value === 1) return 'scan';
  if (value === undefined || value === null || value === false || value === 0 || value === '') return undefined;
  if (typeof value === 'number') return Number.isFinite(value) && value > 0 ? Math.floor(value) : undefined;
  if (typeof value === 'string') {
    const ms = Date.parse(value);
    return Number.isNaN(ms) ? undefined : Math.floor(ms / 1000);
  }
  if (value instanceof Date) {
    const ms = value.getTime();
    return Number.isNaN(ms) ? undefined : Math.floor(ms / 1000);
  }
  return undefined;
}

const wholeSeconds = (ms: number | undefined): number | undefined =>
  ms === undefined ? undefined : Math.floor(ms / 1000);

/**
 * The Last-Modified of a response in seconds since the epoch, or undefined
 * for none; synchronous unless a function or a fresh scan must be awaited.
 * A function is called with the context and may return a Promise; one that
 * returns a function (or throws) counts as none. The scan is the trusted one
 * of {@link recentNewestMtimeMs}.
 */
export function lastModifiedSeconds(
  option: unknown,
  ctx: Context,
  sources: MtimeSources,
): number | undefined | Promise<number | undefined> {
  if (typeof option === 'function') return fromFunction(option as (ctx: Context) => unknown, ctx, sources);
  const seconds = valueSeconds(option);
  if (seconds !== 'scan') return seconds;
  const ms = recentNewestMtimeMs(sources);
  return ms instanceof Promise ? ms.then(wholeSeconds) : wholeSeconds(ms);
}

async function fromFunction(
  option: (ctx: Context) => unknown,
  ctx: Context,
  sources: MtimeSources,
): Promise<number | undefined> {
  let value: unknown;
  try {
    value = await option(ctx);
  } catch {
    return undefined;
  }
  if (typeof value === 'function') return undefined;
  const seconds = valueSeconds(value);
  return seconds === 'scan' ? wholeSeconds(await recentNewestMtimeMs(sources)) : seconds;
}

let lastDate: { seconds: number; text: string } = { seconds: NaN, text: '' };

/** The HTTP-date form of a time in seconds (the last one remembered: most responses share it). */
export function httpDate(seconds: number): string {
  if (seconds !== lastDate.seconds) lastDate = { seconds, text: new Date(seconds * 1000).toUTCString() };
  return lastDate.text;
}
