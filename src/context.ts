/**
 * What koa-buffer keeps per request, and the `ctx.bufferIsCached()` method it
 * installs (SPEC 2), typed by augmenting Koa's context.
 *
 * The state lives on the context under a private symbol, so it goes when the
 * request does and no enumerable or string-named property is added to `ctx`
 * beyond the documented method. Not a WeakMap keyed by the context: every
 * request would add an ephemeron, which each scavenge must process
 * specially, and on a cache hit that made the collector's share of a
 * request four times larger (bench/cache.bench.ts).
 * The server-side cache (SPEC 7) hooks in here: it marks replayed responses,
 * receives the optimised, uncompressed entity through `storeEntry`, and
 * answers its waiters from `onFinish`, which the middleware runs in a
 * `finally`, also when a step throws.
 */
import type { Context } from 'koa';
import { isCached } from './cache/cached.ts';
import type { CacheEntry } from './cache/entry.ts';
import type { CacheRuntime } from './cache/runtime.ts';
import type { ResolvedOptions } from './options.ts';

declare module 'koa' {
  interface DefaultContext {
    /**
     * Looks the response up in the server-side cache (SPEC 7). Resolves true
     * when koa-buffer has sent, or will send, the response (a cache hit, or a
     * request now waiting for another one building it): the action should
     * then just return. False when the action must do its work.
     *
     * @example
     * app.use(async (ctx) => {
     *   if (await ctx.bufferIsCached()) return;
     *   ctx.body = await slowReport();
     * });
     */
    bufferIsCached(): Promise<boolean>;
  }
}

/** The response the STORE step hands over: the optimised, uncompressed entity. */
export interface StoreableResponse {
  status: number;
  /** Response headers, lowercased names, without Content-Encoding and Content-Length (they describe one representation). */
  headers: Record<string, string | string[]>;
  /** The optimised, uncompressed entity. */
  body: Buffer;
}

/** Per-request state. */
export interface RequestState {
  /** The `buffer()` options. */
  readonly config: ResolvedOptions;
  /**
   * True when the body was replayed (a cache hit, or a waiter answered from
   * another request's build): it was optimised when it was built, so
   * OPTIMISE is skipped, and it is not stored again.
   */
  replayed: boolean;
  /**
   * Called by the STORE step, between COMPRESS and VALIDATE, when the cache wants this response.
   * It gets the context as an argument rather than closing over it, so a closure kept by a
   * flight or a lock never keeps a whole request alive.
   */
  storeEntry: ((entry: StoreableResponse, ctx: Context) => void | Promise<void>) | undefined;
  /** Run after SEND, in a finally, also when a step or the action threw (answer waiters, release locks); gets the context, as storeEntry does. */
  readonly onFinish: Array<(ctx: Context) => void | Promise<void>>;
  /** The server-side cache of the middleware that opened this state. */
  readonly cache: CacheRuntime | undefined;
  /** The first answer of `bufferIsCached()`, which later calls return. */
  cacheAnswer: Promise<boolean> | undefined;
  /** True when the action or a pipeline step threw (set before onFinish runs). */
  failed: boolean;
  /**
   * Set on a cache hit whose pipeline answer may be given again (see
   * cache/prepared.ts): the key and the entry replayed. Plain fields, not a
   * hook closing over them: a hit allocates as little as it can.
   */
  preparedKey: string | undefined;
  preparedEntry: CacheEntry | undefined;
  /**
   * True when the answer is the cold one while the body's hot upgrade waits
   * (response/upgrades.ts): it is not remembered as a prepared hit, so a
   * later hit gets the smaller bytes.
   */
  provisional: boolean;
}

const stateKey = Symbol('koa-buffer request state');

/** The context with koa-buffer's state on it. */
type WithState = Context & { [stateKey]?: RequestState };

/** The state of a request `buffer()` has seen, or undefined. */
export function requestState(ctx: Context): RequestState | undefined {
  return (ctx as WithState)[stateKey];
}

/** Starts the state of a request. */
export function openState(ctx: Context, config: ResolvedOptions, cache?: CacheRuntime): RequestState {
  const state: RequestState = {
    config,
    replayed: false,
    storeEntry: undefined,
    onFinish: [],
    cache,
    cacheAnswer: undefined,
    failed: false,
    preparedKey: undefined,
    preparedEntry: undefined,
    provisional: false,
  };
  (ctx as WithState)[stateKey] = state;
  return state;
}

/**
 * The `ctx.bufferIsCached` installed on every request (one shared function,
 * so installing it allocates nothing). The first call decides (see
 * cache/cached.ts); a later call returns the same answer and changes nothing.
 */
export function bufferIsCached(this: Context): Promise<boolean> {
  const state = (this as WithState)[stateKey];
  if (!state || state.cache === undefined) return Promise.resolve(false);
  state.cacheAnswer ??= isCached(this, state, state.cache);
  return state.cacheAnswer;
}
