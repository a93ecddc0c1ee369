/**
 * One response on its way through the pipeline (`Work`), what the steps
 * share between requests (`Shared`), and the CHECK step that decides
 * whether a response is koa-buffer's to rework at all.
 *
 * The steps read and write through `ctx.request` and `ctx.response`, not
 * through the accessors Koa's context delegates to them (`ctx.status`,
 * `ctx.body`, `ctx.set` …): the same properties, but every delegating
 * accessor shares one generic body, whose property lookups V8 cannot
 * specialise. On a cache hit they cost a measurable share of the requests a
 * second (docs/decisions/0009-hit-path-is-measured.md).
 */
import type { Readable } from 'node:stream';
import type { Context } from 'koa';
import type { DecisionLog } from '../base/decision-log.ts';
import type { CacheFacts } from '../cache/seam.ts';
import type { CacheRuntime } from '../cache/runtime.ts';
import type { ResolvedOptions } from '../config/options.ts';
import type { ChangingBodies } from '../encoding/changing.ts';
import type { Dictionaries } from '../encoding/dictionaries/dictionaries.ts';
import type { KnownEntity, RepresentationMemo } from '../encoding/memo.ts';
import type { Upgrades } from '../encoding/upgrades.ts';
import { responseHeader } from '../http/headers.ts';
import { isHtml, mediaType } from '../http/media-types.ts';
import type { Coding } from '../http/negotiate.ts';
import { Md5, md5 } from '../native/exports.ts';
import { copyInSlices, largeBody, nextTurn, sameInSlices } from '../native/slices.ts';
import type { MemoAnswers } from './replay/memo-answers.ts';
import type { PreparedHits } from './replay/prepared-hits.ts';
import type { RequestState } from './state.ts';
import { noTransform } from './switches.ts';

/** What one `buffer()` middleware shares between its requests. */
export interface Shared {
  readonly config: ResolvedOptions;
  readonly memo: RepresentationMemo;
  readonly log: DecisionLog;
  /** Compressions under way, by memo key, so concurrent requests for new bytes compress them once. */
  readonly compressing: Map<string, Promise<Buffer | null>>;
  /** Hot bodies waiting for their smallest encoding (adaptive compression). */
  readonly upgrades: Upgrades;
  /** Addresses whose body changes on every request: they skip the memo (encoding/changing.ts). */
  readonly changing: ChangingBodies;
  /** Compression dictionaries (encoding/dictionaries/); undefined when off. */
  readonly dictionaries: Dictionaries | undefined;
  /** The pipeline's answers to bodies the memo recognised, given again (replay/memo-answers.ts). */
  readonly answers: MemoAnswers;
  /** The pipeline's answers to cache hits, given again (replay/prepared-hits.ts). */
  readonly prepared: PreparedHits;
  /** The server-side cache; undefined without one. */
  readonly cache: CacheRuntime | undefined;
}

/** One response on its way through the pipeline. */
export interface Work {
  readonly ctx: Context;
  readonly state: RequestState;
  readonly options: ResolvedOptions;
  /** What the cache said of this request; undefined when it never reached a key. */
  readonly cache: CacheFacts | undefined;
  /** The body as the action made it (JSON already serialised); turned into bytes only when needed. */
  readonly source: string | Buffer;
  /** A Node.js stream body, which takes the stream path (stream.ts) instead of the steps. */
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
export type Step = (work: Work, shared: Shared) => boolean | Promise<boolean>;

// --- 1. CHECK ---------------------------------------------------------------

/** True for a Node.js readable stream, the only stream bodies the stream path handles. */
export function isNodeReadable(body: unknown): body is Readable {
  return (
    typeof body === 'object' &&
    body !== null &&
    typeof (body as Readable).pipe === 'function' &&
    typeof (body as Readable).on === 'function' &&
    typeof (body as Readable).read === 'function'
  );
}

function isStreamLike(body: object): boolean {
  return (
    typeof (body as { pipe?: unknown }).pipe === 'function' ||
    body instanceof ReadableStream ||
    body instanceof Blob ||
    body instanceof Response
  );
}

/** The body as a string or bytes, a Node.js stream for the stream path, or the reason it is left alone. */
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

/**
 * CHECK: decides whether koa-buffer handles this response, with its options
 * as resolved after the action; the Work when it does.
 */
export function check(
  ctx: Context,
  state: RequestState,
  cache: CacheFacts | undefined,
  shared: Shared,
): Work | undefined {
  const skip = (reason: string): undefined => {
    shared.log.debug('log_skipped', { reason });
    return undefined;
  };
  const options = state.options;
  if (options === undefined) return skip('ctx.state.buffer turns koa-buffer off for this response');
  if (ctx.respond === false || ctx.res.headersSent) return skip('the response is sent by other means');
  // A client that went away needs nothing, unless this request builds a cache entry other requests wait for.
  if (!ctx.response.writable && !cache?.builds) return skip('the client has gone');
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
    cache,
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

// --- the entity: its digest and what the memo knows of it ----------------------

/** MD5 of the entity, computed once; a new entity is taught to the memo under its variant. */
export function digest(work: Work, shared: Shared): string {
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
export const largeEntity = 1024 * 1024;

/** Computes the digest of a large entity ahead of use, in slices; small ones are hashed in one call when needed. */
export async function digestInSlices(work: Work, shared: Shared): Promise<void> {
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

/**
 * True when OPTIMISE squashes this response: HTML, never a replayed or
 * renewed entry (it was optimised when built), no no-transform.
 */
export function squashed(work: Work): boolean {
  return (
    work.options.optimiseContent >= 1 &&
    isHtml(work.type) &&
    !work.cache?.replayed &&
    !work.cache?.renewed &&
    !noTransform(work.ctx)
  );
}

/** Sets the variant the entity is made under: the optimisation settings, and what link rewriting reads. */
export function chooseVariant(work: Work, wanted: boolean): void {
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
export function recall(work: Work, shared: Shared): KnownEntity | undefined | Promise<KnownEntity | undefined> {
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
