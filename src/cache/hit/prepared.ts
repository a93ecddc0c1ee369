/**
 * Prepared hits: the pipeline's own answer to a replayed entry, remembered
 * and given again when the same entry is replayed to a request that would
 * go through the pipeline with exactly the same inputs, so a hit costs a
 * lookup and a few header sets instead of CHECK, COMPRESS and VALIDATE.
 *
 * Nothing here decides anything the pipeline decides: the first replay of
 * an entry for an Accept-Encoding value goes through the whole pipeline,
 * and what it changed (headers set or removed, the final body) is recorded
 * beside the response as it stood when the pipeline began. A later replay
 * takes the shortcut only when its request differs in nothing the pipeline
 * reads — same Accept-Encoding, no conditional header, the `buffer()`
 * options unchanged by sections and `ctx.state.buffer`, a `lastModified`
 * that is not a function (checked by the caller) — and its response agrees
 * with the recorded one in everything the pipeline reads or writes: status,
 * body, and the headers in {@link pipelineHeaders} and in what the pipeline
 * changed. Other headers (a request id set by an outer middleware) are not
 * the pipeline's business: they are neither compared nor touched, so they
 * stay this request's own. The entry's Last-Modified cannot move while the
 * entry is fresh: a newer app script or template makes the entry stale first.
 */
import type { Context } from 'koa';
import { LRUCache } from 'lru-cache';
import type { CacheEntry } from '../entry.ts';
import { setBufferBody } from './koa-body.ts';
import { plainGet } from './lru-get.ts';

/** What a prepared hit reads and writes of the request's state (narrow, so the runtime that holds the hits need not know the state). */
interface RequestState {
  readonly onFinish: Array<(ctx: Context) => void | Promise<void>>;
  readonly failed: boolean;
  /** Set for a cold answer while a smaller one is being made: true while it still is. */
  readonly upgradeWaits: (() => boolean) | undefined;
}

/**
 * The response headers the pipeline (middleware.ts, steps CHECK to SEND, with
 * Koa's body setter) reads: what its decisions for a replayed entry depend on.
 * A header it sets or removes is compared too, whatever its name.
 */
export const pipelineHeaders: readonly string[] = [
  'content-type',
  'content-encoding',
  'content-length',
  'transfer-encoding',
  'vary',
  'etag',
  'last-modified',
  'cache-control',
  'expires',
];

type Value = number | string | readonly string[] | undefined;

/** One remembered answer. */
interface Prepared {
  readonly status: number;
  /** Names the response must agree on, and their values when the pipeline began. */
  readonly watched: readonly string[];
  readonly before: readonly Value[];
  /** What the pipeline set (name, value) and removed. */
  readonly set: ReadonlyArray<readonly [string, number | string | readonly string[]]>;
  readonly removed: readonly string[];
  /** The body it sent. */
  readonly body: Buffer;
  /** For cold bytes sent while their upgrade waited: true while it still waits; the answer is stale after. */
  readonly upgradeWaits: (() => boolean) | undefined;
}

function sameValue(a: Value, b: Value): boolean {
  if (a === b) return true;
  if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) return false;
  return a.every((item, i) => item === b[i]);
}

/** True when the response's watched headers hold what they held when `known` was recorded; allocates nothing. */
function agrees(ctx: Context, known: Prepared): boolean {
  const res = ctx.res;
  for (let i = 0; i < known.watched.length; i++) {
    if (!sameValue(known.before[i], res.getHeader(known.watched[i]!) as Value)) return false;
  }
  return true;
}

/** Every response header: names and values, in Node's order. */
function snapshot(ctx: Context): Map<string, Value> {
  const all = new Map<string, Value>();
  for (const name of ctx.res.getHeaderNames()) all.set(name, ctx.res.getHeader(name) as Value);
  return all;
}

/** The answers remembered for one entry of one key, by Accept-Encoding value. */
interface ForEntry {
  readonly created: number;
  readonly length: number;
  readonly byEncodings: Map<string, Prepared>;
  bytes: number;
}

/** At most this many Accept-Encoding values are remembered per entry: browsers send a handful. */
const encodingsPerEntry = 16;

/** The remembered answers of one middleware, by cache key, bounded in bytes of body. */
export class PreparedHits {
  readonly #lru: LRUCache<string, ForEntry>;

  /** @param maxBytes - bytes of bodies held at most (they are usually shared with the representation memo) */
  constructor(maxBytes = 32 * 1024 * 1024) {
    this.#lru = new LRUCache<string, ForEntry>({
      maxSize: maxBytes,
      sizeCalculation: (e, key) => e.bytes + key.length + 256,
    });
  }

  /**
   * Called when the pipeline is about to process a replayed `entry`: gives
   * the remembered answer and returns true (the pipeline is skipped), or
   * returns false and arranges for this run of the pipeline to be remembered.
   *
   * @param ctx - the request, its response as replayed (and as any inner middleware left it)
   * @param state - its koa-buffer state
   * @param key - the cache key
   * @param entry - the entry replayed
   */
  answer(ctx: Context, state: RequestState, key: string, entry: CacheEntry): boolean {
    // ctx.response rather than ctx's delegating accessors: the same properties, one call less each on every hit.
    const { response } = ctx;
    if (ctx.respond === false || ctx.res.headersSent || !response.writable) return false;
    if (response.body !== entry.body || response.status !== entry.status) return false;
    const encodings = ctx.request.headers['accept-encoding'] ?? '';
    // The entry is told by its key, creation time and length; no string is built per hit.
    const forEntry = this.#lru.get(key, plainGet);
    const known =
      forEntry !== undefined && forEntry.created === entry.created && forEntry.length === entry.body.length
        ? forEntry.byEncodings.get(encodings)
        : undefined;
    if (
      known !== undefined &&
      known.status === response.status &&
      (known.upgradeWaits === undefined || known.upgradeWaits()) &&
      agrees(ctx, known)
    ) {
      const res = ctx.res;
      for (let i = 0; i < known.removed.length; i++) res.removeHeader(known.removed[i]!);
      setBufferBody(ctx, known.body);
      for (let i = 0; i < known.set.length; i++) res.setHeader(known.set[i]![0], known.set[i]![1]);
      return true;
    }
    const before = snapshot(ctx);
    state.onFinish.push((done) => this.#remember(done, state, key, entry, encodings, before));
    return false;
  }

  /** After the pipeline: what it did to a plain 200 becomes the answer for the same inputs. */
  #remember(
    ctx: Context,
    state: RequestState,
    key: string,
    entry: CacheEntry,
    encodings: string,
    before: Map<string, Value>,
  ): void {
    if (state.failed || ctx.status !== 200 || !Buffer.isBuffer(ctx.body)) return;
    const after = snapshot(ctx);
    const set: Array<[string, number | string | readonly string[]]> = [];
    for (const [name, value] of after)
      if (value !== undefined && !sameValue(before.get(name), value)) set.push([name, value]);
    // Koa's body setter sets Content-Length from the body when no Transfer-Encoding is left: not twice.
    const lengthAt = set.findIndex(([name]) => name === 'content-length');
    if (lengthAt >= 0 && !after.has('transfer-encoding') && Number(set[lengthAt]![1]) === ctx.body.length)
      set.splice(lengthAt, 1);
    const removed = [...before.keys()].filter((name) => !after.has(name));
    const watched = [...new Set([...pipelineHeaders, ...set.map(([name]) => name), ...removed])];
    let forEntry = this.#lru.get(key);
    if (forEntry === undefined || forEntry.created !== entry.created || forEntry.length !== entry.body.length) {
      forEntry = { created: entry.created, length: entry.body.length, byEncodings: new Map(), bytes: 0 };
    }
    if (forEntry.byEncodings.size >= encodingsPerEntry && !forEntry.byEncodings.has(encodings)) return;
    const prepared: Prepared = {
      status: 200,
      watched,
      before: watched.map((name) => before.get(name)),
      set,
      removed,
      body: ctx.body,
      upgradeWaits: state.upgradeWaits,
    };
    forEntry.byEncodings.set(encodings, prepared);
    forEntry.bytes += ctx.body.length + encodings.length;
    // Set again so the LRU counts the new size.
    this.#lru.set(key, forEntry);
  }
}
