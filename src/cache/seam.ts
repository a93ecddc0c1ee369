/**
 * What the pipeline may call of the cache, in the order a request calls it:
 *
 *   lookup    when the action asks (`ctx.bufferIsCached()`): a hit, a wait
 *             answered, a build, or a bypass
 *   facts     what the pipeline needs to know of the answer: replayed,
 *             builds, renewed, the hit's key and entry
 *   actionDone when the action is done: the visitor's conditional headers
 *             back, a 304 to the stored validators turned into the entry
 *   failed    after the action, when it threw or answered 5xx: answered
 *             from a stale-if-error entry instead?
 *   store     at STORE: the optimised, uncompressed entity handed over
 *   storeStream on the stream path: a collector the entity is fed to as
 *             it is sent, stored when the stream ends whole
 *   finish    after SEND, also when something threw: a build that never
 *             reached STORE ends its flight and frees its lock
 *
 * The cache keeps its per-request data to itself (visit.ts); every call
 * here finds it on the context.
 */
import type { Context } from 'koa';
import type { ResolvedOptions } from '../config/options.ts';
import { answerStaleOnFailure, finishBuild, handOver, type Handover } from './build.ts';
import { decide } from './decide.ts';
import { invalidate, writes } from './invalidate.ts';
import { renewOn304, restoreVisitorConditionals } from './revalidation.ts';
import type { CacheRuntime } from './runtime.ts';
import type { StoreableResponse } from './storable.ts';
import { handOverStream, type StreamCollector } from './streamed-build.ts';
import { visitOf, type CacheFacts } from './visit.ts';
import type { CacheEntry } from './entry.ts';
import type { Slot } from './hit/lookup.ts';

export type { CacheFacts } from './visit.ts';
export type { Handover } from './build.ts';
export type { StoreableResponse } from './storable.ts';
export type { StreamCollector } from './streamed-build.ts';

/**
 * Looks the request up: resolves true when the cache has answered it, or
 * will (a hit, a wait answered), false when the action must run. Never
 * rejects: a failing store, lock or cacheKey function costs a log line and
 * the action runs.
 *
 * @param options - the response's options as resolved when the action asked
 */
export function lookup(ctx: Context, runtime: CacheRuntime, options: ResolvedOptions): Promise<boolean> {
  // Never a failed request: whatever went wrong (a corrupt entry's header, a bug), the action runs.
  const failed = (error: unknown): false => {
    runtime.log.error('log_cache_get_failed', { key: 'for this request', error: error });
    return false;
  };
  try {
    const answer = decide(ctx, runtime, options);
    // A hit from a synchronous store is decided without a Promise; only the answer is one.
    return answer instanceof Promise ? answer.catch(failed) : Promise.resolve(answer);
  } catch (error) {
    return Promise.resolve(failed(error));
  }
}

/** What the pipeline needs to know of the request's visit; undefined when it never reached a key. */
export function facts(ctx: Context): CacheFacts | undefined {
  return visitOf(ctx);
}

/**
 * A fresh hit's slot (its store, key and purges) and entry, for a front
 * that learns the answer (front/learn.ts); undefined for anything but a
 * fresh hit of the URL's own key (a variant's key depends on more than
 * the front compares).
 */
export function hitSlot(ctx: Context): { readonly slot: Slot; readonly entry: CacheEntry } | undefined {
  const visit = visitOf(ctx);
  if (visit?.hitEntry === undefined || visit.slot.key !== visit.primaryKey) return undefined;
  return { slot: visit.slot, entry: visit.hitEntry };
}

/**
 * When the action is done, thrown or not: the visitor's own conditional
 * headers are back, and a build the action answered 304 to its stored
 * validators is renewed from the entry (revalidation.ts).
 */
export function actionDone(ctx: Context, threw: boolean): void {
  const visit = visitOf(ctx);
  if (visit?.revalidating === undefined) return;
  restoreVisitorConditionals(ctx, visit);
  if (!threw) renewOn304(ctx, visit);
}

/**
 * After the action, when it threw (`error`) or answered 5xx: true when the
 * build's stale-if-error entry answered instead (the error is then not rethrown).
 */
export function failed(ctx: Context, error: unknown): boolean {
  const visit = visitOf(ctx);
  return visit !== undefined && answerStaleOnFailure(ctx, visit, error);
}

/**
 * STORE: hands the response over when this request builds; it is judged on
 * the head as sent, then stored. A response that can never be stored frees
 * the build's waiters at once: the promise settles when they are.
 */
export async function store(ctx: Context, response: StoreableResponse, handover: Handover): Promise<void> {
  const visit = visitOf(ctx);
  if (visit !== undefined) await handOver(ctx, visit, response, handover);
}

/**
 * STORE for a stream body: when this request builds, a collector to feed
 * the uncompressed entity to while it is sent; the entry is judged on the
 * head as sent and stored when the response ends, if the stream ended on
 * its own (streamed-build.ts). Undefined when nothing is to be collected.
 */
export function storeStream(
  ctx: Context,
  response: Omit<StoreableResponse, 'body'>,
  handover: Handover,
): StreamCollector | undefined {
  const visit = visitOf(ctx);
  return visit === undefined ? undefined : handOverStream(ctx, visit, response, handover);
}

/**
 * After a successful write (POST, PUT, PATCH, DELETE … answered 2xx or 3xx):
 * purges the entries of what it changed (invalidate.ts). Undefined, not a
 * promise, for every other request.
 */
export function afterWrite(ctx: Context, runtime: CacheRuntime, cached: boolean): Promise<void> | undefined {
  return cached && writes(ctx) ? invalidate(ctx, runtime) : undefined;
}

/**
 * After SEND, also when the action or a step threw (`failed`): ends a build
 * that never reached STORE. Undefined, not a promise, when there is nothing
 * to end (every hit and every request the cache had no part in), so the
 * common case costs the caller no await.
 */
export function finish(ctx: Context, failed: boolean): Promise<void> | undefined {
  const build = visitOf(ctx)?.build;
  if (build === undefined || build.handedOver) return undefined;
  return finishBuild(ctx, visitOf(ctx)!, failed);
}
