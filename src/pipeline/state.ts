/**
 * What the pipeline keeps per request, and `ctx.bufferIsCached()`, the one
 * method koa-buffer adds to Koa's context (typed by augmentation).
 *
 * The state is the pipeline's own plain data, on the context under a
 * private symbol (so it goes when the request does, and no enumerable or
 * string-named property is added to `ctx` beyond the documented method).
 * The cache keeps its own under its own symbol (cache/visit.ts), reached
 * only through the calls of cache/seam.ts.
 */
import type { Context } from 'koa';
import { lookup } from '../cache/seam.ts';
import type { CacheRuntime } from '../cache/runtime.ts';
import type { ResolvedOptions } from '../config/options.ts';
import { layCallOverrides, resolveResponseOptions, type BufferIsCachedOptions } from '../config/per-response.ts';

export type { BufferIsCachedOptions } from '../config/per-response.ts';
export type { StoreableResponse } from '../cache/seam.ts';

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

/** The pipeline's state of one request. */
export interface RequestState {
  /** The `buffer()` options. */
  readonly config: ResolvedOptions;
  /**
   * The options of this response, as last resolved (config/per-response.ts):
   * when the action asked the cache, and again once it was done; undefined
   * when `ctx.state.buffer` turns koa-buffer off.
   */
  options: ResolvedOptions | undefined;
  /** The `ctx.state.buffer` whose refused values were logged, and their names: each is logged once per request. */
  refusalsLogged: { readonly from: unknown; readonly names: Set<string | undefined> } | undefined;
  /** The server-side cache of the middleware that opened this state; undefined without one. */
  readonly cache: CacheRuntime | undefined;
  /** The first answer of `bufferIsCached()`, which later calls return. */
  cacheAnswer: Promise<boolean> | undefined;
  /** True when the action or a pipeline step threw. */
  failed: boolean;
  /**
   * Set when the answer is the cold one while the body's hot upgrade waits
   * (encoding/upgrades.ts): true while it still waits. An answer given again
   * (replay/) is given only while it does, so the first request after the
   * upgrade gets the smaller bytes, and a server too busy to finish the
   * upgrade still answers the prepared way. A function that answers false
   * at once marks a cold answer whose upgrade is still to be asked for
   * (first sighting, or a full queue): never given again.
   */
  upgradeWaits: (() => boolean) | undefined;
  /** The response's tag header (`cacheTagHeader`), taken off the response to be stored with the entry. */
  tagHeader: string | undefined;
  /** The earlier answer a cache hit was given again (replay/), which a front may learn (front/learn.ts). */
  answeredAgain: AnswerGiven | undefined;
}

/** What a front reads of an answer given again (replay/prepared-answer.ts has the whole of it). */
export interface AnswerGiven {
  readonly body: Buffer;
  readonly coding: string;
  readonly upgradeWaits: (() => boolean) | undefined;
}

const stateKey = Symbol('koa-buffer request state');

type WithState = Context & { [stateKey]?: RequestState };

/** The state of a request `buffer()` has seen, or undefined. */
export function requestState(ctx: Context): RequestState | undefined {
  return (ctx as WithState)[stateKey];
}

/** A request's state as it starts: the options are the `buffer()` options until resolved for the response. */
class FreshState implements RequestState {
  options: ResolvedOptions | undefined;
  refusalsLogged: RequestState['refusalsLogged'] = undefined;
  cacheAnswer: Promise<boolean> | undefined = undefined;
  failed = false;
  upgradeWaits: (() => boolean) | undefined = undefined;
  tagHeader: string | undefined = undefined;
  answeredAgain: AnswerGiven | undefined = undefined;

  constructor(
    readonly config: ResolvedOptions,
    readonly cache: CacheRuntime | undefined,
  ) {
    this.options = config;
  }
}

/** Starts the state of a request. */
export function openState(ctx: Context, config: ResolvedOptions, cache: CacheRuntime | undefined): RequestState {
  const state = new FreshState(config, cache);
  (ctx as WithState)[stateKey] = state;
  return state;
}

/**
 * The `ctx.bufferIsCached` installed on every request (one shared function,
 * so installing it allocates nothing). The first call decides; a later call
 * returns the same answer and changes nothing. Never rejects: overrides it
 * cannot use are logged and left out.
 */
export function bufferIsCached(this: Context, overrides?: BufferIsCachedOptions): Promise<boolean> {
  const state = requestState(this);
  if (!state || state.cache === undefined) return Promise.resolve(false);
  if (state.cacheAnswer !== undefined) return state.cacheAnswer;
  if (overrides !== undefined) layCallOverrides(this, overrides, state.config);
  const options = resolveResponseOptions(this, state);
  // Off for this response: koa-buffer leaves it alone, headers included.
  state.cacheAnswer = options === undefined ? Promise.resolve(false) : lookup(this, state.cache, options);
  return state.cacheAnswer;
}
