/**
 * `buffer(options)`: the middleware that reworks every response on its way
 * out, in this order (docs/architecture.md, "The pipeline"):
 *
 *   CHECK → OPTIMISE → COMPRESS → STORE → VALIDATE (304) → SEND, then FINISH
 *
 * FINISH runs in a `finally`, so a request that built a cache entry always
 * answers its waiters and releases its lock, also when a step throws.
 *
 * The steps read and write through `ctx.request` and `ctx.response`, not
 * through the accessors Koa's context delegates to them (`ctx.status`,
 * `ctx.body`, `ctx.set` …): the same properties, but every delegating
 * accessor shares one generic body, whose property lookups V8 cannot
 * specialise. On a cache hit they cost a sixth of the requests a second.
 */
import type { Readable } from 'node:stream';
import type { Context, Middleware, Next } from 'koa';
import { answeredAsPrepared, bufferIsCached } from './cache/cached.ts';
import { purgeMethods, type PurgeMethods } from './cache/purge/api.ts';
import { takeTagHeader } from './http/tags.ts';
import { CacheRuntime } from './cache/runtime.ts';
import type { CacheStore } from './base/store.ts';
import { openState, requestState, type RequestState } from './pipeline/state.ts';
import { Md5, md5 } from './native/exports.ts';
import { resolveOptions, type BufferOptions, type ResolvedOptions } from './config/options.ts';
import { resolveResponseOptions } from './config/per-response.ts';
import {
  coldLevel,
  heldRepresentation,
  hotCoding,
  hotLevel,
  temperatureOrders,
  type Held,
} from './encoding/adaptive.ts';
import { ChangingBodies } from './encoding/changing.ts';
import { compress } from './encoding/compress.ts';
import { codingAvailable } from './http/codings.ts';
import { notModifiedReason } from './http/conditional.ts';
import { DecisionLog } from './base/decision-log.ts';
import { Dictionaries } from './encoding/dictionaries/dictionaries.ts';
import { codedTag, entityTag } from './http/etag.ts';
import { httpDate, lastModifiedSeconds } from './http/last-modified.ts';
import { isHtml, mediaType } from './http/media-types.ts';
import { RepresentationMemo, type KnownEntity } from './encoding/memo.ts';
import { MemoAnswers } from './pipeline/replay/memo-answers.ts';
import { negotiate, type Coding } from './http/negotiate.ts';
import { optimiseHtml } from './encoding/optimise.ts';
import { copyInSlices, largeBody, sameInSlices, utf8InSlices } from './native/slices.ts';
import { isNodeReadable, respondWithStream } from './pipeline/stream.ts';
import { compressionRefusal, noTransform } from './pipeline/switches.ts';
import { upgradeMaxSize, Upgrades } from './encoding/upgrades.ts';
import { addVary } from './http/vary.ts';

/** What one `buffer()` middleware shares between its requests. */
interface Shared {
  readonly config: ResolvedOptions;
  readonly memo: RepresentationMemo;
  readonly log: DecisionLog;
  /** Compressions under way, by memo key, so concurrent requests for new bytes compress them once. */
  readonly compressing: Map<string, Promise<Buffer | null>>;
  /** Hot bodies waiting for their smallest encoding (adaptive compression). */
  readonly upgrades: Upgrades;
  /** Addresses whose body changes on every request: they skip the memo (encoding/changing.ts). */
  readonly changing: ChangingBodies;
  /** Compression dictionaries (response/dictionaries/); undefined when off. */
  dictionaries: Dictionaries | undefined;
  /** The pipeline's answers to bodies the memo recognised, given again (pipeline/replay/memo-answers.ts). */
  readonly answers: MemoAnswers;
}

/** A response header as one string; undefined when absent (Koa 3's response.get returns what Node stored). */
function responseHeader(ctx: Context, name: string): string | undefined {
  const value = ctx.res.getHeader(name);
  if (value === undefined) return undefined;
  return Array.isArray(value) ? value.join(', ') : String(value);
}

/** One response on its way through the pipeline. */
interface Work {
  readonly ctx: Context;
  readonly state: RequestState;
  readonly options: ResolvedOptions;
  /** The body as the action made it (JSON already serialised); turned into bytes only when needed. */
  readonly source: string | Buffer;
  /** A Node.js stream body, which takes the stream path (pipeline/stream.ts) instead of the steps below. */
  readonly stream: Readable | undefined;
  /** Bare, lowercased media type. */
  readonly type: string;
  /** The optimisation settings that turn raw into entity ('' for none), part of the memo key. */
  variant: string;
  /** The uncompressed (optimised) entity: what the ETag and the cache describe. */
  entity: Buffer;
  /** MD5 hex of entity, once known. */
  md5: string | undefined;
  /** The coding sent; a dictionary coding names its dictionary (`dcz-<hash>`), as its ETag does. */
  coding: Coding | 'identity' | `dcz-${string}`;
  /** The level of hot bytes sent, which their ETag names; undefined for cold or fixed-level bytes. */
  hotLevel: number | undefined;
  /** The bytes to send. */
  payload: Buffer;
  /** True when the body changes on every request at this address: no memo, and the ETag hashes the bytes sent. */
  changing: boolean;
  /** Whether the memo recognised the body: undefined until it has been asked (OPTIMISE asks, or the memo's answer). */
  recalled: boolean | undefined;
}

/** A pipeline step; false stops the pipeline (the response is complete). */
type Step = (work: Work, shared: Shared) => boolean | Promise<boolean>;

// --- 1. CHECK ---------------------------------------------------------------

function isStreamLike(body: object): boolean {
  return (
    typeof (body as { pipe?: unknown }).pipe === 'function' ||
    body instanceof ReadableStream ||
    body instanceof Blob ||
    body instanceof Response
  );
}

/** The body as a string or bytes, a Node.js stream for the stream path (4b), or the reason it is left alone. */
function bodySource(ctx: Context): { source: string | Buffer; stream?: Readable } | { skip: string } {
  const body: unknown = ctx.response.body;
  if (body === null || body === undefined) return { skip: 'empty body' };
  if (typeof body === 'string' || Buffer.isBuffer(body)) return { source: body };
  if (isNodeReadable(body)) return { source: '', stream: body };
  if (typeof body === 'object' && isStreamLike(body)) return { skip: 'web stream, Blob or Response body' };
  // Anything else Koa would send as JSON; serialise it the same way, so it can be compressed.
  const json = JSON.stringify(body);
  if (json === undefined) return { skip: 'body has no JSON form' };
  if (!ctx.res.hasHeader('Content-Type')) ctx.response.type = 'application/json; charset=utf-8';
  return { source: json };
}

/** What entity and payload hold until OPTIMISE sets them. */
const EMPTY = Buffer.alloc(0);

/** Decides whether koa-buffer handles this response, with its options as resolved after the action; the Work when it does. */
function check(ctx: Context, state: RequestState, shared: Shared): Work | undefined {
  const skip = (reason: string): undefined => {
    shared.log.debug('log_skipped', { reason });
    return undefined;
  };
  const options = state.options;
  if (options === undefined) return skip('ctx.state.buffer turns koa-buffer off for this response');
  if (ctx.respond === false || ctx.res.headersSent) return skip('the response is sent by other means');
  // A client that went away needs nothing, unless this request builds a cache entry other requests wait for.
  if (!ctx.response.writable && !state.storeEntry) return skip('the client has gone');
  const status = ctx.response.status;
  // RFC 9110 15.3.5, 15.3.7, 15.4.5: no content to rework; 1xx never reach here as a final status.
  if (status < 200 || status === 204 || status === 206 || status === 304) return skip(`status ${status}`);
  if (ctx.res.hasHeader('Content-Encoding')) return skip('Content-Encoding already set');
  const body = bodySource(ctx);
  if ('skip' in body) return skip(body.skip);
  if (body.source.length === 0 && body.stream === undefined) return skip('empty body');
  const type = mediaType(responseHeader(ctx, 'Content-Type'));
  if (type === undefined) return skip('no media type');
  if (options.excludedTypes.matches(type)) return skip(`excluded media type ${type}`);
  return {
    ctx,
    state,
    options,
    source: body.source,
    stream: body.stream,
    type,
    variant: '',
    entity: EMPTY,
    md5: undefined,
    coding: 'identity',
    hotLevel: undefined,
    payload: EMPTY,
    changing: false,
    recalled: undefined,
  };
}

/** MD5 of the entity, computed once; a new entity is taught to the memo under its variant. */
function digest(work: Work, shared: Shared): string {
  if (work.md5 === undefined) {
    work.md5 = md5(work.entity);
    learn(work, shared);
  }
  return work.md5;
}

/** Teaches a new entity to the memo (unless its address changes on every request), and notes whether it repeated. */
function learn(work: Work, shared: Shared, copy?: Buffer): void {
  if (work.changing) return;
  const repeated = shared.memo.learn(work.source, work.variant, work.entity, work.md5!, copy);
  if (shared.memo.enabled) shared.changing.observe(work.ctx.request.url, repeated);
}

/**
 * Entities above this size are hashed in slices of this size, with a turn of
 * the event loop between slices, so a multi-megabyte page does not hold
 * other requests up for the whole digest.
 */
const largeEntity = 1024 * 1024;

const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** Computes the digest of a large entity ahead of use, in slices; small ones are hashed in one call when needed. */
async function digestInSlices(work: Work, shared: Shared): Promise<void> {
  if (work.md5 !== undefined || work.entity.length <= largeEntity) return;
  const hasher = new Md5();
  for (let offset = 0; offset < work.entity.length; offset += largeEntity) {
    await nextTurn();
    hasher.update(work.entity.subarray(offset, offset + largeEntity));
  }
  work.md5 = hasher.digest('hex');
  // The memo keeps a copy of a Buffer body it learns: a large one is copied in slices first.
  const { source } = work;
  const copy =
    typeof source !== 'string' && shared.memo.wouldKeep(source, work.variant, work.entity, work.md5)
      ? await copyInSlices(source)
      : undefined;
  learn(work, shared, copy);
}

// --- 2. OPTIMISE ------------------------------------------------------------

/** True when OPTIMISE squashes this response: HTML, never a replayed entry (it was optimised when built), no no-transform. */
function squashed(work: Work): boolean {
  return work.options.optimiseContent >= 1 && isHtml(work.type) && !work.state.replayed && !noTransform(work.ctx);
}

/** Sets the variant the entity is made under: the optimisation settings, and what link rewriting reads. */
function chooseVariant(work: Work, wanted: boolean): void {
  const { ctx, options } = work;
  const level = options.optimiseContent === 2 ? 2 : 1;
  // Link rewriting depends on the host, path and scheme, so they are part of what made the entity.
  if (wanted)
    work.variant = options.rewriteLinks
      ? `o${level}\0${ctx.request.host}\0${ctx.request.path}\0${ctx.protocol}`
      : `o${level}`;
}

/**
 * Asks the memo for the body: a body seen before is recognised by comparison, so it is not encoded, optimised or
 * hashed again. A large body is compared in slices.
 */
function recall(work: Work, shared: Shared): KnownEntity | undefined | Promise<KnownEntity | undefined> {
  if (work.source.length <= largeBody) return recalled(work, shared, shared.memo.recall(work.source, work.variant));
  const candidate = shared.memo.candidate(work.source, work.variant);
  if (candidate === undefined) return recalled(work, shared, undefined);
  return sameInSlices(candidate.raw, work.source).then((same) => recalled(work, shared, same ? candidate : undefined));
}

function recalled(work: Work, shared: Shared, known: KnownEntity | undefined): KnownEntity | undefined {
  work.recalled = known !== undefined;
  if (known) {
    work.entity = known.entity;
    work.md5 = known.md5;
    work.payload = work.entity;
    shared.changing.observe(work.ctx.request.url, true);
  }
  return known;
}

const optimise: Step = async (work, shared) => {
  const { ctx, options } = work;
  if (work.recalled) return true;
  const wanted = squashed(work);
  const level = options.optimiseContent === 2 ? 2 : 1;
  if (work.recalled === undefined) {
    chooseVariant(work, wanted);
    const known = recall(work, shared);
    if (known instanceof Promise ? await known : known) return true;
  }
  const { source } = work;
  // A large string's UTF-8 is made in slices, a turn apart.
  const raw =
    typeof source !== 'string' ? source : source.length > largeBody ? await utf8InSlices(source) : Buffer.from(source);
  work.entity = raw;
  if (wanted) {
    if (raw.length > largeEntity) await nextTurn(); // encoding and squashing a large page are two long calls: not in one turn
    work.entity = await optimiseHtml(raw, {
      level,
      rewriteLinks: options.rewriteLinks,
      host: ctx.request.host,
      path: ctx.request.path,
      scheme: ctx.protocol,
      logger: shared.log.logger,
      messages: shared.log.messages,
      debug: shared.log.debugEnabled,
    });
  }
  work.payload = work.entity;
  if (work.entity.length > largeEntity && (options.generateEtag || shared.memo.enabled))
    await digestInSlices(work, shared);
  // A new body at an address whose body changes on every request: the memo would keep it for nothing.
  // Cache entries are keyed pages, and large entities are hashed above: both keep the memo's path.
  else
    work.changing =
      shared.memo.enabled &&
      !work.state.replayed &&
      work.state.storeEntry === undefined &&
      shared.changing.skipsMemo(ctx.request.url);
  return true;
};

/**
 * A body the memo recognises, in a request that brings nothing the last
 * answer to it did not see, gets that answer again (pipeline/replay/memo-answers.ts
 * lists the conditions): true when it did, and the pipeline is skipped.
 * Cache entries have their own prepared answers (pipeline/replay/prepared-hits.ts).
 */
function answeredFromMemo(work: Work, shared: Shared): boolean | Promise<boolean> {
  const { ctx, state, options } = work;
  if (!shared.memo.enabled || state.replayed || state.storeEntry !== undefined || options !== state.config)
    return false;
  const { method, headers } = ctx.request;
  if (method !== 'GET' && method !== 'HEAD') return false;
  if (headers['if-none-match'] !== undefined || headers['if-modified-since'] !== undefined) return false;
  if ((ctx as { compress?: unknown }).compress !== undefined || typeof options.lastModified === 'function')
    return false;
  if (shared.dictionaries?.scope(ctx, work.type) !== undefined) return false;
  chooseVariant(work, squashed(work));
  const found = recall(work, shared);
  return found instanceof Promise ? found.then(answerWith) : answerWith(found);

  function answerWith(known: KnownEntity | undefined): boolean | Promise<boolean> {
    if (known === undefined) return false;
    // The Last-Modified VALIDATE would set now: an answer that set another is out of date.
    const seconds = generatedLastModified(ctx, options);
    const answer = (at: number | undefined): boolean =>
      shared.answers.answer(ctx, state, known, at === undefined ? undefined : httpDate(at));
    return seconds instanceof Promise ? seconds.then(answer) : answer(seconds);
  }
}

// --- 3. COMPRESS ------------------------------------------------------------

/**
 * The representation of the current content the client already holds, when
 * VALIDATE will answer 304 for it: If-None-Match names this entity in any
 * coding the client accepts (adaptive.ts), so nothing needs compressing,
 * whichever coding the server would prefer now.
 */
function clientHolds(work: Work, shared: Shared): Held | undefined {
  const { ctx, options } = work;
  const ifNoneMatch = ctx.request.headers['if-none-match'];
  // A changing body's tag names the bytes sent (VALIDATE compares it as it is), not the entity.
  if (ifNoneMatch === undefined || !options.generate304 || !options.generateEtag || ctx.response.status !== 200)
    return undefined;
  if (work.changing) return undefined;
  if ((ctx.request.method !== 'GET' && ctx.request.method !== 'HEAD') || ctx.res.hasHeader('ETag')) return undefined;
  const levels = options.compressionLevels;
  return heldRepresentation(
    ifNoneMatch,
    digest(work, shared),
    ctx.request.headers['accept-encoding'],
    options.encodings,
    options.adaptiveCompression ? (coding) => hotLevel(coding, levels) : undefined,
  );
}

/**
 * The entity in `coding`: from the memo, else compressed now (concurrent
 * requests for the same new entity share one compression). null when
 * compression does not make it smaller.
 */
async function encoded(work: Work, coding: Coding, level: number, shared: Shared): Promise<Buffer | null> {
  const memo = shared.memo.enabled && !work.changing;
  const key = memo ? `${digest(work, shared)}\0${coding}\0${level}` : '';
  if (memo) {
    const known = shared.memo.encoded(work.md5!, coding, level);
    if (known !== undefined) return known;
  }
  const run = async (): Promise<Buffer | null> => {
    const { bytes, mode } = await compress(work.entity, coding, level);
    shared.log.debug('log_compressed', { size: work.entity.length, compressedSize: bytes.length, coding, level, mode });
    return bytes.length < work.entity.length ? bytes : null;
  };
  if (!memo) return run();
  let pending = shared.compressing.get(key);
  if (!pending) {
    pending = run().finally(() => shared.compressing.delete(key));
    shared.compressing.set(key, pending);
    shared.memo.remember(work.md5!, coding, level, await pending);
  }
  return pending;
}

/** The `upgradeWaits` of an answer that a prepared answer must not repeat: an upgrade is still to be asked for. */
const notFinal = (): boolean => false;

/** Bodies below this many bytes are compressed at the fixed level even when cold. */
const smallBody = 1024;

/**
 * Adaptive compression (encoding/adaptive.ts): the hot bytes when the memo
 * has them; else the cold bytes in `cold`, and when those were already in
 * the memo the body is hot, so its smallest encoding is queued, off this
 * request's path. null when compression does not make the body smaller.
 */
async function adaptiveEncoded(work: Work, cold: Coding, shared: Shared): Promise<Buffer | null> {
  const { ctx, options, state, entity } = work;
  // A small body costs microseconds at any usual level, and the cheapest levels may not shrink it at all
  // (87 bytes of HTML: br 2 gives 91, br 4 gives 76): it gets the fixed level.
  const coldAt =
    entity.length < smallBody ? options.compressionLevels[cold] : coldLevel(cold, options.compressionLevels);
  // Without the memo nothing is ever seen twice, and a changing body is never seen again: both stay cold.
  if (!shared.memo.enabled || work.changing) return encoded(work, cold, coldAt, shared);
  const md5 = digest(work, shared);
  const hot = hotCoding(ctx.request.headers['accept-encoding'], temperatureOrders(options.encodings));
  const hotAt = hot === undefined ? 0 : hotLevel(hot, options.compressionLevels);
  // A Buffer: upgraded; null: the upgrade gained nothing; undefined: not upgraded (yet).
  const hotBytes = hot === undefined ? null : shared.memo.encoded(md5, hot, hotAt);
  if (hotBytes) {
    work.coding = hot!;
    work.hotLevel = hotAt;
    return hotBytes;
  }
  const seen = shared.memo.encoded(md5, cold, coldAt) !== undefined;
  const bytes = await encoded(work, cold, coldAt, shared);
  // Seen before, so hot, and no upgrade known: ask for one. A prepared hit made of this answer lasts while it waits.
  const upgradable = hot !== undefined && hotBytes === undefined && (hot !== cold || hotAt !== coldAt);
  if (seen && upgradable && shared.upgrades.request(md5, entity, hot, hotAt, bytes?.length ?? entity.length, ctx.res))
    state.upgradeWaits = () => shared.upgrades.waits(md5, hot!, hotAt);
  // Not seen before, or the queue was full: a later request asks again, so this answer must not be given again.
  else if (upgradable && entity.length <= upgradeMaxSize) state.upgradeWaits = notFinal;
  return bytes;
}

const compressStep: Step = async (work, shared) => {
  const { ctx, options } = work;
  const identity = (reason: string): true => {
    shared.log.debug('log_identity', { size: work.entity.length, reason });
    return true;
  };
  const refusal = compressionRefusal(ctx, options, work.type);
  if (refusal !== undefined) return identity(refusal);
  addVary(ctx, 'Accept-Encoding');
  const rule = shared.dictionaries?.scope(ctx, work.type);
  if (rule !== undefined) shared.dictionaries!.offer(ctx, rule, work.entity, options);
  const held = clientHolds(work, shared);
  if (held) {
    // A 304 follows (VALIDATE), with the tag of what the client holds: nothing to compress.
    work.coding = held.coding;
    work.hotLevel = held.hotLevel;
    if (held.coding !== 'identity') ctx.response.set('Content-Encoding', held.coding);
    return true;
  }
  if (rule !== undefined && work.entity.length >= options.minCompressSize) {
    const level = options.compressionLevels.zstd;
    const coded = await shared.dictionaries!.encode(ctx, rule, work.entity, () => digest(work, shared), level);
    if (coded !== undefined) {
      work.coding = coded.tag;
      work.payload = coded.bytes;
      ctx.response.set('Content-Encoding', 'dcz');
      shared.log.debug('log_coding', { coding: 'dcz', size: work.payload.length });
      return true;
    }
  }
  const adaptive = options.adaptiveCompression;
  const offered = adaptive ? temperatureOrders(options.encodings).cold : options.encodings;
  const { coding, reason } = negotiate(ctx.request.headers['accept-encoding'], offered);
  if (coding === 'identity') return identity(reason ?? 'identity');
  if (work.entity.length < options.minCompressSize)
    return identity(`smaller than minCompressSize (${options.minCompressSize})`);
  if (!codingAvailable(coding)) {
    shared.log.error('log_encoding_unavailable', { name: coding });
    return identity(`${coding} is not available`);
  }
  work.coding = coding;
  const bytes = adaptive
    ? await adaptiveEncoded(work, coding, shared)
    : await encoded(work, coding, options.compressionLevels[coding], shared);
  if (bytes === null) {
    work.coding = 'identity';
    work.hotLevel = undefined;
    return identity(`${coding} would not make it smaller`);
  }
  work.payload = bytes;
  ctx.response.set('Content-Encoding', work.coding);
  shared.log.debug('log_coding', { coding: work.coding, size: work.payload.length });
  return true;
};

// --- 4. STORE ---------------------------------------------------------------

const store: Step = async (work) => {
  const { ctx, state } = work;
  if (!state.storeEntry || state.replayed) return true;
  const headers = { ...ctx.response.headers } as Record<string, string | string[]>;
  delete headers['content-encoding'];
  delete headers['content-length'];
  await state.storeEntry({ status: ctx.response.status, headers, body: work.entity }, ctx);
  return true;
};

// --- 5. VALIDATE ------------------------------------------------------------

/**
 * The Last-Modified VALIDATE sets on this response, in seconds: undefined
 * when `lastModified` is off, the response has its own, or nothing is known.
 * The memo's answers are checked against it too (answeredFromMemo).
 */
function generatedLastModified(
  ctx: Context,
  options: ResolvedOptions,
): number | undefined | Promise<number | undefined> {
  if (!options.lastModified || ctx.res.hasHeader('Last-Modified')) return undefined;
  // The options carry the template paths, the cache, the logger and the messages a scan needs.
  return lastModifiedSeconds(options.lastModified, ctx, options);
}

const validate: Step = async (work, shared) => {
  const { ctx, options } = work;
  // ETag, Last-Modified and 304 belong to 200 responses to GET and HEAD only.
  if (ctx.response.status !== 200 || (ctx.request.method !== 'GET' && ctx.request.method !== 'HEAD')) return true;
  if (!ctx.res.hasHeader('ETag')) {
    if (options.generateEtag)
      ctx.response.set(
        'ETag',
        work.changing
          ? entityTag(md5(work.payload), work.coding) // names the bytes sent (docs/decisions.md)
          : entityTag(digest(work, shared), work.coding, work.hotLevel),
      );
  } else if (work.coding !== 'identity') {
    // The action's strong tag named the uncompressed bytes; these are not them.
    const own = responseHeader(ctx, 'ETag')!;
    // Hot bytes differ from the cold bytes of their coding, so they name their level too, as generated tags do.
    const coded = codedTag(own, work.hotLevel === undefined ? work.coding : `${work.coding}${work.hotLevel}`);
    if (coded !== own) ctx.response.set('ETag', coded);
  }
  const found = generatedLastModified(ctx, options);
  const seconds = found instanceof Promise ? await found : found;
  if (seconds !== undefined) {
    ctx.response.set('Last-Modified', httpDate(seconds));
    // A generated date alone lets a browser hold the page fresh for a tenth of its age (RFC 9111 4.2.2).
    if (options.defaultCacheControl !== '' && !ctx.res.hasHeader('Cache-Control') && !ctx.res.hasHeader('Expires'))
      ctx.response.set('Cache-Control', options.defaultCacheControl);
  }
  if (!options.generate304) return true;
  const headers = ctx.request.headers;
  const reason = notModifiedReason({
    ifNoneMatch: headers['if-none-match'],
    ifModifiedSince: headers['if-modified-since'],
    etag: responseHeader(ctx, 'ETag'),
    lastModified: responseHeader(ctx, 'Last-Modified'),
    trustLastModified: options.trustLastModified,
  });
  if (reason === undefined) return true;
  shared.log.debug('log_not_modified', { reason });
  // Koa drops the body, Content-Type and Content-Length of a 304; the coding goes too.
  // ETag, Last-Modified, Vary, Cache-Control, Content-Location, Expires and Date stay (RFC 9110 15.4.5).
  ctx.response.status = 304;
  ctx.response.remove('Content-Encoding');
  return false;
};

// --- 6. SEND ----------------------------------------------------------------

const send: Step = (work) => {
  // Koa sets Content-Length from a Buffer body, unless Transfer-Encoding is set.
  work.ctx.response.remove('Transfer-Encoding');
  work.ctx.response.body = work.payload;
  return true;
};

/** The middleware `buffer()` returns: with `purge`, `purgeTag` and `purgeAll` (cache/purge/api.ts). */
export interface BufferMiddleware extends Middleware, PurgeMethods {
  /**
   * Closes the cache stores this middleware opened itself (`cache: true`,
   * `'sqlite:PATH'`, `'redis://…'`), for a graceful shutdown: a SQLite file is
   * checkpointed and closed, a Redis connection quit, so nothing keeps the
   * process alive. A store object you passed stays yours to close. A request
   * after `close()` opens the stores again.
   *
   * @example
   * const middleware = buffer({ cache: 'redis://cache.internal:6379' });
   * process.on('SIGTERM', () => server.close(() => void middleware.close()));
   */
  close(): Promise<void>;
}

/**
 * The cache store dictionaries are shared through: one other processes and
 * hosts can read; not the in-process store of `cache: true`, which would
 * only hold a second copy of what the memo holds.
 */
function sharedStore(cache: CacheRuntime, config: ResolvedOptions): CacheStore | undefined {
  if (config.cache === undefined || config.cache === true) return undefined;
  const store = cache.storeFor(config.cache);
  return store === undefined || 'error' in store ? undefined : store;
}

/** Steps 2 to 6, top to bottom. */
const pipeline: readonly Step[] = [optimise, compressStep, store, validate, send];

/**
 * The koa-buffer middleware: optimises HTML, compresses with br,
 * zstd or gzip, adds ETag and Last-Modified and answers 304 Not Modified,
 * for every response of the routes mounted after it. It installs
 * `ctx.bufferIsCached()` on every request it sees.
 *
 * @param options - see {@link BufferOptions}; all optional
 * @returns the Koa middleware
 * @throws BufferOptionError naming the first bad option, in ASCII order of option names
 * @example
 * const app = new Koa();
 * app.use(buffer({ optimiseContent: 1 }));
 * app.use((ctx) => { ctx.body = '<!doctype html><p>Hello</p>'; });
 */
export function buffer(options?: BufferOptions): BufferMiddleware {
  const config = resolveOptions(options);
  const memo = new RepresentationMemo(config.memoMaxSize);
  const log = new DecisionLog(config.logger, config.messages);
  const shared: Shared = {
    config,
    memo,
    log,
    compressing: new Map(),
    upgrades: new Upgrades(memo, log),
    changing: new ChangingBodies(),
    dictionaries: undefined,
    answers: new MemoAnswers(),
  };
  const cache = new CacheRuntime(config, shared.log);
  shared.dictionaries = Dictionaries.of(config.dictionaries, {
    memo,
    log,
    store: () => sharedStore(cache, config),
    storeTimeoutMs: config.cacheStoreTimeout * 1000,
  });
  const middleware = async function bufferMiddleware(ctx: Context, next: Next): Promise<void> {
    // An outer buffer() already reworks this request; a second pass would only redo its work.
    if (requestState(ctx)) return next();
    const state = openState(ctx, config, cache);
    ctx.bufferIsCached = bufferIsCached;
    try {
      try {
        await next();
      } catch (error) {
        // stale-if-error: a build that threw may be answered from its stale entry (cache/cached.ts).
        if (state.answerStale?.(ctx, error) !== true) throw error;
      }
      if (state.answerStale !== undefined && ctx.response.status >= 500) state.answerStale(ctx, undefined);
      resolveResponseOptions(ctx, state); // sections and ctx.state.buffer have had their say
      takeTagHeader(ctx.res, state); // stored with the entry, never sent
      // A cache hit the pipeline has answered before, for the very same inputs, is answered as it was then.
      const prepared = !Dictionaries.asked(shared.dictionaries, ctx) && answeredAsPrepared(ctx, state);
      let work = prepared ? undefined : check(ctx, state, shared); // 1. CHECK
      // A stream that may be coded with a dictionary is read whole, when small enough, and takes the steps below.
      const whole = work?.stream && (await shared.dictionaries?.whole(ctx, work.stream, work.type));
      if (work && whole) work = { ...work, source: whole, stream: undefined };
      if (work?.stream) await respondWithStream(work.stream, work, shared.log);
      else if (work) {
        const answered = answeredFromMemo(work, shared);
        if (!(answered instanceof Promise ? await answered : answered))
          for (const step of pipeline) if (!(await step(work, shared))) break;
      }
    } catch (error) {
      state.failed = true; // a build that threw ends its flight with ERROR
      throw error;
    } finally {
      for (const finish of state.onFinish) {
        try {
          await finish(ctx);
        } catch (error) {
          shared.log.error('log_finish_waiter_failed', { key: '', error: (error as Error)?.message ?? String(error) });
        }
      }
    }
  };
  return Object.assign(middleware, { close: () => cache.closeStores() }, purgeMethods(cache, config.messages));
}
