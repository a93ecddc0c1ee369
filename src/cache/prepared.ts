/**
 * Prepared hits: the pipeline's own answer to a replayed entry, remembered
 * and given again when the same entry is replayed to a request that would
 * go through the pipeline with exactly the same inputs, so a hit costs a
 * lookup and a few header sets instead of CHECK, OPTIMISE, COMPRESS and
 * VALIDATE.
 *
 * Nothing here decides anything the pipeline decides: the first replay of
 * an entry for an Accept-Encoding value goes through the whole pipeline,
 * and what it changed (headers set or removed, the final body) is recorded
 * beside the response as it stood when the pipeline began. A later replay
 * takes the shortcut only when its response stands exactly the same at that
 * point — status, body, every header name and value (Cache-Status aside,
 * whose ttl moves) — and its request differs in nothing the pipeline reads:
 * same Accept-Encoding, no conditional header, the `buffer()` options
 * unchanged by sections and `ctx.state.buffer`, and a `lastModified` that
 * is not a function. The entry's Last-Modified cannot move while the entry
 * is fresh: a newer app script or template makes the entry stale first.
 */
import type { Context } from 'koa';
import { LRUCache } from 'lru-cache';
import type { RequestState } from '../context.ts';
import type { CacheEntry } from './entry.ts';

/** Response headers as the pipeline found them: names in order, and their values. */
interface Headers {
  readonly names: readonly string[];
  readonly values: ReadonlyArray<number | string | readonly string[] | undefined>;
}

/** One remembered answer. */
interface Prepared {
  readonly before: Headers;
  readonly status: number;
  /** What the pipeline set (name, value) and removed. */
  readonly set: ReadonlyArray<readonly [string, number | string | readonly string[]]>;
  readonly removed: readonly string[];
  /** The body it sent. */
  readonly body: Buffer;
}

/** Cache-Status carries the entry's remaining ttl, which changes; the pipeline never touches it. */
const moving = 'cache-status';

function snapshot(ctx: Context, all: readonly string[] = ctx.res.getHeaderNames()): Headers {
  const names = all.filter((name) => name !== moving);
  return { names, values: names.map((name) => ctx.res.getHeader(name) as Headers['values'][number]) };
}

/** True when the response's headers (`all`, as getHeaderNames gave them) are exactly `known`; allocates nothing. */
function standsAs(ctx: Context, all: readonly string[], known: Headers): boolean {
  let j = 0;
  for (const name of all) {
    if (name === moving) continue;
    if (known.names[j] !== name || !sameValue(known.values[j], ctx.res.getHeader(name) as Headers['values'][number])) return false;
    j++;
  }
  return j === known.names.length;
}

function sameValue(a: Headers['values'][number], b: Headers['values'][number]): boolean {
  if (a === b) return true;
  if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) return false;
  return a.every((item, i) => item === b[i]);
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
    this.#lru = new LRUCache<string, ForEntry>({ maxSize: maxBytes, sizeCalculation: (e, key) => e.bytes + key.length + 256 });
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
    if (ctx.respond === false || ctx.res.headersSent || !ctx.writable) return false;
    if (ctx.body !== entry.body || ctx.status !== entry.status) return false;
    const encodings = ctx.request.headers['accept-encoding'] ?? '';
    // The entry is told by its key, creation time and length; no string is built per hit.
    let forEntry = this.#lru.get(key);
    if (forEntry !== undefined && (forEntry.created !== entry.created || forEntry.length !== entry.body.length)) forEntry = undefined;
    const all = ctx.res.getHeaderNames();
    const known = forEntry?.byEncodings.get(encodings);
    if (known !== undefined && known.status === ctx.status && standsAs(ctx, all, known.before)) {
      ctx.body = known.body;
      for (const [name, value] of known.set) ctx.res.setHeader(name, value);
      for (const name of known.removed) ctx.res.removeHeader(name);
      return true;
    }
    const before = snapshot(ctx, all);
    state.onFinish.push((done) => this.#remember(done, state, key, entry, encodings, before));
    return false;
  }

  /** After the pipeline: what it did to a plain 200 becomes the answer for the same inputs. */
  #remember(ctx: Context, state: RequestState, key: string, entry: CacheEntry, encodings: string, before: Headers): void {
    if (state.failed || ctx.status !== 200 || !Buffer.isBuffer(ctx.body)) return;
    const after = snapshot(ctx);
    const set: Array<[string, number | string | readonly string[]]> = [];
    for (let i = 0; i < after.names.length; i++) {
      const name = after.names[i]!;
      const at = before.names.indexOf(name);
      const value = after.values[i];
      if (value !== undefined && (at < 0 || !sameValue(before.values[at], value))) set.push([name, value]);
    }
    const removed = before.names.filter((name) => !after.names.includes(name));
    let forEntry = this.#lru.get(key);
    if (forEntry === undefined || forEntry.created !== entry.created || forEntry.length !== entry.body.length) {
      forEntry = { created: entry.created, length: entry.body.length, byEncodings: new Map(), bytes: 0 };
    }
    if (forEntry.byEncodings.size >= encodingsPerEntry && !forEntry.byEncodings.has(encodings)) return;
    forEntry.byEncodings.set(encodings, { before, status: 200, set, removed, body: ctx.body });
    forEntry.bytes += ctx.body.length + encodings.length;
    // Set again so the LRU counts the new size.
    this.#lru.set(key, forEntry);
  }
}
