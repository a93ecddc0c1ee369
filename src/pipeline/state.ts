/**
 * What koa-buffer keeps per request, and the type of the `ctx.bufferIsCached()`
 * method it installs, added to Koa's context by augmentation; the method
 * itself is the cache's (cache/cached.ts).
 *
 * The state is kept on the context under a private symbol (see
 * cache/request-state.ts, which also says why not a WeakMap).
 * The server-side cache hooks in here: it marks replayed responses,
 * receives the optimised, uncompressed entity through `storeEntry`, and
 * answers its waiters from `onFinish`, which the middleware runs in a
 * `finally`, also when a step throws.
 */
import type { Context } from 'koa';
import type { CacheRuntime } from '../cache/runtime.ts';
import {
  requestStateKey,
  type CacheRequestState,
  type StoreableResponse,
  type WithRequestState,
} from '../cache/request-state.ts';
import type { ResolvedOptions } from '../config/options.ts';
import type { BufferIsCachedOptions } from '../cache/cached.ts';

export type { StoreableResponse, BufferIsCachedOptions };

declare module 'koa' {
  interface DefaultContext {
    /**
     * Looks the response up in the server-side cache. Resolves true
     * when koa-buffer has sent, or will send, the response (a cache hit, or a
     * request now waiting for another one building it): the action should
     * then just return. False when the action must do its work.
     *
     * `overrides` set this response's cache duration and tags, as
     * koa-cash's `ctx.cashed(maxAge)` does; they are kept in `ctx.state.buffer`.
     * A value `buffer()` would refuse is left out with a log line; the
     * promise never rejects for them.
     *
     * @example
     * app.use(async (ctx) => {
     *   if (await ctx.bufferIsCached({ cacheDuration: '1 hour' })) return;
     *   ctx.body = await slowReport();
     * });
     */
    bufferIsCached(overrides?: BufferIsCachedOptions): Promise<boolean>;
  }
}

/**
 * Per-request state. Every field of it today serves the cache's hooks or the
 * pipeline steps the cache takes part in, so the cache declares it (see
 * cache/request-state.ts); anything the cache need not see goes here.
 */
export type RequestState = CacheRequestState;

type WithState = WithRequestState<RequestState>;

/** The state of a request `buffer()` has seen, or undefined. */
export function requestState(ctx: Context): RequestState | undefined {
  return (ctx as WithState)[requestStateKey];
}

/** Starts the state of a request. */
export function openState(ctx: Context, config: ResolvedOptions, cache?: CacheRuntime): RequestState {
  const state: RequestState = {
    config,
    options: config,
    refusalsLogged: undefined,
    replayed: false,
    storeEntry: undefined,
    answerStale: undefined,
    onFinish: [],
    cache,
    cacheAnswer: undefined,
    failed: false,
    preparedKey: undefined,
    preparedEntry: undefined,
    upgradeWaits: undefined,
    tagHeader: undefined,
  };
  (ctx as WithState)[requestStateKey] = state;
  return state;
}
