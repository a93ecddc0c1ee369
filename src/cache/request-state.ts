/**
 * The part of a request's koa-buffer state the cache reads and writes,
 * declared on the cache's side so that nothing in `cache/` imports the
 * request state (context.ts builds the whole state on this), and the private
 * symbol the state is kept under on the context.
 *
 * The state lives on the context, so it goes when the request does and no
 * enumerable or string-named property is added to `ctx` beyond the
 * documented method. Not a WeakMap keyed by the context: every request would
 * add an ephemeron, which each scavenge must process specially, and on a
 * cache hit that made the collector's share of a request four times larger
 * (bench/cache.bench.ts).
 */
import type { Context } from 'koa';
import type { ResolvedOptions } from '../config/options.ts';
import type { CacheEntry } from './entry.ts';
import type { CacheRuntime } from './runtime.ts';

/** The response the STORE step hands over: the optimised, uncompressed entity. */
export interface StoreableResponse {
  status: number;
  /** Response headers, lowercased names, without Content-Encoding and Content-Length (they describe one representation). */
  headers: Record<string, string | string[]>;
  /** The optimised, uncompressed entity. */
  body: Buffer;
}

/** What the cache reads and writes in a request's state. */
export interface CacheRequestState {
  /** The `buffer()` options. */
  readonly config: ResolvedOptions;
  /**
   * The options of this response, as last resolved by resolveResponseOptions
   * (per-response.ts); undefined when `ctx.state.buffer` turns koa-buffer off.
   */
  options: ResolvedOptions | undefined;
  /**
   * The `ctx.state.buffer` whose refused values were logged, and their names
   * (per-response.ts): each is logged once per request, though the options
   * are resolved twice.
   */
  refusalsLogged: { readonly from: unknown; readonly names: Set<string | undefined> } | undefined;
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
  /**
   * Set while this request builds an entry that has a stale-if-error fallback:
   * called by the middleware when the action threw (`error`) or answered; true
   * when it answered the stale entry instead (then the error is not rethrown).
   */
  answerStale: ((ctx: Context, error: unknown) => boolean) | undefined;
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
   * pipeline/replay/prepared-hits.ts): the key and the entry replayed. Plain fields, not a
   * hook closing over them: a hit allocates as little as it can.
   */
  preparedKey: string | undefined;
  preparedEntry: CacheEntry | undefined;
  /**
   * Set when the answer is the cold one while the body's hot upgrade waits
   * (encoding/upgrades.ts): true while it still waits. A prepared hit made
   * of this answer is given only while it does, so the first hit after the
   * upgrade gets the smaller bytes, and a server too busy to finish the
   * upgrade still answers its hits the prepared way. A function that
   * answers false at once marks a cold answer whose upgrade is still to be
   * asked for (first sighting, or a full queue): never given again.
   */
  upgradeWaits: (() => boolean) | undefined;
  /** The response's tag header (`cacheTagHeader`), taken off the response to be stored with the entry. */
  tagHeader: string | undefined;
}

/** The symbol the request state is kept under on the context. */
export const requestStateKey = Symbol('koa-buffer request state');

/** The context with koa-buffer's state on it. */
export type WithRequestState<S extends CacheRequestState = CacheRequestState> = Context & { [requestStateKey]?: S };
