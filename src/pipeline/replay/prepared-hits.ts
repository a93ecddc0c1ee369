/**
 * Prepared hits: the pipeline's answer to a replayed cache entry, given again
 * (pipeline/replay/prepared-answer.ts says how and when), so a hit costs a lookup
 * and a few header sets instead of CHECK, COMPRESS and VALIDATE. Answers are
 * remembered by cache key, told apart by the entry's creation time and
 * length, and by Accept-Encoding. The caller checks the rest of what the
 * request brings with the one rule for answering again (inputs.ts). The entry's Last-Modified cannot
 * move while the entry is fresh: a newer app script or template makes the
 * entry stale first.
 */
import type { Context } from 'koa';
import { LRUCache } from 'lru-cache';
import type { CacheEntry } from '../../cache/entry.ts';
import { encodingsPerBody, given, startRecording, type Prepared, type Recording } from './prepared-answer.ts';
import { plainGet } from '../../base/lru-get.ts';

/** The answers remembered for one entry of one key, by Accept-Encoding value. */
interface ForEntry {
  readonly created: number;
  readonly length: number;
  readonly byEncodings: Map<string, Prepared>;
  bytes: number;
}

/** The remembered answers of one middleware, by cache key, bounded in bytes of body. */
export class PreparedHits {
  readonly #lru: LRUCache<string, ForEntry>;
  /** The byte bound given to the constructor. */
  readonly maxBytes: number;

  /** @param maxBytes - bytes of bodies held at most (they are usually shared with the representation memo) */
  constructor(maxBytes = 32 * 1024 * 1024) {
    this.maxBytes = maxBytes;
    this.#lru = new LRUCache<string, ForEntry>({
      maxSize: maxBytes,
      sizeCalculation: (e, key) => e.bytes + key.length + 256,
    });
  }

  /** Bytes of the answers held. */
  get bytes(): number {
    return this.#lru.calculatedSize;
  }

  /**
   * Called when the pipeline is about to process a replayed `entry`: gives
   * the remembered answer and returns it (the pipeline is skipped), or
   * returns the recording of this run of the pipeline, to be ended once its
   * steps are done; undefined when the response is no longer the entry.
   *
   * @param ctx - the request, its response as replayed (and as any inner middleware left it)
   * @param key - the cache key
   * @param entry - the entry replayed
   */
  answer(ctx: Context, key: string, entry: CacheEntry): Prepared | Recording | undefined {
    // ctx.response rather than ctx's delegating accessors: the same properties, one call less each on every hit.
    const { response } = ctx;
    if (ctx.respond === false || ctx.res.headersSent || !response.writable) return undefined;
    if (response.body !== entry.body || response.status !== entry.status) return undefined;
    const encodings = ctx.request.headers['accept-encoding'] ?? '';
    // The entry is told by its key, creation time and length; no string is built per hit.
    const forEntry = this.#lru.get(key, plainGet);
    const known =
      forEntry !== undefined && forEntry.created === entry.created && forEntry.length === entry.body.length
        ? forEntry.byEncodings.get(encodings)
        : undefined;
    return given(ctx, known) ?? startRecording(ctx, (prepared) => this.#keep(key, entry, encodings, prepared));
  }

  /** After the pipeline: what it did to a plain 200 is kept as the answer for the same inputs. */
  #keep(key: string, entry: CacheEntry, encodings: string, prepared: Prepared): void {
    let forEntry = this.#lru.get(key);
    if (forEntry === undefined || forEntry.created !== entry.created || forEntry.length !== entry.body.length) {
      forEntry = { created: entry.created, length: entry.body.length, byEncodings: new Map(), bytes: 0 };
    }
    if (forEntry.byEncodings.size >= encodingsPerBody && !forEntry.byEncodings.has(encodings)) return;
    forEntry.byEncodings.set(encodings, prepared);
    forEntry.bytes += prepared.body.length + encodings.length;
    // Set again so the LRU counts the new size.
    this.#lru.set(key, forEntry);
  }
}
