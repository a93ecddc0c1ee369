/**
 * Purges as ban records (docs/decisions.md, "Purge by ban records"): a
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
 */
import { createHash } from 'node:crypto';
import type { EntryOrigin } from '../entry.ts';
import type { CacheStore } from '../stores/store.ts';

/** The key rewritten by every purge: its change tells the other processes. */
export const generationKey = 'buffer:purge:generation';
/** The key holding the time of the last purge of everything. */
const allKey = 'buffer:purge:all';
/** Records read from the store at most, before they are forgotten and read again. */
const maxRecords = 100_000;

/** The application, as the cache key names it: two apps sharing a store purge their own URLs. */
const app = process.argv[1] ?? '';

/** The id of a URL's records on one host. */
export function urlId(host: string, path: string): string {
  return `u\n${app}\n${host}\n${path}`;
}

/** The id of a URL's records on every host. */
export function pathId(path: string): string {
  return `p\n${app}\n${path}`;
}

/** The id of a tag's records (tags span the store: every app sharing it). */
export function tagId(tag: string): string {
  return `t\n${tag}`;
}

/** The store key of the record `id`: bounded in length whatever the URL. */
function recordKey(id: string): string {
  return `buffer:purge:${createHash('md5').update(id, 'utf8').digest('hex')}`;
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
  /** Purges made in this process, by id: kept when the records read from the store are forgotten. */
  readonly #own = new Map<string, number>();
  /** The same, as this process's purge count after each. */
  readonly #ownSequence = new Map<string, number>();
  #allSequence = 0;
  #sequence = 0;
  /** Records read from the store, by id; 0 for none. */
  readonly #read = new Map<string, number>();
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

  /**
   * @param store - the store itself, never a near cache in front of it
   * @param shared - true when other processes use the store (records are kept in it)
   * @param syncMs - how often the generation is read, for a shared store
   * @param onPurge - called on every purge seen (this process's or another's): empties a near cache
   * @param bound - runs one store call within `cacheStoreTimeout`: a store that hangs must not hang every lookup
   *   waiting for the first read of the generation, nor pile up reads of it
   */
  constructor(
    store: CacheStore,
    shared: boolean,
    syncMs: number,
    onPurge: () => void,
    bound: (call: () => unknown) => Promise<unknown>,
  ) {
    this.#store = store;
    this.#bound = bound;
    this.#shared = shared;
    this.#onPurge = onPurge;
    if (!shared) return;
    this.active = true; // until the first read says no purge was ever made
    this.#first = this.sync().finally(() => (this.#first = undefined));
    this.#timer = setInterval(() => void this.sync(), syncMs);
    this.#timer.unref();
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
      for (const id of this.#idsOf(origin)) if ((this.#ownSequence.get(id) ?? 0) > sequence) return true;
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
      if (own !== undefined && since < own) return true;
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
      ids = [urlId(origin.host, origin.path), pathId(origin.path), ...origin.tags.map(tagId)];
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
    if (this.#read.size > maxRecords) this.#read.clear();
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
      await this.#bound(() => this.#store.set(generationKey, `${Date.now()}-${Math.random().toString(36).slice(2)}`));
    } catch {
      // The entry itself was stored; the store's failure is logged by the next call that needs it.
    }
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
    } else
      for (const id of ids) {
        this.#own.set(id, Math.max(this.#own.get(id) ?? 0, at));
        this.#ownSequence.set(id, sequence);
      }
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
    const generation = `${at}-${Math.random().toString(36).slice(2)}`;
    // Not taken as read: another process may have purged since the last read, and its generation is overwritten.
    await bound(() => this.#store.set(generationKey, generation));
  }
}
