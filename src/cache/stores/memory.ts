/**
 * `cache: true`: an in-process LRU bounded in bytes, on lru-cache. Each
 * worker process has its own, so it suits one process; workers that must
 * share entries use the SQLite or Redis store.
 */
import { Buffer } from 'node:buffer';
import { LRUCache } from 'lru-cache';
import { plainGet } from '../../base/lru-get.ts';
import { normaliseTtl, type CacheStore } from '../../base/store.ts';

/** Options of {@link MemoryStore}. */
export interface MemoryStoreOptions {
  /**
   * Most bytes of keys and values held at once; the least recently used
   * entries go first to make room. A single value larger than this is not kept.
   * @defaultValue 64 MiB (67,108,864)
   */
  maxBytes?: number;
}

/** What the memory store holds: bytes, or text counted as UTF-8. */
type Stored = Uint8Array | string;

/**
 * An in-memory LRU that never holds more than `maxBytes` bytes of keys and
 * values, with a TTL per `set`. Its methods are synchronous.
 *
 * Values are kept by reference, not copied: koa-buffer hands it fresh Buffers
 * from `encodeEntry` and never writes into them.
 *
 * @example
 * const store = new MemoryStore({ maxBytes: 16 * 1024 * 1024 });
 * store.set('k', encodeEntry(entry), 600_000);
 */
export class MemoryStore implements CacheStore {
  /** The byte bound given to the constructor. */
  readonly maxBytes: number;
  readonly #lru: LRUCache<string, Stored>;

  /**
   * @param options - see {@link MemoryStoreOptions}
   * @throws RangeError when `maxBytes` is not a positive safe integer
   */
  constructor({ maxBytes = 64 * 1024 * 1024 }: MemoryStoreOptions = {}) {
    if (!Number.isSafeInteger(maxBytes) || maxBytes <= 0) {
      throw new RangeError(`MemoryStore maxBytes must be a positive integer number of bytes, got ${String(maxBytes)}`);
    }
    this.maxBytes = maxBytes;
    this.#lru = new LRUCache<string, Stored>({
      maxSize: maxBytes,
      // lru-cache refuses a size of 0, and an empty key with an empty value still costs something.
      sizeCalculation: (value, key) => Math.max(1, byteLength(value) + Buffer.byteLength(key)),
    });
  }

  /**
   * @param key - the key
   * @returns the value, or `undefined` when absent or expired
   */
  get(key: string): Stored | undefined {
    return this.#lru.get(key, plainGet);
  }

  /**
   * Stores `value`, evicting least recently used entries to stay within `maxBytes`.
   * @param key - the key
   * @param value - bytes (a Buffer or Uint8Array) or a string
   * @param ttlMs - milliseconds to keep it; `undefined` or `0` for no expiry
   * @returns true when kept, false when the value alone is larger than `maxBytes`
   * @throws TypeError when `value` is neither bytes nor a string
   * @throws RangeError when `ttlMs` is negative or not finite
   */
  set(key: string, value: unknown, ttlMs?: number): boolean {
    if (!(value instanceof Uint8Array) && typeof value !== 'string') {
      throw new TypeError(`MemoryStore stores bytes or strings, got ${value === null ? 'null' : typeof value}`);
    }
    const ttl = normaliseTtl(ttlMs);
    this.#lru.set(key, value, ttl === undefined ? undefined : { ttl });
    return this.#lru.has(key);
  }

  /**
   * @param key - the key
   * @returns true when something was removed
   */
  delete(key: string): boolean {
    return this.#lru.delete(key);
  }

  /** Removes every entry. */
  clear(): void {
    this.#lru.clear();
  }

  /** Bytes of keys and values held now; never more than {@link MemoryStore.maxBytes}. */
  get bytes(): number {
    return this.#lru.calculatedSize;
  }

  /** Number of entries held now (expired ones may linger until touched or evicted). */
  get size(): number {
    return this.#lru.size;
  }
}

function byteLength(value: Stored): number {
  return typeof value === 'string' ? Buffer.byteLength(value) : value.byteLength;
}
