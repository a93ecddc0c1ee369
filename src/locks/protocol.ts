/**
 * The cache-lock protocol (docs/architecture.md, "The locks"): what every
 * lock backend — FileLock, RedisLock, MemoryLock or one of your own — offers
 * to the middleware and to the waiting {@link Lock}.
 *
 * Results are tuples rather than exceptions, so "busy" is an ordinary value
 * and a failing backend never stops a page from being built.
 */

/**
 * What `acquire` answers:
 * - `[guard, undefined]` — taken; keep the guard and give it to `release`;
 * - `[null, undefined]` — another holder has it (busy), possibly this very process;
 * - `[null, message]` — the backend failed; `message` says why, in the words of the catalog.
 */
export type AcquireResult<G> =
  [guard: G, error: undefined] | [guard: null, error: undefined] | [guard: null, error: string];

/**
 * What `release` and `expire` answer: `[true, undefined]` on success,
 * `[false, message]` on failure.
 */
export type ReleaseResult = [ok: true, error: undefined] | [ok: false, error: string];

/** The options `acquire` may take. */
export interface AcquireOptions {
  /**
   * Seconds the lock may live when nobody releases it, for backends with a
   * time to live (Redis, Memory); FileLock ignores it, since a dead process
   * frees its flock at once. The waiting {@link Lock} passes its `exptime` here.
   */
  ttl?: number;
}

/** The options `waitForRelease` takes. */
export interface WaitOptions extends AcquireOptions {
  /**
   * Longest stretch, in milliseconds, a backend whose wake-ups may be lost
   * (Redis pub/sub) waits without news before it tries again anyway.
   */
  pollMs?: number;
}

/** A value or a Promise of it: backends may answer synchronously or not. */
export type MaybePromise<T> = T | Promise<T>;

/**
 * A lock backend. `G` is the backend's opaque guard.
 *
 * Contract: `acquire` never waits for a busy lock and never throws
 * (a throw is treated as a failure by the callers anyway); `release` of a
 * `null`/`undefined` guard, or of a guard already released, answers
 * `[true, undefined]` and does nothing. A lock is not re-entrant: a second
 * `acquire` of a held key is busy, whoever asks.
 *
 * @example
 * const [guard, error] = await backend.acquire('nightly-report');
 * if (error !== undefined) throw new Error(error);
 * if (guard === null) process.exit(0); // another copy is running
 * try { await build(); } finally { await backend.release(guard); }
 */
export interface LockBackend<G = unknown> {
  /**
   * Tries once, without waiting, to take the lock of `key`.
   *
   * @param key - any string, the empty string and emoji included
   * @param options - `ttl` in seconds, for backends with a time to live
   * @returns see {@link AcquireResult}
   */
  acquire(key: string, options?: AcquireOptions): MaybePromise<AcquireResult<G>>;

  /**
   * Gives the lock back.
   *
   * @param guard - what `acquire` returned; `null`/`undefined` or a released guard is ignored
   * @returns see {@link ReleaseResult}
   */
  release(guard: G | null | undefined): MaybePromise<ReleaseResult>;

  /**
   * Resets the time to live of a held lock to `ttl` seconds, only if the
   * guard still owns it. Backends without a time to live leave it out.
   *
   * @returns `[true, undefined]`, or `[false, message]` when the lock was lost or the backend failed
   */
  expire?(guard: G, ttl: number): MaybePromise<ReleaseResult>;

  /**
   * Takes the lock of `key`, waiting up to `ms` milliseconds for its holder
   * to release it, and woken by that release rather than by polling. The
   * waiting {@link Lock} uses it instead of its growing sleeps when present.
   * Must never block the event loop, and must leave nothing held or open
   * when it gives up.
   *
   * @param key - any string
   * @param ms - longest wait, in milliseconds
   * @param options - `ttl` as for `acquire`; `pollMs`, the longest wait between tries without news
   * @returns as `acquire`; busy (`[null, undefined]`) when `ms` passed without getting it
   */
  waitForRelease?(key: string, ms: number, options?: WaitOptions): Promise<AcquireResult<G>>;

  /**
   * Seconds a lock lives when nobody releases it, for backends with a time to
   * live; as the `cacheLock` option, it must outlast `cacheLockTimeout`.
   */
  readonly ttl?: number;

  /**
   * True for backends that keep their locks in Redis: the middleware then
   * hands them each cache key as a Redis Cluster hash tag (`{buffer:<md5>}`),
   * the tag the Redis cache store puts in the entry's key, so on a Cluster an
   * entry and its lock live in one hash slot. Keys you pass yourself are never
   * changed.
   */
  readonly hashTagCacheKeys?: boolean;
}

/** The `cacheLock` option of `buffer()`: any lock backend (answers sync or async). */
export type CacheLock = LockBackend;
