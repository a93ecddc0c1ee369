/**
 * A near cache: an in-process copy of the entries a shared store (SQLite,
 * Redis) answered, so a hit costs what an in-memory hit costs
 * (docs/decisions/0027-near-cache.md). It stays coherent by three rules:
 * a value is kept no longer than its own expiry; every purge, made here or
 * seen through the store's generation (purge/book.ts), empties it; and
 * writes and deletes go through it to the store. A deploy is judged by the
 * lookup on every hit, as for any store.
 */
import { encodedExpiry } from '../entry.ts';
import { MemoryStore } from './memory.ts';
import type { CacheStore } from '../../base/store.ts';
import { isThenable } from '../../base/thenable.ts';

/** A shared store with an in-process copy of its entries in front. */
export class NearStore implements CacheStore {
  /** The shared store behind. */
  readonly store: CacheStore;
  readonly #near: MemoryStore;
  /** Bumped when emptied: a read begun before does not put an older value back. */
  #epoch = 0;

  /**
   * @param store - the shared store
   * @param maxBytes - bytes the copy holds at most (`cacheNearBytes`)
   */
  constructor(store: CacheStore, maxBytes: number) {
    this.store = store;
    this.#near = new MemoryStore({ maxBytes });
  }

  /** Bytes the in-process copy holds, and its bound. */
  get bytes(): number {
    return this.#near.bytes;
  }

  get maxBytes(): number {
    return this.#near.maxBytes;
  }

  get(key: string): unknown {
    const near = this.#near.get(key);
    if (near !== undefined) return near;
    const epoch = this.#epoch;
    const value = this.store.get(key);
    if (isThenable(value)) return Promise.resolve(value).then((found) => this.#keep(key, found, epoch));
    return this.#keep(key, value, epoch);
  }

  set(key: string, value: unknown, ttlMs?: number): unknown {
    const epoch = this.#epoch;
    const done = this.store.set(key, value, ttlMs);
    if (isThenable(done)) return Promise.resolve(done).then((result) => (this.#keep(key, value, epoch), result));
    this.#keep(key, value, epoch);
    return done;
  }

  delete(key: string): unknown {
    this.#near.delete(key);
    return this.store.delete(key);
  }

  /** Forgets every copy (a purge was seen). */
  clear(): void {
    this.#epoch++;
    this.#near.clear();
  }

  close(): unknown {
    this.clear();
    return (this.store as { close?: () => unknown }).close?.call(this.store);
  }

  /** Keeps a copy of an entry until its expiry; anything else is not copied. */
  #keep(key: string, value: unknown, epoch: number): unknown {
    if (epoch !== this.#epoch || !(value instanceof Uint8Array)) return value;
    const expires = encodedExpiry(value);
    const ttl = expires === undefined ? 0 : expires - Date.now();
    if (ttl >= 1) this.#near.set(key, value, ttl);
    return value;
  }
}
