/**
 * `ctx.bufferIsCached()` (docs/architecture.md, "The server-side cache"),
 * with Koa's async model: a request that waits for another
 * one's build simply awaits here, and is answered (replayed or 503) before
 * the promise resolves to true.
 *
 *   if koa-buffer is off for this response            → false
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
import { errorText } from '../base/describe.ts';
import { perResponseRefusal, readOverrideValue, type ResolvedOptions } from '../config/options.ts';
import { refusalArgs, resolveResponseOptions } from '../config/per-response.ts';
import { bypassReason, requestRefusesStored } from './bypass.ts';
import {
  statusBypass,
  statusCollapsed,
  statusCollapsedFailed,
  statusHit,
  statusMiss,
  statusNotStored,
  statusStale,
  statusStaleOnError,
  statusStored,
  type Forward,
} from './cache-status.ts';
import { remainingMs, type CacheEntry } from './entry.ts';
import { Flight, type FlightFailure, type Outcome } from './flight/flight.ts';
import { ambiguousCookie, cacheKeyOf } from './key.ts';
import { lookup, markNotStorable, seal, write, type Lookup, type Slot } from './hit/lookup.ts';
import { boundedLifetime, lifetimeOf, storeMs, type Lifetime } from './lifetime.ts';
import { revalidate, revalidatedKey } from './revalidate.ts';
import { replayEntry, retryLater } from './hit/replay.ts';
import {
  requestStateKey,
  type CacheRequestState,
  type StoreableResponse,
  type WithRequestState,
} from './request-state.ts';
import type { CacheRuntime } from './runtime.ts';
import { responseTags } from '../http/tags.ts';
import { entryOf, keysOnCookies, notStorableAsSent, notStorableReason, varyFields } from './storable.ts';
import { beforeHeadIsSent, type SentHead } from '../http/sent-head.ts';

/**
 * One request's view of the cache. It holds no context: the closures kept in
 * the request's state refer to it, and get the context as an argument (see
 * CacheRequestState.storeEntry).
 */
interface Visit {
  readonly state: CacheRequestState;
  readonly runtime: CacheRuntime;
  readonly options: ResolvedOptions;
  readonly slot: Slot;
  /** When the request looked the key up: a purge after it keeps its build from being stored. */
  readonly since: number;
  /** This process's purge count then (cache/purge/book.ts). */
  readonly purgesSeen: number;
  /** An entry past its TTL within its stale-if-error window, answered if the build fails. */
  fallback: CacheEntry | undefined;
}

/** Per-call overrides of `ctx.bufferIsCached()`, as koa-cash's `ctx.cashed(maxAge)`. */
export interface BufferIsCachedOptions {
  /** Seconds or a duration string this response stays fresh in the cache, over `cacheDuration` and its Cache-Control. */
  cacheDuration?: number | string;
  /** Tags of this response's entry, kept in `ctx.state.buffer.cacheTags`. */
  cacheTags?: string[];
}

/**
 * The `ctx.bufferIsCached` installed on every request (one shared function,
 * so installing it allocates nothing). The first call decides; a later call
 * returns the same answer and changes nothing. Never rejects: overrides it
 * cannot use are logged and left out.
 */
export function bufferIsCached(this: Context, overrides?: BufferIsCachedOptions): Promise<boolean> {
  const state = (this as WithRequestState)[requestStateKey];
  if (!state || state.cache === undefined) return Promise.resolve(false);
  if (overrides !== undefined && state.cacheAnswer === undefined) override(this, overrides, state.config);
  state.cacheAnswer ??= isCached(this, state, state.cache);
  return state.cacheAnswer;
}

/** Where per-call overrides are set, as log lines name it. */
const setByCall = 'ctx.bufferIsCached()';

/**
 * Lays the per-call overrides over `ctx.state.buffer`, where every
 * per-response option lives (and where the tags are read from), unless that
 * turns koa-buffer off for this response. A value the option would refuse
 * in `buffer()`, or any other argument, is left out with one log line (a
 * per-call value fails closed as every per-response value does); nothing the
 * argument or `ctx.state.buffer` holds makes it throw.
 */
function override(ctx: Context, overrides: unknown, config: ResolvedOptions): void {
  const { logger, messages } = config;
  const refuse = (problem: string): void => logger.warn(messages.text('cached_overrides', { problem }));
  try {
    if (overrides === null || typeof overrides !== 'object' || Array.isArray(overrides))
      return refuse('the argument is not an object');
    const accepted: Record<string, unknown> = {};
    for (const name of Object.keys(overrides)) {
      if (name !== 'cacheDuration' && name !== 'cacheTags') {
        refuse(`${JSON.stringify(name)} is not one of them`);
        continue;
      }
      const read = readOverrideValue(overrides, name);
      const key = 'error' in read ? 'override_unreadable' : perResponseRefusal(name, read.value, config);
      if (key !== undefined) {
        const refusal = {
          name,
          value: 'value' in read ? read.value : undefined,
          key,
          error: (read as { error?: unknown }).error,
        };
        logger.warn(messages.text('log_override_refused', refusalArgs(setByCall, refusal, messages)));
      } else if ((read as { value: unknown }).value !== undefined) accepted[name] = (read as { value: unknown }).value;
    }
    const stash: unknown = ctx.state.buffer;
    if (stash === 0 || stash === false || stash === '') return; // koa-buffer is off for this response
    const values = stash !== null && typeof stash === 'object' ? (stash as Record<string, unknown>) : {};
    ctx.state.buffer = { ...values, ...accepted };
  } catch (error) {
    // The argument or ctx.state.buffer fought back (a throwing getter, a proxy): none of it is used.
    logger.warn(
      messages.text(
        'log_override_unreadable',
        refusalArgs(setByCall, { name: undefined, value: undefined, key: 'override_unreadable', error }, messages),
      ),
    );
  }
}

/**
 * Decides whether the action must run (false) or koa-buffer has answered,
 * or will answer, this request from the cache (true). Never throws: a
 * failing store, lock or cacheKey function costs a log line and the action
 * runs.
 *
 * @param ctx - the request
 * @param state - its koa-buffer state
 * @param runtime - the middleware's cache
 */
function isCached(ctx: Context, state: CacheRequestState, runtime: CacheRuntime): Promise<boolean> {
  // Never a failed request: whatever went wrong (a corrupt entry's header, a bug), the action runs.
  const failed = (error: unknown): false => {
    runtime.log.error('log_cache_get_failed', { key: 'for this request', error: errorText(error) });
    return false;
  };
  try {
    const answer = decide(ctx, state, runtime);
    // A hit from a synchronous store is decided without a Promise; only the answer is one.
    return answer instanceof Promise ? answer.catch(failed) : Promise.resolve(answer);
  } catch (error) {
    return Promise.resolve(failed(error));
  }
}

function decide(ctx: Context, state: CacheRequestState, runtime: CacheRuntime): boolean | Promise<boolean> {
  const options = resolveResponseOptions(ctx, state);
  // Off for this response: koa-buffer leaves it alone, headers included.
  if (options === undefined) return false;
  // One clock read serves the environment switches, freshness, staleness and the hit's ttl.
  const now = Date.now();
  const bypass = bypassReason(ctx, options.cache !== undefined, now, options);
  if (bypass !== undefined) return bypassed(ctx, bypass);
  // A varyBy set for this response that is not a list of header names: keying on the URL alone would share the page.
  if (options.varyByRefused) return bypassed(ctx, 'VARYBY');
  const store = runtime.storeFor(options.cache);
  if (store === undefined) return bypassed(ctx, 'CACHE-OFF');
  if ('error' in store) return bypassed(ctx, 'STORE-ERROR');
  // A stale-while-revalidate refresh (revalidate.ts) rebuilds the key of the visitor that started it.
  const revalidating = revalidatedKey(ctx);
  let key: string | typeof ambiguousCookie;
  try {
    key = revalidating ?? cacheKeyOf(ctx, options);
  } catch (error) {
    runtime.log.error('log_cache_key_failed', { error: errorText(error) });
    return bypassed(ctx, 'KEY-ERROR');
  }
  // A session cookie named twice (or spelled so readers differ) could file one visitor's page under another's key.
  if (key === ambiguousCookie) return bypassed(ctx, 'COOKIE');
  // 'refresh': the stored entry is not looked at; the request rebuilds it through the flight.
  const refresh = options.cacheRequestNoCache === 'refresh' && requestRefusesStored(ctx.request.headers);
  const purges = runtime.bookFor(store);
  const slot: Slot = { store, key, options, log: runtime.log, notBefore: refresh ? now : 0, purges };
  const visit: Visit = { state, runtime, options, slot, since: now, purgesSeen: purges.sequence, fallback: undefined };
  if (revalidating !== undefined) return fly(ctx, visit, 'stale');
  if (refresh) return afterLookup(ctx, visit, refreshing);
  const seen = lookup(slot, now);
  return seen instanceof Promise ? seen.then((found) => afterLookup(ctx, visit, found)) : afterLookup(ctx, visit, seen);
}

function afterLookup(ctx: Context, visit: Visit, seen: Lookup): boolean | Promise<boolean> {
  const { runtime, options, slot } = visit;
  if ('error' in seen) {
    runtime.log.error('log_cache_get_failed', { key: slot.key, error: errorText(seen.error) });
    return bypassed(ctx, 'STORE-ERROR');
  }
  if ('found' in seen) return hit(ctx, visit, seen.found, seen.at);
  if ('stale' in seen) return staleHit(ctx, visit, seen.stale, seen.at);
  ctx.response.set('x-cache', 'MISS');
  if ('pass' in seen) {
    statusMiss(ctx, 'miss');
    return passed(ctx, visit, seen.pass, 'log_hit_for_miss');
  }
  visit.fallback = seen.fallback;
  statusMiss(ctx, seen.miss);
  if (!options.cacheSingleFlight) return solo(visit, seen.miss);
  return fly(ctx, visit, seen.miss);
}

/** What a refresh looks up: nothing, it goes to the action (or joins the build under way). */
const refreshing: Lookup = { miss: 'request' };

function bypassed(ctx: Context, detail: string): false {
  statusBypass(ctx, detail);
  return false;
}

/** A fresh entry, found fresh at `at`: replayed. */
function hit(ctx: Context, visit: Visit, entry: CacheEntry, at: number): true {
  const { state, runtime, options, slot } = visit;
  replayEntry(ctx, state, entry);
  statusHit(ctx, remainingMs(entry, at));
  runtime.log.debug('log_cache_hit', { key: slot.key });
  const headers = ctx.request.headers;
  // The pipeline's answer can be given again only when nothing it reads can differ: see hit/prepared.ts.
  if (
    options === state.config &&
    typeof options.lastModified !== 'function' &&
    headers['if-none-match'] === undefined &&
    headers['if-modified-since'] === undefined
  ) {
    state.preparedKey = slot.key;
    state.preparedEntry = entry;
  }
  return true;
}

/** An entry past its TTL within its stale-while-revalidate window: replayed at once, and refreshed in the background. */
function staleHit(ctx: Context, visit: Visit, entry: CacheEntry, at: number): true {
  const { state, runtime, slot } = visit;
  replayEntry(ctx, state, entry);
  ctx.res.setHeader('x-cache', 'STALE');
  statusStale(ctx, at - entry.expires);
  runtime.log.debug('log_cache_stale', { key: slot.key });
  revalidate(ctx, runtime, slot.key);
  return true;
}

/**
 * Called by the middleware when the pipeline is about to begin: true when a
 * cache hit got the answer the pipeline gave the same inputs before (a
 * prepared hit, see hit/prepared.ts), so the pipeline is skipped. It reads
 * the response's options as the middleware resolved them after the action.
 *
 * @param ctx - the request
 * @param state - its koa-buffer state
 */
export function answeredAsPrepared(ctx: Context, state: CacheRequestState): boolean {
  const { preparedKey, preparedEntry, cache } = state;
  if (preparedKey === undefined || preparedEntry === undefined || cache === undefined) return false;
  // Sections and ctx.state.buffer may have changed the options since the lookup; the middleware resolved them again.
  if (state.options !== state.config) return false;
  return cache.prepared.answer(ctx, state, preparedKey, preparedEntry);
}

// --- single flight ----------------------------------------------------------

/** Joins the key's flight in this process, or opens one: builds, watches, or replays what the last look found. */
async function fly(ctx: Context, visit: Visit, forward: Forward): Promise<boolean> {
  const { runtime, slot, options } = visit;
  const joined = runtime.table.get(slot.key);
  if (joined !== undefined) {
    // Another request of this process builds (or watches) the key.
    runtime.log.debug('log_waiting', { key: slot.key });
    return answer(ctx, visit, await joined.done, forward);
  }
  const flight = new Flight(runtime, slot, options.cacheLockTimeout * 1000);
  if (runtime.lock !== undefined) {
    const taken = await flight.takeLock();
    if (taken === 'busy' && flight.outcome === undefined) {
      // Another process builds; this request watches the shared store for the process.
      runtime.log.debug('log_waiting_worker', { key: slot.key });
      const turn = await flight.watch(options.cacheWaitFailure);
      if (turn !== 'build') return answer(ctx, visit, turn, forward);
      build(visit, flight, forward);
      return false;
    }
    // A failing backend never stops a build: this process builds with its own flight (docs/decisions.md, "Locks").
    if (typeof taken === 'object') runtime.log.error('log_lock_failed', { key: slot.key, error: taken.error });
  }
  if (flight.outcome === undefined) {
    // lua-resty-lock's step 3: a page stored between the miss and the lock is replayed, not rebuilt.
    const again = await lookup(slot);
    if ('error' in again) runtime.log.error('log_cache_get_failed', { key: slot.key, error: errorText(again.error) });
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
  build(visit, flight, forward);
  return false;
}

/** This request builds the key: its response is judged as sent, then stored, its flight settled and its lock released. */
function build(visit: Visit, flight: Flight, forward: Forward): void {
  const { state, runtime, slot } = visit;
  runtime.log.debug('log_building', { key: slot.key });
  const storing = { handedOver: false };
  let answeredStale = false;
  const fallback = visit.fallback;
  if (fallback !== undefined)
    state.answerStale = (ctx, error) => {
      const status = ctx.response.status;
      if (error === undefined && status < 500) return false;
      answeredStale = true;
      const detail = error === undefined ? 'STATUS' : 'ERROR';
      runtime.log.error('log_stale_if_error', {
        key: slot.key,
        detail: error === undefined ? `status ${status}` : errorText(error),
      });
      // Nothing of the failed response is kept, as Koa's own error answer keeps nothing.
      for (const name of ctx.res.getHeaderNames()) ctx.res.removeHeader(name);
      replayEntry(ctx, state, fallback);
      ctx.res.setHeader('x-cache', 'STALE');
      statusStaleOnError(ctx, Date.now() - fallback.expires, detail, error === undefined ? status : undefined);
      // The waiters answer from their own stale entries (see waitFailed).
      flight.settle({ failure: serverError });
      return true;
    };
  state.storeEntry = storer(visit, flight, forward, storing);
  state.onFinish.push(async (ctx) => {
    // Handed over: the judge of the head as sent ends the flight.
    if (storing.handedOver) return;
    if (!answeredStale) {
      // STORE never ran: the action threw, or CHECK left the response alone (a stream, koa-buffer off …).
      const detail: FlightFailure = state.failed ? 'ERROR' : 'NOT-BUFFERED';
      statusNotStored(ctx, detail);
      if (detail === 'ERROR') flight.settle({ failure: detail });
      else await notStorable(visit, flight, detail);
    }
    await flight.close();
  });
}

/**
 * The STORE step's hand-over of a build (with a flight) or of a miss
 * without one: the response as the action left it is judged at once (a page
 * that can never be stored frees its waiters now), and if it may be stored,
 * judged again on the head as sent, after every outer middleware has run
 * (../http/sent-head.ts), and only then handed to waiters and stored.
 */
function storer(
  visit: Visit,
  flight: Flight | undefined,
  forward: Forward,
  storing: { handedOver: boolean },
): NonNullable<CacheRequestState['storeEntry']> {
  const { runtime, options, slot } = visit;
  return (response, ctx) => {
    storing.handedOver = true;
    const early = notStorableReason(response, options);
    if (early !== undefined) return refused(ctx, visit, flight, early, response.status);
    beforeHeadIsSent(ctx.res, (head) => {
      if (head === undefined) {
        // The client left and Koa never sent the response: what the outer middleware would have added is unknown.
        runtime.log.debug('log_not_stored', { key: slot.key, reason: 'ABANDONED' });
        flight?.settle({ failure: abandoned });
        return undefined;
      }
      const reason = notStorableAsSent(head, response, options);
      if (reason !== undefined) return refused(ctx, visit, flight, reason, head.status);
      return stored(ctx, visit, flight, response, head, forward);
    });
    return undefined;
  };
}

/** A storable build: its waiters answered, then the entry written, then the lock released. */
async function stored(
  ctx: Context,
  visit: Visit,
  flight: Flight | undefined,
  response: StoreableResponse,
  head: SentHead,
  forward: Forward,
): Promise<void> {
  const { options, slot } = visit;
  const lifetime = lifetimeFor(ctx, response, options);
  const made = withOrigin(ctx, visit, entryOf(response, lifetime));
  if (made === undefined) return refused(ctx, visit, flight, 'TAG', response.status);
  const sealed = await seal(made);
  // Waiters in this process are answered now, before the store is written to.
  flight?.settle({ entry: sealed.entry, vary: builderVary(ctx, head, options.varyBy) });
  if (purgedMeanwhile(ctx, visit, sealed.entry)) return void (await flight?.close());
  const written = await write(slot, sealed.value, storeMs(lifetime));
  // A refresh replaced an entry other processes may hold in their near caches.
  if (written && slot.notBefore > 0) await slot.purges?.announce();
  if (written) statusStored(ctx, forward);
  else statusNotStored(ctx, 'STORE-ERROR');
  // After the write, so a watcher in another process that finds the lock free also finds the entry.
  await flight?.close();
}

/** A build that may not be stored, for `reason`: said so, and its waiters freed (a 5xx fails them instead). */
function refused(
  ctx: Context,
  visit: Visit,
  flight: Flight | undefined,
  reason: string,
  status: number,
): Promise<void> | undefined {
  statusNotStored(ctx, reason);
  visit.runtime.log.debug('log_not_stored', { key: visit.slot.key, reason });
  if (flight === undefined) return undefined;
  if (reason === 'STATUS' && status >= 500) {
    flight.settle({ failure: serverError });
    return undefined;
  }
  return notStorable(visit, flight, reason);
}

/**
 * Ends a flight whose page cannot be shared: its waiters run the action
 * themselves, and the key is marked hit-for-miss before the lock is
 * released, so a process that finds the lock free finds the marker too.
 */
async function notStorable(visit: Visit, flight: Flight, reason: string): Promise<void> {
  flight.settle({ failure: reason }, { keepLock: true });
  await markNotStorable(visit.slot, reason, visit.options.cacheHitForMiss);
  await flight.close();
}

/**
 * The entry with what a purge matches it by: the request's host and URL, the
 * response's tags, and when the request looked the key up. Undefined when a
 * tag is not one (logged): an entry no purge of that tag could reach is not stored.
 */
function withOrigin(ctx: Context, visit: Visit, entry: CacheEntry): CacheEntry | undefined {
  const { state, runtime, options, slot } = visit;
  // The options as resolved after the action: it may have set ctx.state.buffer.cacheTags after its miss.
  const tags = responseTags((state.options ?? options).cacheTags, state.tagHeader);
  if ('bad' in tags) {
    runtime.log.error('log_cache_tag_invalid', { key: slot.key, tag: JSON.stringify(tags.bad) });
    return undefined;
  }
  const path = ctx.originalUrl;
  entry.origin = { host: ctx.request.host.toLowerCase(), path, tags, since: visit.since };
  return entry;
}

/** True when a purge this process knows of came after the lookup (no resurrection): the build is served, not stored. */
function purgedMeanwhile(ctx: Context, visit: Visit, entry: CacheEntry): boolean {
  const purges = visit.slot.purges;
  if (purges === undefined || !purges.purgedNow(entry.origin, entry.created, visit.purgesSeen)) return false;
  statusNotStored(ctx, 'PURGED');
  visit.runtime.log.debug('log_not_stored', { key: visit.slot.key, reason: 'PURGED' });
  return true;
}

/** The failure a build that answered 5xx ends its flight with: its waiters may answer stale. */
const serverError = 'SERVER-ERROR';
/** The failure of a flight whose builder's client left before the response was sent: a waiter builds instead. */
const abandoned = 'ABANDONED';
/** The failure of a flight that found the key marked not storable: its waiters run the action. */
const hitForMiss = 'HIT-FOR-MISS';

/** Flight failures after which a waiter holding an entry within its stale-if-error window answers it. */
const failedBuild = new Set<FlightFailure>(['TIMEOUT', 'ERROR', 'NO-ENTRY', 'LOCK-ERROR', serverError]);

/**
 * Flight failures that say the build is fine but cannot be shared (it set a
 * cookie, is private, varies, answered another status, was not buffered, …):
 * every other failure is a build that failed or took too long.
 */
function cannotBeShared(failure: FlightFailure): boolean {
  return !failedBuild.has(failure) && failure !== abandoned;
}

/**
 * The entry's TTL and stale windows: a value set for this response
 * (`ctx.state.buffer`, `ctx.bufferIsCached({cacheDuration})`) first, then
 * the response's Cache-Control, then the options (lifetime.ts). The values
 * set for the response are those resolved once the action was done.
 */
function lifetimeFor(ctx: Context, response: StoreableResponse, options: ResolvedOptions): Lifetime {
  const fromResponse = lifetimeOf(response.headers['cache-control'], options);
  const resolved = (ctx as WithRequestState)[requestStateKey]?.options ?? options;
  const set = (name: string): boolean => resolved.overridden.has(name);
  return boundedLifetime({
    ttl: set('cacheDuration') ? resolved.cacheDuration : fromResponse.ttl,
    staleWhileRevalidate: set('cacheStaleWhileRevalidate')
      ? resolved.cacheStaleWhileRevalidate
      : fromResponse.staleWhileRevalidate,
    staleIfError: set('cacheStaleIfError') ? resolved.cacheStaleIfError : fromResponse.staleIfError,
  });
}

/** The builder's request headers its response (as sent) varies on; Cookie not when the key holds the cookies that count. */
function builderVary(
  ctx: Context,
  head: SentHead,
  varyBy: readonly string[],
): Record<string, string | undefined> | undefined {
  const vary = head.headers.vary;
  const fields = varyFields(vary === undefined ? undefined : Array.isArray(vary) ? vary : String(vary));
  if (fields.length === 0) return undefined;
  const values: Record<string, string | undefined> = {};
  for (const name of fields) if (name !== 'cookie' || !keysOnCookies(varyBy)) values[name] = requestHeader(ctx, name);
  return values;
}

function requestHeader(ctx: Context, name: string): string | undefined {
  const value = ctx.request.headers[name];
  return Array.isArray(value) ? value.join('\n') : value;
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
      if (requestHeader(ctx, name) !== value) return passed(ctx, visit, 'VARY', 'log_pass');
  }
  replayEntry(ctx, visit.state, outcome.entry);
  statusCollapsed(ctx);
  return true;
}

/**
 * A request whose page cannot come from another's build (hit-for-miss, or
 * the build it waited for cannot be shared): it runs the action itself,
 * like a miss without single flight, and its own response is stored if it may be.
 */
function passed(ctx: Context, visit: Visit, detail: string, key: 'log_pass' | 'log_hit_for_miss'): false {
  visit.runtime.log.debug(key, { key: visit.slot.key, detail });
  return solo(visit, 'miss');
}

/** The build waited for failed or took too long: 503, or with cacheWaitFailure 'run' the action runs. */
function waitFailed(ctx: Context, visit: Visit, detail: FlightFailure): boolean {
  const { runtime, options, slot, fallback } = visit;
  if (fallback !== undefined && failedBuild.has(detail)) {
    // stale-if-error: the entry found past its TTL is better than a 503.
    replayEntry(ctx, visit.state, fallback);
    ctx.res.setHeader('x-cache', 'STALE');
    statusStaleOnError(ctx, Date.now() - fallback.expires, detail);
    runtime.log.debug('log_stale_if_error', { key: slot.key, detail });
    return true;
  }
  statusCollapsedFailed(ctx, detail);
  if (options.cacheWaitFailure === 'run') return solo(visit, 'miss');
  runtime.log.debug('log_gave_up', { key: slot.key, detail });
  retryLater(ctx, runtime.log.messages, detail === 'TIMEOUT' ? 'retry_later' : 'retry_later_failed');
  return true;
}

// --- no single flight ---------------------------------------------------------

/** The action runs and its response is stored when sent, without a flight. */
function solo(visit: Visit, forward: Forward): false {
  const { state } = visit;
  const storing = { handedOver: false };
  state.storeEntry = storer(visit, undefined, forward, storing);
  state.onFinish.push((ctx) => {
    if (!storing.handedOver) statusNotStored(ctx, state.failed ? 'ERROR' : 'NOT-BUFFERED');
  });
  return false;
}
