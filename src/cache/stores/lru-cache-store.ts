/**
 * `cache: new LRUCache(…)`: an lru-cache instance of the user's, used as a
 * store. lru-cache's `set` takes options (`{ttl}`, `{size}`), not the TTL
 * number a Keyv-compatible store takes, so it gets this adapter.
 */
import type { CacheStore } from '../../base/store.ts';

/** The part of an lru-cache `LRUCache` (versions 7 to 11) the adapter uses. */
export interface LruCacheLike {
  get(key: string): unknown;
  set(key: string, value: unknown, options?: { ttl?: number; size?: number }): unknown;
  delete(key: string): unknown;
  peek(key: string): unknown;
  readonly maxSize?: number;
  readonly sizeCalculation?: unknown;
}

/**
 * True for an lru-cache instance: its own class name, or the methods only
 * lru-cache has together (`peek`, `getRemainingTTL`, `purgeStale`), so a copy
 * of lru-cache other than koa-buffer's is recognised too.
 */
export function isLruCache(value: unknown): value is LruCacheLike {
  if (value === null || typeof value !== 'object') return false;
  const v = value as Record<string, unknown>;
  return (
    typeof v.get === 'function' &&
    typeof v.set === 'function' &&
    typeof v.delete === 'function' &&
    typeof v.peek === 'function' &&
    typeof v.getRemainingTTL === 'function' &&
    typeof v.purgeStale === 'function'
  );
}

/** Bytes of a value as a size-bounded LRUCache without its own sizeCalculation is told them. */
function sizeOf(value: unknown): number {
  if (value instanceof Uint8Array) return Math.max(1, value.byteLength);
  return typeof value === 'string' ? Math.max(1, Buffer.byteLength(value)) : 1;
}

/** A Keyv-compatible face on an LRUCache: `set(key, value, ttlMs)` becomes `set(key, value, {ttl})`. */
export class LruCacheStore implements CacheStore {
  readonly #lru: LruCacheLike;
  /** True when the cache is bounded in size but cannot size a value itself: each set says the size. */
  readonly #sized: boolean;

  /** @param lru - the user's LRUCache; it stays theirs (nothing is closed) */
  constructor(lru: LruCacheLike) {
    this.#lru = lru;
    this.#sized = typeof lru.maxSize === 'number' && lru.maxSize > 0 && typeof lru.sizeCalculation !== 'function';
  }

  get(key: string): unknown {
    return this.#lru.get(key);
  }

  set(key: string, value: unknown, ttlMs?: number): unknown {
    const ttl = typeof ttlMs === 'number' && ttlMs > 0 ? Math.ceil(ttlMs) : undefined;
    if (!this.#sized && ttl === undefined) return this.#lru.set(key, value);
    return this.#lru.set(key, value, this.#sized ? { ttl, size: sizeOf(value) } : { ttl });
  }

  delete(key: string): unknown {
    return this.#lru.delete(key);
  }
}
