/**
 * A request that builds its key (docs/architecture.md, "The server-side
 * cache"): its response, handed over at STORE, is judged on the head as
 * sent (after every outer middleware has run, ../http/sent-head.ts), then
 * its waiters are answered, the entry written and the lock released. A
 * build that cannot be shared frees its waiters to run the action and marks
 * the key hit-for-miss; one that fails ends its flight with the failure its
 * waiters answer by (503, stale-if-error, or their own run).
 */
import type { Context } from 'koa';
import { buildChannel, tracedEnd, tracedStart, type BuildMessage } from '../base/channels.ts';
import { errorText } from '../base/describe.ts';
import type { ResolvedOptions } from '../config/options.ts';
import { requestHeaderLines } from '../http/headers.ts';
import { beforeHeadIsSent, type SentHead } from '../http/sent-head.ts';
import { responseTags } from '../http/tags.ts';
import { statusNotStored, statusStaleOnError, statusStored, type Forward } from './cache-status.ts';
import type { CacheEntry } from './entry.ts';
import type { Flight, FlightFailure } from './flight/flight.ts';
import { lookup, markNotStorable, seal, write, type Slot } from './hit/lookup.ts';
import { encodeVaryMarker, variantKey, variantOf, variantsMax } from './vary-marker.ts';
import { replayEntry } from './hit/replay.ts';
import { askWithValidators } from './revalidation.ts';
import { boundedLifetime, keptForRevalidation, lifetimeOf, storeMs, type Lifetime } from './lifetime.ts';
import {
  entryOf,
  keysOnCookies,
  notStorableAsSent,
  notStorableReason,
  secondaryFields,
  varyFields,
  type StoreableResponse,
} from './storable.ts';
import type { Visit } from './visit.ts';

/** The failure a build that answered 5xx ends its flight with: its waiters may answer stale. */
export const serverError = 'SERVER-ERROR';
/** The failure of a flight whose builder's client left before the response was sent: a waiter builds instead. */
export const abandoned = 'ABANDONED';
/** The failure of a flight that found the key marked not storable: its waiters run the action. */
export const hitForMiss = 'HIT-FOR-MISS';

/** Flight failures after which a waiter holding an entry within its stale-if-error window answers it. */
export const failedBuild = new Set<FlightFailure>(['TIMEOUT', 'ERROR', 'NO-ENTRY', 'LOCK-ERROR', serverError]);

/**
 * This request builds the key: its response is handed over at STORE. With
 * `flight` undefined (no single flight, or a request whose page cannot come
 * from another's build) it is stored if it may be, and nobody waits for it.
 */
export function startBuild(ctx: Context, visit: Visit, flight: Flight | undefined, forward: Forward): void {
  if (flight !== undefined) visit.runtime.log.debug('log_building', { key: visit.slot.key, url: visit.url });
  const { stats } = visit.runtime.log;
  stats.builds.started++;
  // Every request that runs the action for the cache is a miss, whether it builds, runs alone or was passed.
  stats.requests.miss++;
  const traced = tracedStart(buildChannel, (): BuildMessage => ({ key: visit.slot.key, url: visit.url }));
  visit.build = { flight, forward, handedOver: false, answeredStale: false, startedAt: performance.now(), traced };
  visit.builds = true;
  // An entry with the application's validator is revalidated, not rebuilt, when the action says it holds.
  askWithValidators(ctx, visit);
}

/**
 * After the action: when it threw (`error`) or answered 5xx, and the build
 * has an entry within its stale-if-error window, that entry answers instead
 * (its waiters answer from their own). True when it did: the error is not
 * rethrown.
 */
export function answerStaleOnFailure(ctx: Context, visit: Visit, error: unknown): boolean {
  const { build, fallback, runtime, slot } = visit;
  if (build?.flight === undefined || fallback === undefined) return false;
  const status = ctx.response.status;
  if (error === undefined && status < 500) return false;
  build.answeredStale = true;
  const detail = error === undefined ? 'STATUS' : 'ERROR';
  runtime.log.error('log_stale_if_error', {
    key: slot.key,
    detail: error === undefined ? `status ${status}` : errorText(error),
  });
  // Nothing of the failed response is kept, as Koa's own error answer keeps nothing.
  for (const name of ctx.res.getHeaderNames()) ctx.res.removeHeader(name);
  replayEntry(ctx, visit, fallback);
  ctx.res.setHeader('x-cache', 'STALE');
  statusStaleOnError(
    ctx,
    runtime.log.stats,
    Date.now() - fallback.expires,
    detail,
    error === undefined ? status : undefined,
  );
  build.flight.settle({ failure: serverError });
  return true;
}

/** What the pipeline hands over with the response, as resolved once the action was done. */
export interface Handover {
  /** The options of this response (sections and `ctx.state.buffer` laid over the `buffer()` options). */
  readonly options: ResolvedOptions;
  /** The response's tag header, taken off it before it was sent; undefined when absent. */
  readonly tagHeader: string | undefined;
}

/**
 * STORE: the response as the action left it is judged at once (a page that
 * can never be stored frees its waiters now), and if it may be stored,
 * judged again on the head as sent, and only then handed to waiters and stored.
 */
export function handOver(
  ctx: Context,
  visit: Visit,
  response: StoreableResponse,
  handover: Handover,
): Promise<void> | undefined {
  const build = visit.build;
  if (build === undefined || build.handedOver) return undefined;
  build.handedOver = true;
  const { runtime, options, slot } = visit;
  const early = notStorableReason(response, options);
  if (early !== undefined) return refused(ctx, visit, early, response.status);
  beforeHeadIsSent(ctx.res, (head) => {
    if (head === undefined) {
      // The client left and Koa never sent the response: what the outer middleware would have added is unknown.
      runtime.log.debug('log_not_stored', { key: slot.key, url: slot.url, reason: 'ABANDONED' });
      build.flight?.settle({ failure: abandoned });
      return undefined;
    }
    const reason = notStorableAsSent(head, response, options);
    if (reason !== undefined) return refused(ctx, visit, reason, head.status);
    return stored(ctx, visit, response, head, handover);
  });
  return undefined;
}

/**
 * After SEND, also when a step or the action threw: a build whose response
 * never reached STORE (the action threw, or CHECK left it alone: a stream,
 * koa-buffer off …) ends its flight and releases its lock.
 */
export async function finishBuild(ctx: Context, visit: Visit, failed: boolean): Promise<void> {
  const build = visit.build;
  if (build === undefined || build.handedOver) return;
  const { flight } = build;
  timed(visit, failed ? 'failed' : 'not-stored', failed ? 'ERROR' : 'NOT-BUFFERED');
  if (failed) visit.runtime.log.stats.builds.failed++;
  if (flight === undefined) return statusNotStored(ctx, visit.runtime.log.stats, failed ? 'ERROR' : 'NOT-BUFFERED');
  if (!build.answeredStale) {
    const detail: FlightFailure = failed ? 'ERROR' : 'NOT-BUFFERED';
    statusNotStored(ctx, visit.runtime.log.stats, detail);
    if (detail === 'ERROR') flight.settle({ failure: detail });
    else await notStorable(visit, flight, detail);
  }
  await flight.close();
}

/** Records how long the build took and how it ended, once it is judged (stored, refused or failed). */
function timed(visit: Visit, result: 'stored' | 'not-stored' | 'failed', detail?: string): void {
  const build = visit.build;
  if (build === undefined) return;
  visit.runtime.log.stats.buildSeconds.observe((performance.now() - build.startedAt) / 1000);
  const traced = build.traced;
  if (traced === undefined) return;
  traced.result = result;
  traced.detail = detail;
  tracedEnd(buildChannel, traced, result === 'failed' ? new Error(`the build failed: ${detail}`) : undefined);
}

/** A storable build: its waiters answered, then the entry written, then the lock released. */
export async function stored(
  ctx: Context,
  visit: Visit,
  response: StoreableResponse,
  head: SentHead,
  handover: Handover,
): Promise<void> {
  const { options, slot } = visit;
  const { flight, forward } = visit.build!;
  timed(visit, 'stored');
  const lifetime = lifetimeFor(response, options, handover.options);
  const made = withOrigin(ctx, visit, entryOf(response, lifetime), handover);
  if (made === undefined) return refused(ctx, visit, 'TAG', response.status);
  const sealed = await seal(made);
  // Waiters in this process are answered now, before the store is written to.
  flight?.settle({ entry: sealed.entry, vary: builderVary(ctx, head, options.varyBy) });
  if (purgedMeanwhile(ctx, visit, sealed.entry)) return void (await flight?.close());
  const keepMs = storeMs(lifetime, keptForRevalidation(made.headers, lifetime, handover.options));
  if (keepMs === 0) {
    // Stale when made (max-age=0, an Expires in the past) and nothing to revalidate it by: its waiters had it, nobody else may.
    statusNotStored(ctx, visit.runtime.log.stats, 'EXPIRED');
    visit.runtime.log.debug('log_not_stored', { key: slot.key, url: slot.url, reason: 'EXPIRED' });
    return void (await flight?.close());
  }
  const place = await placeOf(ctx, visit, head, keepMs);
  if (place === undefined) {
    // A URL's variants are bounded: this one is served, not stored, and nothing else of the URL changes.
    statusNotStored(ctx, visit.runtime.log.stats, 'VARIANTS');
    visit.runtime.log.debug('log_not_stored', { key: slot.key, url: slot.url, reason: 'VARIANTS' });
    return void (await flight?.close());
  }
  const written = await write(place, sealed.value, keepMs);
  // A refresh replaced an entry other processes may hold in their near caches.
  if (written && slot.notBefore > 0) await slot.purges?.announce();
  if (written) statusStored(ctx, visit.runtime.log.stats, forward, visit.renewed);
  else statusNotStored(ctx, visit.runtime.log.stats, 'STORE-ERROR');
  // After the write, so a watcher in another process that finds the lock free also finds the entry.
  await flight?.close();
}

/**
 * Where a storable build is written: under the URL's key, or, for a page that
 * varies beyond the key (vary-marker.ts), under its variant's key, with the
 * URL's marker naming the fields and the variants kept; undefined when the
 * URL already keeps `variantsMax` other variants.
 */
async function placeOf(ctx: Context, visit: Visit, head: SentHead, ms: number): Promise<Slot | undefined> {
  const vary = head.headers.vary;
  const fields = secondaryFields(
    vary === undefined ? undefined : Array.isArray(vary) ? vary : String(vary),
    visit.options.varyBy,
  );
  const primary: Slot = { ...visit.slot, key: visit.primaryKey };
  if (fields === undefined || fields.length === 0) return primary;
  const variant = variantOf(ctx, fields);
  const seen = await lookup(primary);
  const marker = 'vary' in seen && seen.vary.fields.join('\n') === fields.join('\n') ? seen.vary : undefined;
  const variants = marker?.variants ?? [];
  if (!variants.includes(variant)) {
    if (variants.length >= variantsMax) return undefined;
    const expires = Math.max(marker?.expires ?? 0, Date.now() + ms);
    await write(primary, encodeVaryMarker({ fields, variants: [...variants, variant], expires }), expires - Date.now());
  }
  return { ...primary, key: variantKey(visit.primaryKey, variant) };
}

/** A build that may not be stored, for `reason`: said so, and its waiters freed (a 5xx fails them instead). */
export function refused(ctx: Context, visit: Visit, reason: string, status: number): Promise<void> | undefined {
  timed(visit, 'not-stored', reason);
  visit.runtime.log.stats.builds.notStorable++;
  statusNotStored(ctx, visit.runtime.log.stats, reason);
  visit.runtime.log.debug('log_not_stored', { key: visit.slot.key, url: visit.url, reason });
  const flight = visit.build?.flight;
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
export async function notStorable(visit: Visit, flight: Flight, reason: string): Promise<void> {
  flight.settle({ failure: reason }, { keepLock: true });
  await markNotStorable(visit.slot, reason, visit.options.cacheHitForMiss);
  await flight.close();
}

/**
 * The entry with what a purge matches it by: the request's host and URL, the
 * response's tags, and when the request looked the key up. Undefined when a
 * tag is not one (logged): an entry no purge of that tag could reach is not stored.
 */
function withOrigin(ctx: Context, visit: Visit, entry: CacheEntry, handover: Handover): CacheEntry | undefined {
  const { runtime, slot } = visit;
  // The options as resolved after the action: it may have set ctx.state.buffer.cacheTags after its miss.
  const tags = responseTags(handover.options.cacheTags, handover.tagHeader);
  if ('bad' in tags) {
    runtime.log.error('log_cache_tag_invalid', { key: slot.key, url: slot.url, tag: JSON.stringify(tags.bad) });
    return undefined;
  }
  const { cookie, authorization } = ctx.request.headers;
  const anonymous = cookie === undefined && authorization === undefined;
  entry.origin = { host: ctx.request.host.toLowerCase(), path: ctx.originalUrl, tags, since: visit.since, anonymous };
  return entry;
}

/** True when a purge this process knows of came after the lookup (no resurrection): the build is served, not stored. */
function purgedMeanwhile(ctx: Context, visit: Visit, entry: CacheEntry): boolean {
  const purges = visit.slot.purges;
  if (purges === undefined || !purges.purgedNow(entry.origin, entry.created, visit.purgesSeen)) return false;
  statusNotStored(ctx, visit.runtime.log.stats, 'PURGED');
  visit.runtime.log.debug('log_not_stored', { key: visit.slot.key, url: visit.url, reason: 'PURGED' });
  return true;
}

/**
 * The entry's TTL and stale windows: a value set for this response
 * (`ctx.state.buffer`, `ctx.bufferIsCached({cacheDuration})`) first, then
 * the response's Cache-Control, then the options (lifetime.ts).
 *
 * @param resolved - the response's options as resolved once the action was done
 */
function lifetimeFor(response: StoreableResponse, options: ResolvedOptions, resolved: ResolvedOptions): Lifetime {
  const fromResponse = lifetimeOf(response.headers, options);
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
  for (const name of fields)
    if (name !== 'cookie' || !keysOnCookies(varyBy)) values[name] = requestHeaderLines(ctx, name);
  return values;
}
