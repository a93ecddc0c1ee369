/**
 * Where offered dictionaries are kept, by the SHA-256 of the exact bytes the
 * client decoded (the optimised entity, before any content coding):
 *
 * - in the process, in the representation memo, so they share its byte
 *   budget and its LRU (a dictionary not asked for is evicted like any entry);
 * - when a shared cache store is configured (SQLite, Redis, a Keyv …), also
 *   there under `buffer:dictionary:<hex>`, so a worker or host that never
 *   offered a dictionary can still answer a browser that holds it.
 *
 * Each rule keeps its newest `keep` versions per request path (a browser holds
 * the last page it saw under a pattern, and `/articles/*` covers many pages):
 * when a new version is offered, the oldest beyond that is forgotten here and
 * deleted from the store. A
 * dictionary read from the store is checked against its hash before use, so
 * a corrupt or foreign value can only cost the normal coding.
 *
 * A kept dictionary belongs to the rule that offered it (`rule.tag`, a hash
 * of the application and the pattern): it is found only for a request the
 * same rule matches, in the memo and in the store alike, so a page of one
 * pattern (or of another application sharing the store) can never become
 * the dictionary of another. A shared copy lives as long as a browser may
 * use it (the rule's `ttl`, else the response's own freshness, at most a
 * week) and each process keeps at most {@link sharedPerRule} of them per
 * rule in the store, deleting the oldest beyond.
 */
import { createHash } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import { errorText } from '../../base/describe.ts';
import { boundedAnswer } from '../../base/bounded.ts';
import { asBytes } from '../../cache/entry.ts';
import type { CacheStore } from '../../base/store.ts';
import type { DecisionLog } from '../../base/decision-log.ts';
import type { RepresentationMemo } from '../memo.ts';
import type { DictionaryRule } from '../../config/dictionaries.ts';

/** The longest a shared store keeps a dictionary: about as long as a browser keeps using one between visits. */
export const sharedDictionaryTtlMs = 7 * 24 * 3600 * 1000;

/** Shared copies one process keeps in the store per rule; the oldest beyond are deleted. */
export const sharedPerRule = 128;

/** The shared store's key of a dictionary of the rule tagged `ruleTag`. */
export const sharedDictionaryKey = (ruleTag: string, sha256: string): string =>
  `buffer:dictionary:${ruleTag}:${sha256}`;

/** The memo's key of a dictionary of the rule tagged `ruleTag`: the rule's, so no other rule finds it. */
const memoKey = (ruleTag: string, sha256: string): string => `${ruleTag}:${sha256}`;

/** What the keeper needs of the middleware. */
export interface KeeperDeps {
  readonly memo: RepresentationMemo;
  /** The shared store, when one is configured and usable now; undefined otherwise. */
  readonly store: () => CacheStore | undefined;
  /** Milliseconds a store call may take (cacheStoreTimeout). */
  readonly storeTimeoutMs: number;
  readonly log: DecisionLog;
}

/**
 * The versions one rule offers for one path, newest first, and the last
 * entity hashed (to skip hashing a repeated one): held weakly, as the memo
 * holds it, so a page the memo dropped is not pinned here.
 */
interface Versions {
  hashes: string[];
  lastEntity: WeakRef<Buffer> | undefined;
  lastHash: string;
  /** What the slot is charged: its key, `keep` hashes and {@link versionsOverhead}. */
  readonly bytes: number;
}

export const sha256Hex = (bytes: Buffer): string => createHash('sha256').update(bytes).digest('hex');

/** Bytes of the version table at most (the least recently offered paths are forgotten, their bytes left to the memo's LRU). */
export const versionsBytesMax = 1024 * 1024;
/** Bytes charged per path beyond its key and hashes: the LRU's node, the record, its array and weak reference. */
export const versionsOverhead = 160;
/** A slot key longer than this (a long path) is kept as its MD5. */
const slotLongest = 96;

/** The dictionaries of one `buffer()` middleware. */
export class DictionaryKeeper {
  readonly #deps: KeeperDeps;
  /** By rule index and path (a long one by their MD5), in {@link versionsBytesMax}. */
  readonly #versions = new LRUCache<string, Versions>({
    maxSize: versionsBytesMax,
    sizeCalculation: (versions) => versions.bytes,
  });
  /** The hashes this process wrote to the store, per rule tag, oldest first: at most {@link sharedPerRule} each. */
  readonly #shared = new Map<string, string[]>();

  constructor(deps: KeeperDeps) {
    this.#deps = deps;
  }

  /** Bytes the version table is charged now (at most {@link versionsBytesMax}). */
  get versionsBytes(): number {
    return this.#versions.calculatedSize;
  }

  /**
   * Keeps `entity` as the newest version of `rule`'s dictionary for `path`.
   *
   * @param sharedTtlMs - how long a shared copy may live (0: none, the memo only)
   * @returns its SHA-256 hex
   */
  offer(rule: DictionaryRule, path: string, entity: Buffer, sharedTtlMs: number): string {
    let slot = `${rule.index}\0${path}`;
    if (slot.length > slotLongest) slot = `\0${createHash('md5').update(slot).digest('hex')}`;
    let versions = this.#versions.get(slot);
    if (versions === undefined) {
      // Two bytes a character for a key that is not Latin-1; a SHA-256 hex is 64 bytes.
      const keyBytes = slot.length * (/[^\0-\xff]/.test(slot) ? 2 : 1);
      versions = {
        hashes: [],
        lastEntity: undefined,
        lastHash: '',
        bytes: keyBytes + rule.keep * 64 + versionsOverhead,
      };
      this.#versions.set(slot, versions);
    }
    const memo = this.#deps.memo;
    // The memo hands back the very same Buffer for a repeated body: no hashing then.
    if (versions.lastEntity?.deref() === entity && memo.dictionary(memoKey(rule.tag, versions.lastHash)) !== undefined)
      return versions.lastHash;
    const hash = sha256Hex(entity);
    versions.lastEntity = new WeakRef(entity);
    versions.lastHash = hash;
    const at = versions.hashes.indexOf(hash);
    if (at === 0 && memo.dictionary(memoKey(rule.tag, hash)) !== undefined) return hash;
    if (at > 0) versions.hashes.splice(at, 1);
    versions.hashes.unshift(hash);
    // A copy: the application may reuse and change the Buffer it answered with.
    const kept = Buffer.from(entity);
    memo.keepDictionary(memoKey(rule.tag, hash), kept);
    if (at < 0 && sharedTtlMs > 0) this.#share(rule.tag, hash, kept, Math.min(sharedTtlMs, sharedDictionaryTtlMs));
    for (const old of versions.hashes.splice(rule.keep)) this.#forget(rule.tag, old);
    return hash;
  }

  /**
   * The dictionary with this SHA-256 that `rule` offered: from the memo,
   * else from the shared store (then kept in the memo too); undefined when
   * neither has it. Never throws: a failing store is a log line and undefined.
   */
  find(rule: DictionaryRule, sha256: string): Buffer | undefined | Promise<Buffer | undefined> {
    const local = this.#deps.memo.dictionary(memoKey(rule.tag, sha256));
    if (local !== undefined) return local;
    const store = this.#deps.store();
    if (store === undefined) return undefined;
    const key = sharedDictionaryKey(rule.tag, sha256);
    const fromStore = (value: unknown): Buffer | undefined => {
      const bytes = asBytes(value);
      if (bytes === undefined || sha256Hex(bytes) !== sha256) return undefined;
      const kept = Buffer.from(bytes);
      this.#deps.memo.keepDictionary(memoKey(rule.tag, sha256), kept);
      return kept;
    };
    const failed = (error: unknown): undefined => {
      this.#deps.log.error('log_cache_get_failed', { key, error: errorText(error) });
      return undefined;
    };
    try {
      const answer = boundedAnswer(store.get(key), this.#deps.storeTimeoutMs, 'cache get');
      return answer instanceof Promise ? answer.then(fromStore, failed) : fromStore(answer);
    } catch (error) {
      return failed(error);
    }
  }

  /** Writes a new dictionary to the shared store for `ttlMs`, off the request's path; the rule's oldest beyond the bound go. */
  #share(ruleTag: string, sha256: string, bytes: Buffer, ttlMs: number): void {
    const store = this.#deps.store();
    if (store === undefined) return;
    const key = sharedDictionaryKey(ruleTag, sha256);
    let written = this.#shared.get(ruleTag);
    if (written === undefined) this.#shared.set(ruleTag, (written = []));
    written.push(sha256);
    for (const old of written.splice(0, Math.max(0, written.length - sharedPerRule))) this.#unshare(ruleTag, old);
    void Promise.resolve()
      .then(() => boundedAnswer(store.set(key, bytes, ttlMs), this.#deps.storeTimeoutMs, 'cache set'))
      .catch((error: unknown) => this.#deps.log.error('log_cache_set_failed', { key, error: errorText(error) }));
  }

  /** Drops a version a rule no longer keeps, here and in the shared store. */
  #forget(ruleTag: string, sha256: string): void {
    this.#deps.memo.forgetDictionary(memoKey(ruleTag, sha256));
    const written = this.#shared.get(ruleTag);
    const at = written?.indexOf(sha256) ?? -1;
    if (at >= 0) written!.splice(at, 1);
    this.#unshare(ruleTag, sha256);
  }

  /** Deletes a shared copy, off the request's path. */
  #unshare(ruleTag: string, sha256: string): void {
    const store = this.#deps.store();
    if (store === undefined) return;
    const key = sharedDictionaryKey(ruleTag, sha256);
    void Promise.resolve()
      .then(() => boundedAnswer(store.delete(key), this.#deps.storeTimeoutMs, 'cache delete'))
      .catch((error: unknown) => this.#deps.log.error('log_cache_delete_failed', { key, error: errorText(error) }));
  }
}
