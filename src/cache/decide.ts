/**
 * The cache's answer to `ctx.bufferIsCached()` (docs/architecture.md, "The
 * server-side cache"), with Koa's async model: a request that waits for
 * another one's build simply awaits here, and is answered (replayed or 503)
 * before the promise resolves to true.
 *
 *   if a bypass rule applies (no cache, POST, …)      → false   fwd=bypass
 *   a per-response varyBy that is no list of names    → false   fwd=bypass; detail=VARYBY
 *   the key's cookies read two ways (cookie:NAME)     → false   fwd=bypass; detail=COOKIE
 *   look the key up; the store failed                 → false   fwd=bypass; detail=STORE-ERROR
 *   a fresh entry                                     → replay, true   hit
 *   past its TTL, within stale-while-revalidate       → replay, refresh in the background, true   fwd=stale
 *   miss, X-Cache: MISS; single flight off            → false, store when complete
 *   a flight of this key in this process              → wait for it, true   collapsed (or 503)
 *   open a flight; the lock says another process      → watch the store, true
 *   else (lock taken, failed, or none): read again    → replay, true — or build: false
 *
 * A build or a wait that fails while an entry within its stale-if-error
 * window was found is answered from that entry (docs/architecture.md, "Stale entries").
 */
import type { Context } from 'koa';
import { tracedEnd, tracedStart, waitChannel, type WaitMessage } from '../base/channels.ts';
import type { ResolvedOptions } from '../config/options.ts';
import { requestHeaderLines } from '../http/headers.ts';
import { abandoned, failedBuild, hitForMiss, startBuild } from './build.ts';
import { bypassReason, requestRefusesStored } from './bypass.ts';
import {
  statusBypass,
  statusCollapsed,
  statusCollapsedFailed,
  statusHit,
  statusMiss,
  statusStale,
  statusStaleOnError,
  type Forward,
} from './cache-status.ts';
import { remainingMs, type CacheEntry } from './entry.ts';
import { Flight, type FlightFailure, type Outcome } from './flight/flight.ts';
import { hasValidator, lookup, type Lookup, type Slot } from './hit/lookup.ts';
import { replayEntry, retryLater } from './hit/replay.ts';
import { ambiguousCookie, cacheKeyOf } from './key.ts';
import { refreshOf, revalidate } from './refresh.ts';
import { variantKey, variantOf as variantDigest, type VaryMarker } from './vary-marker.ts';
import type { CacheRuntime } from './runtime.ts';
import { openVisit, type Visit } from './visit.ts';

/**
 * Decides whether the action must run (false) or the cache has answered, or
 * will answer, this request (true). Throws only what a bug would throw; the
 * caller turns that into a log line and a run of the action.
 *
 * @param options - the response's options as resolved when the action asked
 */
export function decide(ctx: Context, runtime: CacheRuntime, options: ResolvedOptions): boolean | Promise<boolean> {
  // One clock read serves the environment switches, freshness, staleness and the hit's ttl.
  const now = Date.now();
  const bypass = bypassReason(ctx, options.cache !== undefined, now, options);
  if (bypass !== undefined) return bypassed(ctx, runtime, bypass);
  // A varyBy set for this response that is not a list of header names: keying on the URL alone would share the page.
  if (options.varyByRefused) return bypassed(ctx, runtime, 'VARYBY');
  const store = runtime.storeFor(options.cache);
  if (store === undefined) return bypassed(ctx, runtime, 'CACHE-OFF');
  if ('error' in store) return bypassed(ctx, runtime, 'STORE-ERROR');
  // A stale-while-revalidate refresh (refresh.ts) rebuilds the key of the visitor that started it.
  const refreshing = refreshOf(ctx);
  let key: string | typeof ambiguousCookie;
  try {
    key = refreshing?.key ?? cacheKeyOf(ctx, options);
  } catch (error) {
    runtime.log.error('log_cache_key_failed', { error: error });
    return bypassed(ctx, runtime, 'KEY-ERROR');
  }
  // A session cookie named twice (or spelled so readers differ) could file one visitor's page under another's key.
  if (key === ambiguousCookie) return bypassed(ctx, runtime, 'COOKIE');
  // 'refresh': the stored entry is not looked at; the request rebuilds it through the flight.
  const refresh = options.cacheRequestNoCache === 'refresh' && requestRefusesStored(ctx.request.headers);
  const purges = runtime.bookFor(store);
  const slot: Slot = {
    store,
    key,
    // For log lines and traces: the Host header as it came. Koa's host getter parses the forwarding
    // headers, which cost a hit half a microsecond for lines nobody may write.
    url: `${ctx.req.headers.host ?? ''}${ctx.originalUrl}`,
    options,
    log: runtime.log,
    notBefore: refresh ? now : 0,
    purges,
    calls: runtime.storeCalls(store),
  };
  const visit = openVisit(ctx, runtime, options, slot, now);
  if (refreshing !== undefined) {
    visit.revalidating = hasValidator(refreshing.entry) ? refreshing.entry : undefined;
    return fly(ctx, visit, 'stale');
  }
  if (refresh) return afterLookup(ctx, visit, requested);
  const seen = lookup(slot, now);
  return seen instanceof Promise ? seen.then((found) => afterLookup(ctx, visit, found)) : afterLookup(ctx, visit, seen);
}

function afterLookup(ctx: Context, visit: Visit, seen: Lookup): boolean | Promise<boolean> {
  const { runtime, options, slot } = visit;
  if ('error' in seen) {
    runtime.log.error('log_cache_get_failed', { key: slot.key, url: slot.url, error: seen.error });
    return bypassed(ctx, runtime, 'STORE-ERROR');
  }
  if ('found' in seen) return hit(ctx, visit, seen.found, seen.at);
  if ('stale' in seen) return staleHit(ctx, visit, seen.stale, seen.at);
  // The page varies beyond the key: this request reads, and builds, its own variant.
  if ('vary' in seen) return variantOf(ctx, visit, seen.vary);
  ctx.response.set('x-cache', 'MISS');
  if ('pass' in seen) {
    statusMiss(ctx, 'miss');
    return passed(ctx, visit, seen.pass, 'log_hit_for_miss');
  }
  visit.fallback = seen.fallback;
  visit.revalidating = seen.revalidate;
  statusMiss(ctx, seen.miss);
  if (!options.cacheSingleFlight) return solo(ctx, visit, seen.miss);
  return fly(ctx, visit, seen.miss);
}

/**
 * Looks up this request's variant of a page that varies beyond the key
 * (vary-marker.ts). A marker found at a variant's key is damage: a miss.
 */
function variantOf(ctx: Context, visit: Visit, marker: VaryMarker): boolean | Promise<boolean> {
  const primary = visit.slot;
  visit.slot = { ...primary, key: variantKey(primary.key, variantDigest(ctx, marker.fields)) };
  const found = (seen: Lookup): boolean | Promise<boolean> =>
    afterLookup(ctx, visit, 'vary' in seen ? { miss: 'miss' } : seen);
  const seen = lookup(visit.slot);
  return seen instanceof Promise ? seen.then(found) : found(seen);
}

/** What a refresh looks up: nothing, it goes to the action (or joins the build under way). */
const requested: Lookup = { miss: 'request' };

function bypassed(ctx: Context, runtime: CacheRuntime, detail: string): false {
  statusBypass(ctx, runtime.log.stats, detail);
  return false;
}

/** A fresh entry, found fresh at `at`: replayed, and named to the pipeline, which may give its earlier answer again. */
function hit(ctx: Context, visit: Visit, entry: CacheEntry, at: number): true {
  replayEntry(ctx, visit, entry);
  visit.runtime.log.stats.hitSeconds.observe((performance.now() - visit.askedAt) / 1000);
  statusHit(ctx, visit.runtime.log.stats, remainingMs(entry, at));
  const log = visit.runtime.log;
  if (log.debugEnabled) log.debug('log_cache_hit', { key: visit.slot.key, url: visit.url });
  visit.hitKey = visit.slot.key;
  visit.hitEntry = entry;
  return true;
}

/** An entry past its TTL within its stale-while-revalidate window: replayed at once, and refreshed in the background. */
function staleHit(ctx: Context, visit: Visit, entry: CacheEntry, at: number): true {
  const { runtime, slot } = visit;
  replayEntry(ctx, visit, entry);
  ctx.res.setHeader('x-cache', 'STALE');
  statusStale(ctx, runtime.log.stats, at - entry.expires);
  runtime.log.debug('log_cache_stale', { key: slot.key, url: slot.url });
  // The refresh rebuilds the page under the URL's key: its stored variant is the refreshed request's own.
  revalidate(ctx, runtime, visit.primaryKey, entry);
  return true;
}

// --- single flight ----------------------------------------------------------

/** Joins the key's flight in this process, or opens one: builds, watches, or replays what the last look found. */
async function fly(ctx: Context, visit: Visit, forward: Forward): Promise<boolean> {
  const { runtime, slot, options } = visit;
  const joined = runtime.table.get(slot.key);
  if (joined !== undefined) {
    // Another request of this process builds (or watches) the key.
    runtime.log.debug('log_waiting', { key: slot.key, url: slot.url });
    return answer(ctx, visit, await waited(visit, joined.done), forward);
  }
  const flight = new Flight(runtime, slot, options.cacheLockTimeout * 1000);
  if (runtime.lock !== undefined) {
    const taken = await flight.takeLock();
    if (taken === 'busy' && flight.outcome === undefined) {
      // Another process builds; this request watches the shared store for the process.
      runtime.log.debug('log_waiting_worker', { key: slot.key, url: slot.url });
      const turn = await waited(visit, flight.watch(options.cacheWaitFailure));
      if (turn !== 'build') return answer(ctx, visit, turn, forward);
      startBuild(ctx, visit, flight, forward);
      return false;
    }
    // A failing backend never stops a build: this process builds with its own flight (docs/decisions/0010-locks.md).
    if (typeof taken === 'object')
      runtime.log.error('log_lock_failed', { key: slot.key, url: slot.url, error: taken.error });
  }
  if (flight.outcome === undefined) {
    // lua-resty-lock's step 3: a page stored between the miss and the lock is replayed, not rebuilt.
    const again = await lookup(slot);
    if ('error' in again)
      runtime.log.error('log_cache_get_failed', { key: slot.key, url: slot.url, error: again.error });
    if ('found' in again && flight.settle({ entry: again.found })) {
      await flight.close();
      return hit(ctx, visit, again.found, Date.now());
    }
    // Another build found its page not storable meanwhile: this one runs alone, and so do the waiters.
    if ('pass' in again && flight.settle({ failure: hitForMiss })) {
      await flight.close();
      return passed(ctx, visit, again.pass, 'log_hit_for_miss');
    }
  }
  // cacheLockTimeout passed while the lock or the store answered.
  if (flight.outcome !== undefined) return answer(ctx, visit, flight.outcome, forward);
  startBuild(ctx, visit, flight, forward);
  return false;
}

/** Counts a wait for another build and how long it took. */
async function waited<T extends Outcome | 'build'>(visit: Visit, outcome: Promise<T>): Promise<T> {
  const stats = visit.runtime.log.stats;
  stats.waiters.waited++;
  const started = performance.now();
  const traced = tracedStart(waitChannel, (): WaitMessage => ({ key: visit.slot.key, url: visit.url }));
  let ended: Outcome | 'build' | undefined;
  try {
    const got = await outcome;
    ended = got;
    return got;
  } finally {
    stats.waitSeconds.observe((performance.now() - started) / 1000);
    if (traced !== undefined) traced.result = waitResult(ended);
    tracedEnd(waitChannel, traced);
  }
}

/** How a wait ended, for its trace. */
function waitResult(ended: Outcome | 'build' | undefined): string {
  if (ended === undefined) return 'ERROR';
  if (ended === 'build') return 'build';
  return 'failure' in ended ? ended.failure : 'answered';
}

/**
 * Flight failures that say the build is fine but cannot be shared (it set a
 * cookie, is private, varies, answered another status, was not buffered, …):
 * every other failure is a build that failed or took too long.
 */
function cannotBeShared(failure: FlightFailure): boolean {
  return !failedBuild.has(failure) && failure !== abandoned;
}

/** Answers a request that waited (docs/architecture.md, "The waiter's path"). */
function answer(ctx: Context, visit: Visit, outcome: Outcome, forward: Forward): boolean | Promise<boolean> {
  if ('failure' in outcome) {
    const { failure } = outcome;
    // The builder's client left before its page was sent: nothing was kept, so one waiter builds again.
    if (failure === abandoned) return fly(ctx, visit, forward);
    if (cannotBeShared(failure)) return passed(ctx, visit, failure, 'log_pass');
    return waitFailed(ctx, visit, failure);
  }
  const { vary } = outcome;
  if (vary !== undefined) {
    // Never hand over a page that varies on a header this request differs in: this request builds its own.
    for (const [name, value] of Object.entries(vary))
      if (requestHeaderLines(ctx, name) !== value) return passed(ctx, visit, 'VARY', 'log_pass');
  }
  replayEntry(ctx, visit, outcome.entry);
  statusCollapsed(ctx, visit.runtime.log.stats);
  return true;
}

/**
 * A request whose page cannot come from another's build (hit-for-miss, or
 * the build it waited for cannot be shared): it runs the action itself,
 * like a miss without single flight, and its own response is stored if it may be.
 */
function passed(ctx: Context, visit: Visit, detail: string, key: 'log_pass' | 'log_hit_for_miss'): false {
  visit.runtime.log.debug(key, { key: visit.slot.key, url: visit.url, detail });
  if (key === 'log_pass') visit.runtime.log.stats.waiters.ranAction++;
  return solo(ctx, visit, 'miss');
}

/** The build waited for failed or took too long: 503, or with cacheWaitFailure 'run' the action runs. */
function waitFailed(ctx: Context, visit: Visit, detail: FlightFailure): boolean {
  const { runtime, options, slot, fallback } = visit;
  if (fallback !== undefined && failedBuild.has(detail)) {
    // stale-if-error: the entry found past its TTL is better than a 503.
    replayEntry(ctx, visit, fallback);
    ctx.res.setHeader('x-cache', 'STALE');
    statusStaleOnError(ctx, runtime.log.stats, Date.now() - fallback.expires, detail);
    runtime.log.debug('log_stale_if_error', { key: slot.key, url: slot.url, detail });
    return true;
  }
  statusCollapsedFailed(ctx, detail);
  if (options.cacheWaitFailure === 'run') {
    runtime.log.stats.waiters.ranAction++;
    return solo(ctx, visit, 'miss');
  }
  runtime.log.stats.waiters.refused++;
  runtime.log.stats.requests.failed++;
  runtime.log.debug('log_gave_up', { key: slot.key, url: slot.url, detail });
  retryLater(ctx, runtime.log.messages, detail === 'TIMEOUT' ? 'retry_later' : 'retry_later_failed');
  return true;
}

/** The action runs and its response is stored when sent, without a flight. */
function solo(ctx: Context, visit: Visit, forward: Forward): false {
  startBuild(ctx, visit, undefined, forward);
  return false;
}
