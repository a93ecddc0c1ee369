/**
 * Reading and writing one key of the store, every call bounded by
 * `cacheStoreTimeout` and every failure reported rather than thrown:
 * a lookup is a fresh entry, a miss (nothing, expired, older than the
 * code: the staleness rule, or damaged) or an error; a write is true or false.
 * A damaged value (entry.ts, `readEntry`) is removed, so the miss rebuilds it.
 */
import type { ResolvedOptions } from '../../config/options.ts';
import { recentNewestMtimeMs } from '../../http/last-modified.ts';
import type { DecisionLog } from '../../base/decision-log.ts';
import { bounded, boundedAnswer } from '../../base/bounded.ts';
import type { Forward } from '../cache-status.ts';
import { decodeEntry, encodeEntryInSlices, isFresh, readEntry, type CacheEntry } from '../entry.ts';
import { encodeMarker, readMarker } from '../hit-for-miss.ts';
import { readVaryMarker, type VaryMarker } from '../vary-marker.ts';
import type { PurgeBook } from '../purge/book.ts';
import { countFailure, type CallCounts } from '../../base/stats.ts';
import { storeBackend } from '../backends.ts';
import { storeChannel, tracedEnd, tracedStart, type CallMessage } from '../../base/channels.ts';
import type { CacheStore } from '../../base/store.ts';
import { isThenable } from '../../base/thenable.ts';

/** One key of one store, and what reading it depends on. */
export interface Slot {
  readonly store: CacheStore;
  readonly key: string;
  /** The request's host and URL, named beside the key in log lines. */
  readonly url: string;
  /** The options of the request that opened the slot (templates, durations, time limits). */
  readonly options: ResolvedOptions;
  readonly log: DecisionLog;
  /**
   * Entries created before this time (ms since the epoch) count as a miss:
   * set by a refresh (`cacheRequestNoCache: 'refresh'`) to the time it
   * began, so it and the waiters of its flight take only a newer build. 0
   * for every other request.
   */
  readonly notBefore: number;
  /** The purges known for this store (cache/purge/book.ts): a purged entry is a miss. */
  readonly purges?: PurgeBook;
  /** The counters of calls to the store's backend. */
  readonly calls: CallCounts;
}

/**
 * What a lookup found; `at` is the time the entry was found fresh (or stale) at.
 * `stale`: past its TTL, within its stale-while-revalidate window.
 * A miss may carry a `fallback`: an entry past its TTL, within its
 * stale-if-error window, answered if the build fails; and the entry to
 * `revalidate`: one past its TTL with an ETag or Last-Modified of the
 * application's, whose build asks the action whether it still holds.
 * `pass`: a hit-for-miss marker (../hit-for-miss.ts): the key's last build
 * could not be stored, for this reason; the request runs the action alone.
 * `vary`: the page varies beyond the key (../vary-marker.ts): the request
 * looks up its variant.
 */
export type Lookup =
  | { readonly found: CacheEntry; readonly at: number }
  | { readonly stale: CacheEntry; readonly at: number }
  | { readonly miss: Forward; readonly fallback?: CacheEntry | undefined; readonly revalidate?: CacheEntry | undefined }
  | { readonly pass: string }
  | { readonly vary: VaryMarker }
  | { readonly error: unknown };

/**
 * Decoded entries by the value the store returned: the memory store hands
 * back the very Buffer it was given, so a hit decodes it once, not per
 * request. A string is what is wrong with a damaged value; null, no entry.
 */
const decoded = new WeakMap<object, CacheEntry | string | null>();

function decode(value: unknown): CacheEntry | string | undefined {
  if (value === null || typeof value !== 'object') return outcome(readEntry(value));
  let entry = decoded.get(value);
  if (entry === undefined) {
    entry = outcome(readEntry(value)) ?? null;
    decoded.set(value, entry);
  }
  return entry ?? undefined;
}

function outcome(read: ReturnType<typeof readEntry>): CacheEntry | string | undefined {
  return 'entry' in read ? read.entry : 'damaged' in read ? read.damaged : undefined;
}

/**
 * The damaged key each store reported last, and when: the requests that read
 * it before its removal landed (a shared store answers them all at once) log
 * it once.
 */
const reported = new WeakMap<CacheStore, { readonly key: string; readonly at: number }>();
const reportMs = 1000;

/** A damaged value: one log line, removed from the store, and a miss, so the page is built and stored again. */
function damaged(slot: Slot, problem: string, now: number): Promise<Lookup> {
  const last = reported.get(slot.store);
  if (last === undefined || last.key !== slot.key || !(now - last.at < reportMs)) {
    reported.set(slot.store, { key: slot.key, at: now });
    slot.log.error('log_cache_entry_damaged', { key: slot.key, url: slot.url, problem });
  }
  return remove(slot).then(() => ({ miss: 'miss' }));
}

/** Starts the trace of a store call; nothing, not even the message's closure, when nobody listens. */
function traceCall(slot: Slot, operation: 'get' | 'set' | 'delete'): CallMessage | undefined {
  if (!storeChannel.hasSubscribers) return undefined;
  return tracedStart(storeChannel, () => ({ operation, backend: storeBackend(slot.store), key: slot.key }));
}

/** `cacheStoreTimeout` in ms. */
function limit(slot: Slot): number {
  return slot.options.cacheStoreTimeout * 1000;
}

/**
 * Looks the slot's key up. An expired entry is a miss; one older than the
 * code is removed and is a miss. A value that is
 * not an entry (foreign, corrupt, or holding what no response carries) is
 * removed, logged, and a miss. Synchronous when the store and
 * the remembered mtime are: a hit from the memory or SQLite store costs no
 * Promise.
 *
 * @param slot - the store and key
 * @param now - the time, ms since the epoch, when the caller has read the clock already; a store
 *   that answers later judges by the time it answers
 * @returns `{found, at}`, `{miss: 'miss' | 'stale'}`, or `{error}` when the store threw or timed out
 */
export function lookup(slot: Slot, now?: number): Lookup | Promise<Lookup> {
  let value: unknown;
  slot.calls.calls++;
  const traced = traceCall(slot, 'get');
  try {
    value = boundedAnswer(slot.store.get(slot.key), limit(slot), 'cache get');
  } catch (error) {
    countFailure(slot.calls, error);
    tracedEnd(storeChannel, traced, error);
    return { error };
  }
  if (isThenable(value))
    return Promise.resolve(value).then(
      (v) => (tracedEnd(storeChannel, traced), judge(slot, v, Date.now())),
      (error: unknown) => (countFailure(slot.calls, error), tracedEnd(storeChannel, traced, error), { error }),
    );
  tracedEnd(storeChannel, traced);
  return judge(slot, value, now ?? Date.now());
}

function judge(slot: Slot, value: unknown, now: number): Lookup | Promise<Lookup> {
  const entry = decode(value);
  if (entry === undefined) return { miss: 'miss' };
  if (typeof entry === 'string') {
    // Not an entry: a hit-for-miss marker, or damage. Looked for only here, so a hit pays nothing for markers.
    const marker = readMarker(value);
    if (marker !== undefined) return marker.expires > now ? { pass: marker.reason } : { miss: 'miss' };
    const vary = readVaryMarker(value);
    if (vary !== undefined) return vary.expires > now ? { vary } : { miss: 'miss' };
    return damaged(slot, entry, now);
  }
  // The one comparison a fresh hit pays for the stale windows: they are looked at only past the TTL.
  if (!isFresh(entry, now)) return pastTtl(slot, entry, now);
  if (entry.created < slot.notBefore) return { miss: 'stale' };
  return checked(slot, entry, now, { found: entry, at: now });
}

/**
 * An entry past its TTL: stale within its stale-while-revalidate window, a
 * fallback within its stale-if-error one; either way, and past both, the
 * entry its rebuild revalidates when it has the application's validator.
 */
function pastTtl(slot: Slot, entry: CacheEntry, now: number): Lookup | Promise<Lookup> {
  if (entry.created < slot.notBefore) return { miss: 'stale' };
  const over = now - entry.expires;
  if (over < (entry.staleWhileRevalidate ?? 0)) return checked(slot, entry, now, { stale: entry, at: now });
  const revalidate = hasValidator(entry) ? entry : undefined;
  const fallback = over < (entry.staleIfError ?? 0) ? entry : undefined;
  if (fallback === undefined && revalidate === undefined) return { miss: 'stale' };
  // A purged entry, or one older than the code, is neither answered nor revalidated: a 304 would bring it back.
  return checked(slot, entry, now, { miss: 'stale', fallback, revalidate });
}

/** True when the entry carries a validator of the application's (entries hold no generated one). */
export function hasValidator(entry: CacheEntry): boolean {
  return entry.headers.etag !== undefined || entry.headers['last-modified'] !== undefined;
}

/**
 * `found` when no purge removed the entry and it is newer than the code; a
 * purged entry is a miss (never served stale), an entry older than the code
 * is removed and a miss (a deploy makes no stale entry).
 */
function checked(slot: Slot, entry: CacheEntry, now: number, found: Lookup): Lookup | Promise<Lookup> {
  // Until a purge is known, one property read: a hit allocates nothing for purges.
  const purges = slot.purges;
  if (purges !== undefined && purges.active) {
    const purged = purges.purged(entry.origin, entry.created);
    if (purged === true) return { miss: 'miss' };
    if (purged !== false)
      return purged.then((gone) => (gone ? { miss: 'miss' } : againstDeploy(slot, entry, now, found)));
  }
  return againstDeploy(slot, entry, now, found);
}

function againstDeploy(slot: Slot, entry: CacheEntry, now: number, found: Lookup): Lookup | Promise<Lookup> {
  // The app script's and templates' newest mtime, as Last-Modified reads it (trusted for mtimeTrustMs);
  // the options carry the template paths, the cache, the logger and the messages the scan needs.
  const newest = recentNewestMtimeMs(slot.options, undefined, now);
  if (typeof newest === 'number' || newest === undefined) return againstCode(slot, entry, newest, found);
  return newest.then((ms) => againstCode(slot, entry, ms, found));
}

function againstCode(
  slot: Slot,
  entry: CacheEntry,
  newest: number | undefined,
  found: Lookup,
): Lookup | Promise<Lookup> {
  if (newest === undefined || entry.created >= newest) return found;
  slot.log.debug('log_stale_entry', { key: slot.key, url: slot.url });
  return remove(slot).then(() => ({ miss: 'stale' }));
}

/** Removes the slot's key; a failure costs a log line. */
export async function remove(slot: Slot): Promise<void> {
  slot.calls.calls++;
  const traced = traceCall(slot, 'delete');
  try {
    await bounded(() => slot.store.delete(slot.key), limit(slot), 'cache delete');
    tracedEnd(storeChannel, traced);
  } catch (error) {
    countFailure(slot.calls, error);
    tracedEnd(storeChannel, traced, error);
    slot.log.error('log_cache_delete_failed', { key: slot.key, url: slot.url, error: error });
  }
}

/**
 * The binary form of `entry` and the entry read back from it, whose body is a
 * copy owned by the cache: what waiters replay, whatever the application
 * later does with the Buffer it sent.
 */
export async function seal(entry: CacheEntry): Promise<{ value: Buffer; entry: CacheEntry }> {
  // A large body is framed a slice per turn, so building a large entry does not hold the event loop.
  const value = await encodeEntryInSlices(entry);
  const sealed = decodeEntry(value)!;
  decoded.set(value, sealed);
  return { value, entry: sealed };
}

/**
 * Stores `value` (an encoded entry) under the slot's key for `ttlMs`.
 *
 * @returns true when stored; false when the store threw or timed out (logged)
 */
export async function write(slot: Slot, value: Buffer, ttlMs: number): Promise<boolean> {
  slot.calls.calls++;
  const traced = traceCall(slot, 'set');
  try {
    await bounded(() => slot.store.set(slot.key, value, Math.max(1, Math.ceil(ttlMs))), limit(slot), 'cache set');
    tracedEnd(storeChannel, traced);
    return true;
  } catch (error) {
    countFailure(slot.calls, error);
    tracedEnd(storeChannel, traced, error);
    slot.log.error('log_cache_set_failed', { key: slot.key, url: slot.url, error: error });
    return false;
  }
}

/**
 * Marks the slot's key as not storable for `seconds` (a hit-for-miss
 * marker), unless `seconds` is 0. A failing store costs a log line: without
 * the marker, later requests only collapse again.
 */
export async function markNotStorable(slot: Slot, reason: string, seconds: number): Promise<void> {
  if (!(seconds > 0)) return;
  const ms = Math.ceil(seconds * 1000);
  await write(slot, encodeMarker(reason, Date.now() + ms), ms);
}
