/**
 * The one interface every cache store meets: koa-buffer's embedded stores
 * (memory, SQLite, Redis) and whatever the user hands to the `cache` option.
 * It is Keyv's: a `Keyv` instance, any Keyv storage adapter, or a `Map` works.
 */

/**
 * A Keyv-compatible key/value store. koa-buffer gives it only Buffers made by
 * `encodeEntry` and reads them back with `decodeEntry`, so a store may return
 * the bytes as a Buffer, a Uint8Array or a JSON round trip of one.
 *
 * Contract: a method either returns (a value or a promise of one) or fails by
 * throwing or rejecting. Stores never swallow errors and never log: the
 * middleware turns a failing store into one log line and builds the page as if
 * it were a miss. A store may ignore `ttlMs`; entries carry their own expiry.
 *
 * @example
 * const store: CacheStore = new Map();                  // no TTL, fine
 * const store: CacheStore = new Keyv({ store: adapter });
 */
export interface CacheStore {
  /**
   * The value stored under `key`, or `undefined` (or `null`) when there is none.
   * @param key - a cache key, e.g. `buffer:0cc175b9c0f1b6a831c399e269772661`
   */
  get(key: string): Promise<unknown> | unknown;
  /**
   * Stores `value` under `key`, replacing any previous value.
   * @param key - a cache key
   * @param value - the encoded entry
   * @param ttlMs - milliseconds to keep it; `undefined` or `0` means no expiry (Keyv's meaning)
   */
  set(key: string, value: unknown, ttlMs?: number): Promise<unknown> | unknown;
  /**
   * Removes `key`; removing an absent key is not an error.
   * @param key - a cache key
   */
  delete(key: string): Promise<unknown> | unknown;
  /** Releases connections or files, when the store holds any. */
  close?(): Promise<unknown> | unknown;
}

/**
 * Whether `value` can serve as a {@link CacheStore}: an object (or function)
 * with `get`, `set` and `delete` methods.
 *
 * @param value - anything, typically the `cache` option
 */
export function isCacheStore(value: unknown): value is CacheStore {
  if (value === null || (typeof value !== 'object' && typeof value !== 'function')) return false;
  const store = value as Record<string, unknown>;
  return typeof store.get === 'function' && typeof store.set === 'function' && typeof store.delete === 'function';
}

/**
 * A `ttlMs` argument as the embedded stores take it: `undefined` for none
 * (`undefined` or `0`, as Keyv means them), else a whole number of ms, at least 1.
 *
 * @param ttlMs - the argument given to `set`
 * @throws RangeError when it is negative, not a number, or not finite
 */
export function normaliseTtl(ttlMs: unknown): number | undefined {
  if (ttlMs === undefined || ttlMs === 0) return undefined;
  if (typeof ttlMs !== 'number' || !Number.isFinite(ttlMs) || ttlMs < 0) {
    throw new RangeError(`ttlMs must be undefined, 0 or a positive number of milliseconds, got ${String(ttlMs)}`);
  }
  return Math.max(1, Math.ceil(ttlMs));
}
