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
 */
import { createHash } from 'node:crypto';
import { errorText } from '../../describe.ts';
import { boundedAnswer } from '../../cache/bounded.ts';
import { asBytes } from '../../cache/entry.ts';
import type { CacheStore } from '../../cache/stores/store.ts';
import type { DecisionLog } from '../decision-log.ts';
import type { RepresentationMemo } from '../memo.ts';
import type { DictionaryRule } from './rules.ts';

/** How long the shared store keeps a dictionary: about as long as a browser keeps using one between visits. */
export const sharedDictionaryTtlMs = 7 * 24 * 3600 * 1000;

/** The shared store's key of a dictionary. */
export const sharedDictionaryKey = (sha256: string): string => `buffer:dictionary:${sha256}`;

/** What the keeper needs of the middleware. */
export interface KeeperDeps {
  readonly memo: RepresentationMemo;
  /** The shared store, when one is configured and usable now; undefined otherwise. */
  readonly store: () => CacheStore | undefined;
  /** Milliseconds a store call may take (cacheStoreTimeout). */
  readonly storeTimeoutMs: number;
  readonly log: DecisionLog;
}

/** The versions one rule offers, newest first, and the last entity hashed (to skip hashing a repeated one). */
interface Versions {
  hashes: string[];
  lastEntity: Buffer | undefined;
  lastHash: string;
}

export const sha256Hex = (bytes: Buffer): string => createHash('sha256').update(bytes).digest('hex');

/** Paths whose versions are tracked at once. */
const pathsMax = 4096;

/** The dictionaries of one `buffer()` middleware. */
export class DictionaryKeeper {
  readonly #deps: KeeperDeps;
  /** By rule index and path; at most {@link pathsMax} (then the oldest path's list is dropped, its bytes left to the LRU). */
  readonly #versions = new Map<string, Versions>();

  constructor(deps: KeeperDeps) {
    this.#deps = deps;
  }

  /**
   * Keeps `entity` as the newest version of `rule`'s dictionary for `path`.
   *
   * @returns its SHA-256 hex
   */
  offer(rule: DictionaryRule, path: string, entity: Buffer): string {
    const slot = `${rule.index}\0${path}`;
    let versions = this.#versions.get(slot);
    if (versions === undefined) {
      if (this.#versions.size >= pathsMax) this.#versions.delete(this.#versions.keys().next().value!);
      versions = { hashes: [], lastEntity: undefined, lastHash: '' };
      this.#versions.set(slot, versions);
    }
    // The memo hands back the very same Buffer for a repeated body: no hashing then.
    if (versions.lastEntity === entity && this.#deps.memo.dictionary(versions.lastHash) !== undefined)
      return versions.lastHash;
    const hash = sha256Hex(entity);
    versions.lastEntity = entity;
    versions.lastHash = hash;
    const at = versions.hashes.indexOf(hash);
    if (at === 0 && this.#deps.memo.dictionary(hash) !== undefined) return hash;
    if (at > 0) versions.hashes.splice(at, 1);
    versions.hashes.unshift(hash);
    // A copy: the application may reuse and change the Buffer it answered with.
    const kept = Buffer.from(entity);
    this.#deps.memo.keepDictionary(hash, kept);
    if (at < 0) this.#share(hash, kept);
    for (const old of versions.hashes.splice(rule.keep)) this.#forget(old);
    return hash;
  }

  /**
   * The dictionary with this SHA-256: from the memo, else from the shared
   * store (then kept in the memo too); undefined when neither has it.
   * Never throws: a failing store is a log line and undefined.
   */
  find(sha256: string): Buffer | undefined | Promise<Buffer | undefined> {
    const local = this.#deps.memo.dictionary(sha256);
    if (local !== undefined) return local;
    const store = this.#deps.store();
    if (store === undefined) return undefined;
    const key = sharedDictionaryKey(sha256);
    const fromStore = (value: unknown): Buffer | undefined => {
      const bytes = asBytes(value);
      if (bytes === undefined || sha256Hex(bytes) !== sha256) return undefined;
      const kept = Buffer.from(bytes);
      this.#deps.memo.keepDictionary(sha256, kept);
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

  /** Writes a new dictionary to the shared store, off the request's path. */
  #share(sha256: string, bytes: Buffer): void {
    const store = this.#deps.store();
    if (store === undefined) return;
    const key = sharedDictionaryKey(sha256);
    void Promise.resolve()
      .then(() => boundedAnswer(store.set(key, bytes, sharedDictionaryTtlMs), this.#deps.storeTimeoutMs, 'cache set'))
      .catch((error: unknown) => this.#deps.log.error('log_cache_set_failed', { key, error: errorText(error) }));
  }

  /** Drops a version a rule no longer keeps, here and in the shared store. */
  #forget(sha256: string): void {
    this.#deps.memo.forgetDictionary(sha256);
    const store = this.#deps.store();
    if (store === undefined) return;
    const key = sharedDictionaryKey(sha256);
    void Promise.resolve()
      .then(() => boundedAnswer(store.delete(key), this.#deps.storeTimeoutMs, 'cache delete'))
      .catch((error: unknown) => this.#deps.log.error('log_cache_delete_failed', { key, error: errorText(error) }));
  }
}
