/**
 * What one `buffer()` middleware keeps for its server-side cache: the lock
 * backend (built once, from `cacheLock` or `cacheLockDir`), the stores the
 * `cache` option names (opened on first use, so a `redis://` store does not
 * connect, nor a SQLite file appear, before a request needs it), and the
 * table of flights in this process.
 */
import { errorText, maskSecrets, shownValue } from '../base/describe.ts';
import { BufferOptionError } from '../base/errors.ts';
import { FileLock } from '../locks/file-lock.ts';
import type { CacheLock, ResolvedOptions } from '../config/options.ts';
import type { DecisionLog } from '../base/decision-log.ts';
import type { Flight, FlightContext } from './flight/flight.ts';
import type { CacheStore } from '../base/store.ts';
import { LruCacheStore } from './stores/lru-cache-store.ts';
import { MemoryStore } from './stores/memory.ts';
import { probeStore } from './stores/probe.ts';
import { RedisStore } from './stores/redis.ts';
import { checkDriver, resolveStore } from './stores/resolve.ts';
import { SqliteStore } from './stores/sqlite.ts';
import { bounded } from '../base/bounded.ts';
import type { Budget, CallCounts } from '../base/stats.ts';
import { storeBackend } from './backends.ts';
import { ownBytesMax, PurgeBook, readBytesMax } from './purge/book.ts';
import { NearStore } from './stores/near.ts';

/** After a store failed to open, how long requests bypass it before it is tried again, ms. */
const reopenAfterMs = 5000;

/** The server-side cache of one middleware. */
export class CacheRuntime implements FlightContext {
  readonly table = new Map<string, Flight>();
  /** Keys with a stale-while-revalidate refresh under way in this process (refresh.ts). */
  readonly revalidating = new Set<string>();
  readonly lock: CacheLock | undefined;
  readonly log: DecisionLog;
  /** The application's namespace (the `cacheNamespace` option), which purge ids carry as keys do. */
  readonly namespace: string;
  /** Stores by the `cache` value that named them (true or a URL string). */
  readonly #stores = new Map<unknown, CacheStore | { failed: number }>();
  /** The byte budget of the in-memory store (`cacheMemoryBytes`). */
  readonly #memoryBytes: number;
  /** The `cache` object of the options, and why its start-up probe refused it (answered asynchronously). */
  readonly #given: unknown;
  #refused: string | undefined;
  /** Purge books by the store lookups use (a near cache, or the store itself). */
  readonly #books = new Map<CacheStore, PurgeBook>();
  /** What this middleware made for each store it was handed (its book, its call counters). */
  #useOf = new WeakMap<CacheStore, StoreUse>();
  /** The last store asked about: a middleware uses one store, so a hit costs one comparison, no lookup. */
  #last: StoreUse | undefined;
  /** Near caches in front of the shared stores made from the user's objects (an ioredis client), by store. */
  readonly #nearOf = new WeakMap<CacheStore, NearStore>();
  readonly #nearBytes: number;
  /** Every near cache made, for the budget readings (one per shared store: a handful at most). */
  readonly #nears = new Set<NearStore>();
  readonly #syncMs: number;
  readonly #storeTimeoutMs: number;

  /**
   * @param config - the resolved `buffer()` options
   * @param log - the middleware's log
   * @throws BufferOptionError from `new FileLock` for a `cacheLockDir` that cannot be created
   *   (`lock_dir_create_failed`) or written (`lock_dir_not_writable`)
   * @throws BufferOptionError `option_cache_store` for a `cache` object that cannot keep an entry
   * @throws BufferOptionError `option_cache_driver` (or `_broken`) for a `sqlite:` or `redis://`
   *   cache whose package is not installed (or does not load)
   */
  constructor(config: ResolvedOptions, log: DecisionLog) {
    this.log = log;
    this.namespace = config.cacheNamespace;
    this.#memoryBytes = config.cacheMemoryBytes;
    this.#nearBytes = config.cacheNearBytes;
    this.#syncMs = config.cacheSyncMs;
    this.#storeTimeoutMs = config.cacheStoreTimeout * 1000;
    this.#given = config.cache;
    // Before the lock directory is made: a configuration refused leaves nothing behind.
    checkDriver(config.cache, config.messages);
    if (typeof config.cache === 'object') this.#probe(config.cache);
    this.lock =
      config.cacheLock ??
      (config.cacheLockDir === undefined
        ? undefined
        : // One lock file per cache key: removed on release, or every URL ever built would leave one.
          new FileLock({ dir: config.cacheLockDir, messages: config.messages, removeOnRelease: true }));
  }

  /**
   * Resolves the `cache` object given to `buffer()` and probes it once (see
   * stores/probe.ts). A synchronous store that cannot keep an entry is
   * refused at once; an asynchronous one is refused when its answer comes
   * (logged; its requests then bypass the cache), unless it threw, which a
   * backend that is down for now also does (logged as a warning).
   */
  #probe(option: object): void {
    const messages = this.log.messages;
    const store = resolveStore(option, messages, this.#memoryBytes)!;
    if (isKnownStore(store)) return;
    const found = probeStore(store);
    if (found === undefined) return;
    const args = { name: 'cache', value: shownValue(option) };
    if (!(found instanceof Promise))
      throw new BufferOptionError('option_cache_store', { ...args, problem: found.problem }, messages);
    void found.then((late) => {
      if (late === undefined) return;
      if (late.thrown) {
        this.log.logger.warn(messages.text('log_cache_probe_failed', { problem: late.problem }));
        return;
      }
      this.#refused = messages.text('option_cache_store', { ...args, problem: late.problem });
      this.log.error('log_cache_store_refused', { problem: late.problem });
    });
  }

  /**
   * Closes every store this middleware opened itself from `cache: true` or a
   * URL (a store object you passed stays yours to close); a later request
   * opens them again.
   */
  async closeStores(): Promise<void> {
    const stores = [...this.#stores.values()];
    this.#stores.clear();
    for (const store of stores) if (store instanceof NearStore) this.#nears.delete(store);
    for (const book of this.#books.values()) book.close();
    this.#books.clear();
    this.#useOf = new WeakMap();
    this.#last = undefined;
    for (const store of stores) {
      if ('failed' in store) continue;
      const close = (store as { close?: () => unknown }).close;
      if (typeof close === 'function') await close.call(store);
    }
  }

  /**
   * The store the `cache` value of a response names.
   *
   * @param option - `true`, a `sqlite:`/`redis://` URL, or a store object
   * @returns the store; `undefined` for no cache; `{error}` when it cannot be opened (logged)
   */
  storeFor(option: unknown): CacheStore | undefined | { error: string } {
    if (option === undefined || option === null || option === false) return undefined;
    if (typeof option === 'object' || typeof option === 'function') {
      if (this.#refused !== undefined && option === this.#given) return { error: this.#refused };
      // A store object is used as it is; a per-response one passed only the option's shape check, so check it here.
      try {
        const store = resolveStore(option, this.log.messages);
        return store === undefined ? undefined : this.#nearFor(store);
      } catch (error) {
        return { error: errorText(error) };
      }
    }
    const known = this.#stores.get(option);
    if (known !== undefined && !('failed' in known)) return known;
    if (known !== undefined && Date.now() - known.failed < reopenAfterMs) return { error: 'it failed to open' };
    try {
      const made = resolveStore(option, this.log.messages, this.#memoryBytes);
      const store = made === undefined ? undefined : this.#nearFor(made);
      if (store !== undefined) this.#stores.set(option, store);
      return store;
    } catch (error) {
      this.#stores.set(option, { failed: Date.now() });
      const text = error instanceof BufferOptionError ? error.message : errorText(error);
      this.log.error('log_cache_open_failed', { cache: shownCacheOption(option), error: text });
      return { error: text };
    }
  }

  /** The store lookups use for `store`: a SQLite or Redis store gets a near cache in front (`cacheNearBytes`). */
  #nearFor(store: CacheStore): CacheStore {
    if (this.#nearBytes === 0 || !(store instanceof SqliteStore || store instanceof RedisStore)) return store;
    let near = this.#nearOf.get(store);
    if (near === undefined) {
      this.#nearOf.set(store, (near = new NearStore(store, this.#nearBytes)));
      this.#nears.add(near);
    }
    return near;
  }

  /**
   * The bytes the stores this middleware opened hold in this process: the
   * in-memory store (`cache: true`), the near caches in front of shared
   * stores, and the purge books, each against its bound.
   */
  budgets(): Record<string, Budget> {
    const out: Record<string, Budget> = {};
    const add = (name: string, bytes: number, limit: number): void => {
      const known = out[name];
      out[name] = { bytes: (known?.bytes ?? 0) + bytes, limit: (known?.limit ?? 0) + limit };
    };
    for (const store of this.#stores.values())
      if (store instanceof MemoryStore) add('store', store.bytes, store.maxBytes);
    for (const near of this.#nears) add('near', near.bytes, near.maxBytes);
    for (const book of this.#books.values()) add('purgeBook', book.bytes, readBytesMax + ownBytesMax);
    return out;
  }

  /** The call counters of a store `storeFor` returned, by its backend (backends.ts). */
  storeCalls(store: CacheStore): CallCounts {
    const use = this.#use(store);
    return (use.calls ??= this.log.stats.storeCalls(storeBackend(store)));
  }

  /**
   * The purge book of a store `storeFor` returned, made on first use (for a
   * shared store it starts reading the purge generation).
   *
   * @param store - what `storeFor` returned
   */
  bookFor(store: CacheStore): PurgeBook {
    const use = this.#use(store);
    return (use.book ??= this.#newBook(store));
  }

  #use(store: CacheStore): StoreUse {
    const last = this.#last;
    if (last !== undefined && last.store === store) return last;
    let use = this.#useOf.get(store);
    if (use === undefined) this.#useOf.set(store, (use = { store, book: undefined, calls: undefined }));
    this.#last = use;
    return use;
  }

  #newBook(store: CacheStore): PurgeBook {
    const near = store instanceof NearStore ? store : undefined;
    const behind = near?.store ?? store;
    const shared = !(behind instanceof MemoryStore || behind instanceof LruCacheStore || behind instanceof Map);
    const bound = async (call: () => unknown): Promise<unknown> =>
      bounded(call, this.#storeTimeoutMs, 'cache purge generation');
    const seen = (seconds: number): void => this.log.stats.purgeSeenSeconds.observe(seconds);
    const book = new PurgeBook(behind, shared, this.#syncMs, () => near?.clear(), bound, seen, this.namespace);
    this.#books.set(store, book);
    return book;
  }

  /**
   * Records a purge in every store this middleware uses: the one its
   * `cache` option names (opened if need be) and any a response named.
   *
   * @param ids - the record ids (purge/book.ts), or `'all'`
   * @throws whatever a store threw, or its timeout
   */
  async purge(ids: readonly string[] | 'all'): Promise<void> {
    const main = this.storeFor(this.#given ?? undefined);
    const stores = new Set<CacheStore>(this.#books.keys());
    if (main !== undefined && !('error' in main)) stores.add(main);
    for (const store of this.#stores.values()) if (!('failed' in store)) stores.add(store);
    const bound = async (call: () => unknown): Promise<unknown> => bounded(call, this.#storeTimeoutMs, 'cache purge');
    await Promise.all([...stores].map((store) => this.bookFor(store).purge(ids, bound)));
  }
}

/** What a middleware made for one store, each part on first use. */
interface StoreUse {
  readonly store: CacheStore;
  book: PurgeBook | undefined;
  calls: CallCounts | undefined;
}

/** Stores koa-buffer made or knows: nothing to probe. */
function isKnownStore(store: CacheStore): boolean {
  return (
    store instanceof MemoryStore ||
    store instanceof SqliteStore ||
    store instanceof RedisStore ||
    store instanceof LruCacheStore
  );
}

/** A `cache` value for a log line, a Redis password hidden. */
function shownCacheOption(option: unknown): string {
  if (typeof option !== 'string') return String(option);
  return JSON.stringify(maskSecrets(option));
}
