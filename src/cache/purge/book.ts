/**
 * Purges as ban records (docs/decisions/0026-purge-by-ban-records.md): a
 * purge does not look for the entries it removes (a key is an MD5, and Keyv
 * and lru-cache cannot list keys); it writes down when it happened, for a
 * URL, a tag or everything, and an entry whose build began before a purge
 * that matches it counts as absent.
 *
 * Each store has one book per middleware. A store shared by processes
 * (SQLite, Redis, Keyv) keeps the records under `buffer:purge:…` keys and a
 * generation key, rewritten by every purge; each process reads the
 * generation every `cacheSyncMs` and, when it changed, forgets the records
 * it had read and empties its near cache. Entries are judged against the
 * records read since, each fetched once. A store of this process alone
 * (the in-memory store, an LRUCache, a Map) keeps them in the book only.
 *
 * The book is bounded in bytes, whatever the URLs: a record id is the MD5
 * of what it names (the same digest names its key in the store), so a 12 KB
 * URL costs what a short one does, and each table is an LRU with a byte
 * budget ({@link readBytesMax}, {@link ownBytesMax}). A record read from the
 * store that is evicted is read again when needed. A purge of this process
 * that is evicted becomes a purge of everything up to its time: more misses,
 * never a purged page served.
 */
import { appIdentity } from '../../base/app-identity.ts';
import { createHash } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import type { EntryOrigin } from '../entry.ts';
import type { CacheStore } from '../../base/store.ts';

/** The key rewritten by every purge: its change tells the other processes. */
export const generationKey = 'buffer:purge:generation';
/** The key holding the time of the last purge of everything. */
const allKey = 'buffer:purge:all';
/** Bytes of records read from the store at most (the least recently used are forgotten, and read again when needed). */
export const readBytesMax = 1024 * 1024;
/** Bytes of this process's own purges at most (the oldest become a purge of everything up to their time). */
export const ownBytesMax = 1024 * 1024;
/** Bytes charged per record beyond its id: the LRU's node, its slots and the number. */
export const recordOverhead = 64;

/** What one record costs against a budget: its id's bytes (one-byte strings: hex digests) and the overhead. */
const recordSize = (_value: unknown, id: string): number => id.length + recordOverhead;

/** A purge this process made: when, and its place in this process's purge count. */
interface OwnPurge {
  readonly at: number;
  readonly sequence: number;
}

/** An id: the MD5 hex of what it names, so every id is 32 bytes whatever the URL. */
const digest = (named: string): string => createHash('md5').update(named, 'utf8').digest('hex');

/**
 * The id of a URL's records on one host, in the application's namespace as
 * the cache key names it: two apps sharing a store purge their own URLs, and
 * one app's hosts and releases purge each other's.
 */
export function urlId(namespace: string, host: string, path: string): string {
  return digest(`u\n${namespace}\n${host}\n${path}`);
}

/** The id of a URL's records on every host, in the application's namespace. */
export function pathId(namespace: string, path: string): string {
  return digest(`p\n${namespace}\n${path}`);
}

/** The id of a tag's records (tags span the store: every app sharing it). */
export function tagId(tag: string): string {
  return digest(`t\n${tag}`);
}

/** The store key of the record `id`: bounded in length whatever the URL. */
function recordKey(id: string): string {
  return `buffer:purge:${id}`;
}

/** A stored record or generation as text; undefined when absent or not text. */
function text(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  if (value instanceof Uint8Array) return Buffer.from(value.buffer, value.byteOffset, value.byteLength).toString();
  return undefined;
}

/** A stored record as ms since the epoch; 0 when absent or unreadable. */
function time(value: unknown): number {
  const at = Number(text(value));
  return Number.isFinite(at) && at > 0 ? at : 0;
}

/** The purges one middleware knows of, for one store. */
export class PurgeBook {
  /**
   * False until a purge is known: then an entry needs no look at the
   * records, and a hit allocates nothing for them.
   */
  active = false;
  readonly #store: CacheStore;
  readonly #shared: boolean;
  readonly #onPurge: () => void;
  readonly #bound: (call: () => unknown) => Promise<unknown>;
  /** The latest purge of everything known, ms. */
  #all = 0;
  /**
   * Purges made in this process, by id: kept when the records read from the
   * store are forgotten. One evicted from the budget raises the purge of
   * everything to its time (and count), so what it purged stays purged.
   */
  readonly #own = new LRUCache<string, OwnPurge>({
    maxSize: ownBytesMax,
    sizeCalculation: recordSize,
    disposeAfter: (purge, _id, reason) => {
      if (reason !== 'evict') return;
      this.#all = Math.max(this.#all, purge.at);
      this.#allSequence = Math.max(this.#allSequence, purge.sequence);
    },
  });
  #allSequence = 0;
  #sequence = 0;
  /** Records read from the store, by id; 0 for none. */
  readonly #read = new LRUCache<string, number>({ maxSize: readBytesMax, sizeCalculation: recordSize });
  /** The ids of an entry's origin, made once per decoded entry. */
  readonly #ids = new WeakMap<EntryOrigin, readonly string[]>();
  /** The generation last seen; null before the first read. */
  #generation: string | undefined | null = null;
  /** Bumped when the records read are forgotten: a read begun before does not land. */
  #epoch = 0;
  /** The first read of the generation, which entries of a shared store wait for. */
  #first: Promise<void> | undefined;
  #polling = false;
  readonly #timer: NodeJS.Timeout | undefined;
  readonly #seenAfter: (seconds: number) => void;
  readonly #namespace: string;
  /** The generations this process wrote: reading one back is not another process's purge. */
  readonly #written = new Set<string>();

  /**
   * @param store - the store itself, never a near cache in front of it
   * @param shared - true when other processes use the store (records are kept in it)
   * @param syncMs - how often the generation is read, for a shared store
   * @param onPurge - called on every purge seen (this process's or another's): empties a near cache
   * @param bound - runs one store call within `cacheStoreTimeout`: a store that hangs must not hang every lookup
   *   waiting for the first read of the generation, nor pile up reads of it
   * @param seenAfter - told, in seconds, how long after it was made another process's purge was seen here
   * @param namespace - the application's namespace (the `cacheNamespace` option), which URL ids carry
   */
  constructor(
    store: CacheStore,
    shared: boolean,
    syncMs: number,
    onPurge: () => void,
    bound: (call: () => unknown) => Promise<unknown>,
    seenAfter: (seconds: number) => void = () => undefined,
    namespace: string = appIdentity,
  ) {
    this.#namespace = namespace;
    this.#store = store;
    this.#seenAfter = seenAfter;
    this.#bound = bound;
    this.#shared = shared;
    this.#onPurge = onPurge;
    if (!shared) return;
    this.active = true; // until the first read says no purge was ever made
    this.#first = this.sync().finally(() => (this.#first = undefined));
    this.#timer = setInterval(() => void this.sync(), syncMs);
    this.#timer.unref();
  }

  /** Bytes the book's tables are charged (ids plus {@link recordOverhead} each): at most {@link readBytesMax} + {@link ownBytesMax}. */
  get bytes(): number {
    return this.#own.calculatedSize + this.#read.calculatedSize;
  }

  /** Stops reading the generation. */
  close(): void {
    if (this.#timer !== undefined) clearInterval(this.#timer);
  }

  /**
   * Reads the generation; when another process purged since, forgets the
   * records read and reads the time of the last purge of everything.
   * A failing store leaves what is known as it is (the next read retries).
   */
  async sync(): Promise<void> {
    if (this.#polling) return;
    this.#polling = true;
    try {
      const generation = text(await this.#bound(() => this.#store.get(generationKey)));
      if (generation === this.#generation) return;
      if (generation === undefined) {
        // The first read: no purge was ever made through this store. Later, once active, always active.
        if (this.#generation === null) this.active = this.#own.size > 0 || this.#all > 0;
        this.#generation = generation;
        return;
      }
      // Taken as seen only once the purge-all time is read too: a failure here is retried at the next read.
      const all = time(await this.#bound(() => this.#store.get(allKey)));
      this.#generation = generation;
      this.#epoch++;
      this.#read.clear();
      this.#all = Math.max(this.#all, all);
      this.active = true;
      this.#onPurge();
      if (this.#written.delete(generation)) return;
      // A generation starts with the time it was made: the delay is how late this process learnt of it.
      const madeAt = Number.parseInt(generation, 10);
      if (Number.isFinite(madeAt)) this.#seenAfter(Math.max(0, Date.now() - madeAt) / 1000);
    } catch {
      // The lookup of the entry will meet the same failure and say so.
    } finally {
      this.#polling = false;
    }
  }

  /**
   * Whether a purge removed the entry: one whose build began (`origin.since`,
   * else `created`) before a purge of everything, of its URL on its host or
   * any host, or of one of its tags.
   *
   * @param origin - the entry's origin, absent on entries stored without one
   * @param created - the entry's creation time, ms
   * @returns a boolean, or a Promise when records must be read from the store first
   */
  purged(origin: EntryOrigin | undefined, created: number): boolean | Promise<boolean> {
    if (this.#first !== undefined) return this.#first.then(() => this.purged(origin, created));
    return this.#judge(origin, created, true);
  }

  /** Purges made by this process so far: a build compares the count at its lookup with the count at its end. */
  get sequence(): number {
    return this.#sequence;
  }

  /**
   * Like {@link purged} with only what is known now, never reading the
   * store: for a build about to be stored. A purge this process made after
   * the build's lookup (`sequence` then) counts even in the same millisecond.
   *
   * @param origin - the built entry's origin
   * @param created - its creation time, ms
   * @param sequence - {@link sequence} when the build's request looked the key up
   */
  purgedNow(origin: EntryOrigin | undefined, created: number, sequence: number): boolean {
    if (this.#allSequence > sequence) return true;
    if (origin !== undefined)
      for (const id of this.#idsOf(origin)) if ((this.#own.get(id)?.sequence ?? 0) > sequence) return true;
    return this.#judge(origin, created, false) === true;
  }

  /**
   * An entry counts as purged when a matching purge came after its `since`
   * (strictly: a request that looked the key up in the millisecond of the
   * purge, after it, must not be purged forever by it).
   */
  #judge(origin: EntryOrigin | undefined, created: number, read: boolean): boolean | Promise<boolean> {
    const since = origin?.since ?? created;
    if (since < this.#all) return true;
    if (origin === undefined) return false;
    const ids = this.#idsOf(origin);
    let unknown: string[] | undefined;
    for (const id of ids) {
      const own = this.#own.get(id);
      if (own !== undefined && since < own.at) return true;
      if (!this.#shared) continue;
      const recorded = this.#read.get(id);
      if (recorded === undefined) (unknown ??= []).push(id);
      else if (since < recorded) return true;
    }
    if (unknown === undefined || !read) return false;
    return this.#fetch(unknown).then((complete) => {
      // Another purge came while reading, or the store failed: a miss, never a purged page.
      if (!complete) return true;
      return this.#judge(origin, created, false);
    });
  }

  #idsOf(origin: EntryOrigin): readonly string[] {
    let ids = this.#ids.get(origin);
    if (ids === undefined) {
      ids = [
        urlId(this.#namespace, origin.host, origin.path),
        pathId(this.#namespace, origin.path),
        ...origin.tags.map(tagId),
      ];
      this.#ids.set(origin, ids);
    }
    return ids;
  }

  /** Reads the records of `ids`; false when the store failed or the records were forgotten meanwhile. */
  async #fetch(ids: readonly string[]): Promise<boolean> {
    const epoch = this.#epoch;
    let times: number[];
    try {
      times = await Promise.all(ids.map(async (id) => time(await this.#bound(() => this.#store.get(recordKey(id))))));
    } catch {
      return false;
    }
    if (epoch !== this.#epoch) return false;
    ids.forEach((id, i) => this.#read.set(id, times[i]!));
    return true;
  }

  /**
   * Tells the other processes that an entry was replaced before its expiry
   * (a refresh): a new generation empties their near caches. A failure costs
   * only that (they see the new entry when their copy expires).
   */
  async announce(): Promise<void> {
    if (!this.#shared) return;
    try {
      await this.#bound(() => this.#store.set(generationKey, this.#newGeneration(Date.now())));
    } catch {
      // The entry itself was stored; the store's failure is logged by the next call that needs it.
    }
  }

  /** A new generation made at `at`, remembered as this process's own (the last few: a set that stays small). */
  #newGeneration(at: number): string {
    const generation = `${at}-${Math.random().toString(36).slice(2)}`;
    if (this.#written.size >= 16) this.#written.clear();
    this.#written.add(generation);
    return generation;
  }

  /**
   * Records a purge: seen by this process at once, and by the others
   * sharing the store at their next read of the generation.
   *
   * @param ids - the ids purged; `'all'` for everything
   * @param bound - runs one store call within `cacheStoreTimeout`
   * @throws whatever the store threw, or its timeout
   */
  async purge(ids: readonly string[] | 'all', bound: (call: () => unknown) => Promise<unknown>): Promise<void> {
    const at = Date.now();
    const sequence = ++this.#sequence;
    if (ids === 'all') {
      this.#all = Math.max(this.#all, at);
      this.#allSequence = sequence;
    } else for (const id of ids) this.#own.set(id, { at: Math.max(this.#own.get(id)?.at ?? 0, at), sequence });
    this.active = true;
    this.#onPurge();
    if (!this.#shared) {
      // A store of this process alone forgets its entries too, when it can.
      const clear = (this.#store as { clear?: () => unknown }).clear;
      if (ids === 'all' && typeof clear === 'function') await bound(() => clear.call(this.#store));
      return;
    }
    // The records first, then the generation: a process that sees the new generation finds them.
    if (ids === 'all') await bound(() => this.#store.set(allKey, String(at)));
    else await Promise.all(ids.map((id) => bound(() => this.#store.set(recordKey(id), String(at)))));
    const generation = this.#newGeneration(at);
    // Not taken as read: another process may have purged since the last read, and its generation is overwritten.
    await bound(() => this.#store.set(generationKey, generation));
  }
}
