/**
 * Compression dictionaries in the pipeline (RFC 9842; docs/architecture.md,
 * "Compression dictionaries"): what COMPRESS asks of them.
 *
 *   scope   — the rule covering this response (GET/HEAD, 200, path and type), if any
 *   offer   — `Use-As-Dictionary` on the response, the entity kept by its SHA-256
 *   encode  — the dcz bytes for a request whose `Available-Dictionary` names a
 *             kept dictionary and whose Accept-Encoding has `dcz`; undefined
 *             (the normal coding) for anything else
 *
 * A stream body in a rule's scope whose length is known and within the
 * rule's `maxSize` is read into memory first ({@link Dictionaries.whole}), so
 * versioned static assets served by koa-send or koa-static take part too.
 */
import { stat } from 'node:fs/promises';
import type { Readable } from 'node:stream';
import type { Context } from 'koa';
import type { DecisionLog } from '../../base/decision-log.ts';
import { isGetOrHead } from '../../http/headers.ts';
import type { RepresentationMemo } from '../memo.ts';
import { cacheControlSeconds } from '../../cache/lifetime.ts';
import { notStorableAsSent, type StorableOptions } from '../../cache/storable.ts';
import { beforeHeadIsSent, type SentHead } from '../../http/sent-head.ts';
import { addVary } from '../../http/vary.ts';
import { dczAvailable, dczEncodeOffLoop, usableAsDictionary } from './dcz.ts';
import { DictionaryKeeper, type KeeperDeps } from './keeper.ts';
import { acceptsDcz, availableDictionary } from './request.ts';
import { ruleFor, type DictionaryRule } from '../../config/dictionaries.ts';

/** A dictionary-coded body and the coding name its ETag carries (`dcz-` and the dictionary's hash, shortened). */
export interface DictionaryCoded {
  readonly bytes: Buffer;
  readonly tag: `dcz-${string}`;
}

/**
 * How long a shared copy of a dictionary may live: as long as a browser may
 * use it, the rule's `ttl`, else the response's own freshness (`max-age`;
 * RFC 9842 lets a browser use a dictionary only while it is fresh), else 0:
 * the memo keeps it, the store does not.
 */
function sharedLifetimeMs(rule: DictionaryRule, head: SentHead): number {
  if (rule.ttl !== undefined) return rule.ttl * 1000;
  const cacheControl = head.headers['cache-control'];
  const maxAge = cacheControlSeconds(cacheControl === undefined ? undefined : String(cacheControl)).get('max-age');
  return maxAge === undefined ? 0 : maxAge * 1000;
}

/** Hex digits of the dictionary hash an ETag names: 64 bits tell a page's few dictionaries apart. */
const tagHashDigits = 16;

/** The dictionaries of one `buffer()` middleware. */
export class Dictionaries {
  readonly #rules: readonly DictionaryRule[];
  readonly #keeper: DictionaryKeeper;
  readonly #memo: RepresentationMemo;
  readonly #log: DecisionLog;

  constructor(rules: readonly DictionaryRule[], deps: KeeperDeps) {
    this.#rules = rules;
    this.#keeper = new DictionaryKeeper(deps);
    this.#memo = deps.memo;
    this.#log = deps.log;
  }

  /** Bytes of the table of dictionary versions kept per path (at most versionsBytesMax, keeper.ts). */
  get versionsBytes(): number {
    return this.#keeper.versionsBytes;
  }

  /**
   * The middleware's dictionaries, or undefined when the option is off or
   * zstd-napi is missing (dcz cannot be made without it).
   */
  static of(rules: readonly DictionaryRule[], deps: KeeperDeps): Dictionaries | undefined {
    return rules.length > 0 && dczAvailable ? new Dictionaries(rules, deps) : undefined;
  }

  /**
   * True when the request names a dictionary: its answer depends on that
   * header, which a prepared cache hit does not look at.
   */
  static asked(dictionaries: Dictionaries | undefined, ctx: Context): boolean {
    return dictionaries !== undefined && ctx.request.headers['available-dictionary'] !== undefined;
  }

  /** The rule covering this response: a 200 answer to GET or HEAD whose path and media type a rule matches. */
  scope(ctx: Context, type: string): DictionaryRule | undefined {
    const method = ctx.request.method;
    if (ctx.response.status !== 200 || !isGetOrHead(method)) return undefined;
    return ruleFor(this.#rules, ctx.request.path, type);
  }

  /**
   * Offers `entity` as a dictionary: `Vary: Available-Dictionary` (the
   * answer depends on it), `Use-As-Dictionary`, and the bytes kept. An
   * entity too large or unusable as a raw dictionary is not offered.
   *
   * A dictionary is shared: every browser that later names it is answered
   * with it, in every process of the store. So it comes only from what a
   * shared cache could keep: never from a request with credentials, and
   * never from a response that, as sent, sets a cookie, is private or
   * no-store, or varies outside the key (judged on the head as sent, after
   * every outer middleware, ../sent-head.ts): such a response loses its
   * `Use-As-Dictionary` and nothing of it is kept.
   *
   * @param options - `varyBy` and `cacheMaxSize` of this response, as storability reads them
   */
  offer(ctx: Context, rule: DictionaryRule, entity: Buffer, options: StorableOptions): void {
    addVary(ctx, 'Available-Dictionary');
    if (entity.length > rule.maxSize || !usableAsDictionary(entity)) return;
    if (ctx.request.headers.authorization !== undefined) return this.#refused('AUTHORIZATION');
    ctx.response.set('Use-As-Dictionary', rule.header);
    const path = ctx.request.path;
    const res = ctx.res;
    beforeHeadIsSent(res, (head) => {
      const reason = head === undefined ? 'ABANDONED' : notStorableAsSent(head, { status: 200, body: entity }, options);
      if (reason !== undefined) {
        if (head !== undefined && !head.written) res.removeHeader('use-as-dictionary');
        return this.#refused(reason);
      }
      const hash = this.#keeper.offer(rule, path, entity, sharedLifetimeMs(rule, head!));
      this.#log.stats.dictionaries.offered++;
      this.#log.debug('log_dictionary_offered', { size: entity.length, match: rule.match, hash });
      return undefined;
    });
  }

  #refused(reason: string): undefined {
    this.#log.debug('log_dictionary_refused', { reason });
    return undefined;
  }

  /**
   * The dcz body of `entity` for this request, or undefined for the normal
   * coding (no usable `Available-Dictionary`, no `dcz`, a body over the
   * rule's limit, a dictionary not kept, or no gain).
   *
   * @param md5 - the entity's MD5 hex, for the memo of coded bytes
   * @param level - the zstd level
   */
  async encode(
    ctx: Context,
    rule: DictionaryRule,
    entity: Buffer,
    md5: () => string,
    level: number,
  ): Promise<DictionaryCoded | undefined> {
    const headers = ctx.request.headers;
    const hash = availableDictionary(headers['available-dictionary']);
    if (hash === undefined) return this.#unused(headers['available-dictionary'] === undefined ? '' : 'malformed');
    if (!acceptsDcz(headers['accept-encoding'])) return this.#unused('dcz not in Accept-Encoding');
    if (entity.length > rule.maxSize) return this.#unused(`body over maxSize (${rule.maxSize})`);
    const found = this.#keeper.find(rule, hash);
    const dictionary = found instanceof Promise ? await found : found;
    if (dictionary === undefined) return this.#unused(`dictionary ${hash} not kept`);
    const tag = `dcz-${hash.slice(0, tagHashDigits)}` as const;
    const coding = `dcz-${hash}`;
    const known = this.#memo.encoded(md5(), coding, level);
    if (known === null) return this.#unused('no gain');
    if (known !== undefined) {
      this.#log.stats.dictionaries.used++;
      return { bytes: known, tag };
    }
    const bytes = await dczEncodeOffLoop(entity, dictionary, hash, level);
    const gain = bytes.length < entity.length;
    this.#memo.remember(md5(), coding, level, gain ? bytes : null);
    this.#log.debug('log_dictionary_coded', { size: entity.length, compressedSize: bytes.length, hash });
    if (!gain) return this.#unused('no gain');
    this.#log.stats.dictionaries.used++;
    return { bytes, tag };
  }

  #unused(reason: string): undefined {
    if (reason !== '') this.#log.debug('log_dictionary_unused', { reason });
    return undefined;
  }

  /**
   * A stream body in a rule's scope, read whole, when its length is known
   * (Content-Length, or the file's size for an fs stream) and within the
   * rule's `maxSize`; undefined to leave it to the stream path. The bytes the
   * stream gives are what count, not the length it declares: once more than
   * `maxSize` have come, what was read is put back at the stream's front
   * (`unshift`) and the stream path sends it all, so nothing is lost and no
   * more than `maxSize` and one chunk is held.
   */
  async whole(ctx: Context, stream: Readable, type: string): Promise<Buffer | undefined> {
    const rule = this.scope(ctx, type);
    if (rule === undefined) return undefined;
    let length: number | undefined = ctx.response.length;
    const path = (stream as { path?: unknown }).path;
    if (length === undefined && (typeof path === 'string' || Buffer.isBuffer(path)))
      length = await stat(path).then(
        (s) => s.size,
        () => undefined,
      );
    if (length === undefined || length > rule.maxSize) return undefined;
    const chunks: unknown[] = [];
    let read = 0;
    // Leaving the loop early must not destroy the stream: it is sent after all.
    for await (const chunk of stream.iterator({ destroyOnReturn: false }) as AsyncIterable<unknown>) {
      chunks.push(chunk);
      read += typeof chunk === 'string' ? Buffer.byteLength(chunk) : chunk instanceof Uint8Array ? chunk.length : 0;
      if (read > rule.maxSize || !(typeof chunk === 'string' || chunk instanceof Uint8Array)) {
        putBack(stream, chunks);
        return undefined;
      }
    }
    return Buffer.concat(chunks.map((chunk) => (typeof chunk === 'string' ? Buffer.from(chunk) : (chunk as Buffer))));
  }
}

/**
 * Puts `chunks` (read from `stream`, in order) back at its front, so its
 * next reader gets them first. In the same turn as the last read, so a
 * stream that has just ended has not yet emitted 'end' (after which unshift
 * is refused).
 */
function putBack(stream: Readable, chunks: readonly unknown[]): void {
  const encoding = stream.readableEncoding ?? undefined;
  for (let i = chunks.length - 1; i >= 0; i--) stream.unshift(chunks[i], encoding);
}
