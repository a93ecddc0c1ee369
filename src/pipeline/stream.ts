/**
 * The stream path: a response whose body is a Node.js stream (a file from
 * koa-static or koa-send, a proxied upstream, a generated report) is never
 * read into memory. It gets what koa-compress, koa-etag and
 * koa-conditional-get give it, in one place:
 *
 * - a weak ETag from the file's stat when the stream is an `fs.ReadStream`
 *   with a path, computed as koa-etag does (the `etag` package's stattag:
 *   `W/"<size hex>-<mtime ms hex>"`), so tags stay valid across the swap;
 * - 304 Not Modified by If-None-Match against any ETag, else by
 *   If-Modified-Since against the Last-Modified the app set (koa-send sets
 *   one); the unread stream is destroyed at once, so its file descriptor is
 *   freed before the response ends;
 * - compression as a stream (br, gzip and deflate through node:zlib, zstd
 *   through zstd-napi's CompressStream), joined to the source by
 *   `stream.pipeline`, so back-pressure holds memory to a few buffers
 *   whatever the length, and an error on either side destroys both and
 *   cuts the response short instead of hanging it (on Koa 2 too, whose
 *   `.pipe()` to the socket would not);
 * - an HTML stream squashed as it flows, before compression, to the bytes
 *   the buffered path would squash the whole page to (optimiseContent 1 and
 *   2 alike: level 2's minifiers need whole script and style blocks, and are
 *   not applied to streams), unless the response says no-transform
 *   (encoding/squash-transform.ts);
 * - a live stream (a streamed page, server-sent events, a proxied upstream)
 *   is flushed whenever its source has nothing more ready, so every byte the
 *   app wrote is decodable by the client at once (live-flush.ts);
 * - a static file is compressed once: its compressed bytes are kept in the
 *   representation memo under the file's identity (device, inode, size,
 *   mtime) and coding, and a file seen again is recompressed at its coding's
 *   smallest setting off the request path (file-memo.ts); an edited file is
 *   a new identity.
 */
import { pipeline, type Duplex, type Readable, type Transform } from 'node:stream';
import zlib from 'node:zlib';
import type { Context } from 'koa';
import { storeStream, type CacheFacts } from '../cache/seam.ts';
import type { ResolvedOptions } from '../config/options.ts';
import { squashOptions } from '../encoding/optimise.ts';
import { squashTransform } from '../encoding/squash-transform.ts';
import { LiveBrotli } from '../encoding/live-brotli.ts';
import { zstdLib } from '../http/codings.ts';
import { isGetOrHead, responseHeader } from '../http/headers.ts';
import { codedTag } from '../http/etag.ts';
import { isHtml } from '../http/media-types.ts';
import type { SquashOptions } from '../native/types.ts';
import { feedFile, fileDescriptor, holdOpen, isPlainFileStream, type HeldOpen } from './file-feed.ts';
import { fileIdentity, fileMemo, type FileMemo } from './file-memo.ts';
import { recentStat } from './file-stats.ts';
import { flushWhenIdle } from './live-flush.ts';
import type { Shared } from './work.ts';
import type { Coding } from '../http/negotiate.ts';
import { chooseCoding, compressible, type Choice } from './coding.ts';
import { notModifiedNow } from './conditional.ts';
import type { RequestState } from './state.ts';
import { noTransform } from './switches.ts';

/** The streaming zstd compressor; zstd is chosen only when zstd-napi loaded (http/codings.ts). */
function zstdStream(level: number): Transform {
  return new zstdLib!.zstd.CompressStream({ compressionLevel: level });
}

/** What the stream path needs to know about the response. */
export interface StreamResponse {
  readonly ctx: Context;
  readonly options: ResolvedOptions;
  /** Bare, lowercased media type. */
  readonly type: string;
  /** What the cache said of this request; undefined when it never reached a key. */
  readonly cache: CacheFacts | undefined;
  /** The request's pipeline state (the tag header taken off the response). */
  readonly state: RequestState;
}

/** What the stat of a file stream says: koa-etag's weak tag, and the file's identity for the memo. */
interface FileFacts {
  /** `W/"<size hex>-<mtime ms hex>"`, as koa-etag (the `etag` package's stattag) gives it. */
  readonly tag: string;
  /** Device, inode, size and mtime: an edited or replaced file is another identity. */
  readonly identity: string;
  readonly size: number;
  readonly path: string | Buffer;
}

/**
 * The stat of the file a stream reads (one from under a second ago while the
 * size and mtime the response declares still match it: file-stats.ts);
 * undefined when the stream names no regular file or the stat fails (the
 * stream will then report its own error).
 */
async function fileFacts(stream: Readable, ctx: Context): Promise<FileFacts | undefined> {
  const path = (stream as { path?: unknown }).path;
  if (typeof path !== 'string' && !Buffer.isBuffer(path)) return undefined;
  const length = responseHeader(ctx, 'Content-Length');
  const declared = {
    size: length === undefined || !wholeFile(stream) ? undefined : Number(length),
    lastModified: responseHeader(ctx, 'Last-Modified'),
  };
  try {
    const stats = await recentStat(path, declared);
    if (!stats.isFile()) return undefined;
    return {
      tag: `W/"${stats.size.toString(16)}-${stats.mtime.getTime().toString(16)}"`,
      identity: fileIdentity(stats),
      size: stats.size,
      path,
    };
  } catch {
    return undefined;
  }
}

/** True when a file stream reads its whole file: a byte range is not the file, and is never kept as it. */
function wholeFile(stream: Readable): boolean {
  const { start, end } = stream as Readable & { start?: number; end?: number };
  return (start === undefined || start === 0) && (end === undefined || end === Infinity);
}

/**
 * The coding this stream is sent in, or identity with the reason: the
 * buffered path's choice (coding.ts) among the `encodings` in their order,
 * at the fixed levels (a stream is read once, so it is never hot), for a
 * length the app declared (koa-send declares the file's size) or none.
 */
function streamCoding(response: StreamResponse): Choice {
  const { ctx, options, type } = response;
  const refusal = compressible(ctx, options, type);
  if (refusal !== undefined) return { coding: 'identity', reason: refusal };
  const declared = responseHeader(ctx, 'Content-Length');
  const length = declared === undefined ? undefined : Number(declared);
  return chooseCoding(ctx, options, options.encodings, Number.isFinite(length) ? length : undefined);
}

/**
 * The compressing transform for `coding` at `level`. br gets no size hint,
 * as koa-compress gives none: with it br made fewer bytes of a large file
 * but served fewer requests a second, and a stream is chosen for throughput
 * (docs/decisions/0022-stream-bodies-and-the-peers-switches.md).
 */
function encoder(coding: Coding, level: number): Transform {
  switch (coding) {
    case 'br':
      return zlib.createBrotliCompress({ params: { [zlib.constants.BROTLI_PARAM_QUALITY]: level } });
    case 'gzip':
      return zlib.createGzip({ level });
    case 'deflate':
      return zlib.createDeflate({ level });
    case 'zstd':
      return zstdStream(level);
  }
}

/**
 * The compressor of a live source (not a file): br picks one quality step
 * more when the source pauses early, as a streamed page does, and the fixed
 * one for a source that writes on (encoding/live-brotli.ts); pinned levels
 * (`compressionLevels`, `adaptiveCompression: false`) stay as given.
 */
function liveEncoder(coding: Coding, level: number, options: ResolvedOptions): Duplex {
  if (coding !== 'br') return encoder(coding, level);
  return new LiveBrotli(level, options.adaptiveCompression ? Math.min(11, level + 1) : level);
}

/**
 * The squash options when this stream is HTML squashed as it flows: optimiseContent 1 or 2 (at level 1: the
 * inline CSS/JS minifiers of level 2 need whole blocks), an HTML type, no `Cache-Control: no-transform`.
 */
function streamSquash(response: StreamResponse): SquashOptions | undefined {
  const { ctx, options, type } = response;
  if (options.optimiseContent < 1 || !isHtml(type) || noTransform(ctx)) return undefined;
  return squashOptions({
    level: 1,
    rewriteLinks: options.rewriteLinks,
    host: ctx.request.host,
    path: ctx.request.path,
    scheme: ctx.protocol,
  });
}

/** Errors of the source are thrown or handled where it is read (see respondWithStream). */
const ignoreHere = (): void => undefined;

/**
 * Cuts short a response whose compressor failed or was destroyed, so the
 * client sees it incomplete instead of waiting for the rest. Koa 3 pipes the
 * body to the socket with `stream.pipeline`, which does this itself; Koa 2
 * pipes it with `.pipe()`, which leaves the response open for ever. A
 * response already ended (Koa 2's error handler sends its 500 when no header
 * has gone yet; a client that left) is left as it is.
 */
function cutShort(ctx: Context): void {
  if (!ctx.res.writableEnded) ctx.res.destroy();
}

/**
 * Reworks a response whose body is a Node.js stream: validators, 304, and
 * compression as a stream. Called by the middleware after its CHECK step.
 *
 * @param stream - the body, not yet read
 * @param response - the context, the options for this response and its media type
 * @param log - the decision log
 */
export async function respondWithStream(stream: Readable, response: StreamResponse, shared: Shared): Promise<void> {
  // A file that fails to open may say so while the stat below is awaited (a file stream not held below opens
  // meanwhile), when nothing listens yet: an 'error' without a listener would end the process. Its error is
  // thrown instead, and Koa answers it (500; Koa 2 answers a missing file 404); later errors reach the pipe
  // that reads the stream.
  stream.on('error', ignoreHere);
  // A stream already flowing (the app listens to its 'data', to count bytes say) would emit its chunks while
  // the stat below is awaited, to nobody but that listener: lost to the client, or failed before anything
  // reads it. It is paused until a pipe resumes it (Koa's, or the compressor's) and is never read by file-feed,
  // whose positioned reads would bypass that listener.
  const flowing = stream.readableFlowing === true;
  if (flowing) stream.pause();
  // A file the response may not need (a memo hit, a 304) is not opened until that is known: opened once decided,
  // or settled unopened, whatever happens below.
  const held = !flowing && isPlainFileStream(stream) ? holdOpen(stream) : undefined;
  try {
    await respondWithKnownStream(stream, response, shared, flowing, held);
  } finally {
    held?.release(true);
  }
}

/** {@link respondWithStream} once the stream is paused and its file held. */
async function respondWithKnownStream(
  stream: Readable,
  response: StreamResponse,
  shared: Shared,
  flowing: boolean,
  held: HeldOpen | undefined,
): Promise<void> {
  const { ctx, options } = response;
  const { log } = shared;
  const { coding, reason } = streamCoding(response);
  const validated = ctx.response.status === 200 && isGetOrHead(ctx.request.method);
  // The head an entry would keep: as the action left it, before a tag and a coding are set.
  // Copied only when this request builds an entry: every other stream pays nothing for it.
  const builds = response.cache?.builds === true && !response.cache.replayed;
  const entityHead = validated && builds ? entityHeaders(ctx) : undefined;
  // A file read whole, in a coding, may come from the memo: its stat says which file it is.
  const memoable =
    validated &&
    coding !== 'identity' &&
    shared.memo.enabled &&
    !flowing &&
    isPlainFileStream(stream) &&
    wholeFile(stream);
  // Only a memo hit or a 304 leaves the file unread: otherwise it opens now, beside the stat.
  const conditional =
    ctx.request.headers['if-none-match'] !== undefined || ctx.request.headers['if-modified-since'] !== undefined;
  if (!memoable && !(validated && options.generate304 && conditional)) held?.release(true);
  const file = (validated && options.generateEtag) || memoable ? await fileFacts(stream, ctx) : undefined;
  if (validated && options.generateEtag && !ctx.res.hasHeader('ETag') && file !== undefined)
    ctx.response.set('ETag', file.tag);
  if (stream.errored) throw stream.errored;
  const etag = responseHeader(ctx, 'ETag');
  if (etag !== undefined && coding !== 'identity') ctx.response.set('ETag', codedTag(etag, coding));
  if (validated && options.generate304) {
    // The Last-Modified of a stream is the app's own (a file's mtime), not one koa-buffer guessed: trusted.
    const notModified = notModifiedNow(ctx, true);
    if (notModified !== undefined) {
      log.debug('log_not_modified', { reason: notModified });
      log.stats.notModified++;
      // Koa drops the body of a 304; the unread stream is destroyed now, its file never opened (or closed at once).
      ctx.response.status = 304;
      held?.release(false);
      stream.destroy();
      return;
    }
  }
  log.stats.streamed[coding] = (log.stats.streamed[coding] ?? 0) + 1;
  const squash = streamSquash(response);
  // Squashed, the body is not the length the app declared; a HEAD says what a GET would get.
  if (squash) ctx.response.remove('Content-Length');
  // A failure is logged (a client that left is not one) and cuts the response short.
  const failed = (error: Error): void => {
    log.error('log_stream_failed', { error: error.message });
    cutShort(ctx);
  };
  const ended = (error: Error | null | undefined): void => {
    if (error && (error as NodeJS.ErrnoException).code !== 'ERR_STREAM_PREMATURE_CLOSE') failed(error);
  };
  if (coding === 'identity') {
    log.debug('log_stream_identity', { reason: reason ?? 'identity' });
    if (squash && ctx.request.method !== 'HEAD') {
      const squasher = squashTransform(squash);
      pipeline(stream, squasher, ended);
      ctx.response.body = squasher;
    }
    return;
  }
  ctx.response.set('Content-Encoding', coding);
  ctx.response.remove('Content-Length');
  log.debug('log_stream_coding', { coding });
  const memo = memoable && file !== undefined ? fileMemo(shared, file, coding, options, squash) : undefined;
  const known = memo?.known();
  if (known !== undefined) {
    // Compressed before: the bytes are sent whole, with their length (a HEAD says it too), and the file is not read.
    held?.release(false);
    stream.destroy();
    ctx.response.remove('Transfer-Encoding');
    ctx.response.body = known;
    log.stats.sent(coding, file!.size, known.length);
    return;
  }
  // HEAD: the headers say what a GET would get; Koa sends no body and destroys the unread stream, never opened.
  if (ctx.request.method === 'HEAD') {
    held?.release(false);
    return;
  }
  // A file that fails to open, even after the stat above, is thrown while nothing is sent yet: Koa answers 500.
  const feeds = !flowing && isPlainFileStream(stream);
  held?.release(true);
  if (feeds) await fileDescriptor(stream);
  const level = memo?.level ?? options.compressionLevels[coding];
  // HTML squashed on its way to the compressor.
  const squasher = squash ? squashTransform(squash) : undefined;
  if (feeds) {
    const compressor = encoder(coding, level);
    if (squasher) pipeline(squasher, compressor, ended);
    void feedFile(stream, squasher ?? compressor, failed);
    ctx.response.body = memo?.collect(compressor) ?? compressor;
    return;
  }
  const compressor = liveEncoder(coding, level, options);
  if (squasher) pipeline(stream, squasher, compressor, ended);
  else pipeline(stream, compressor, ended);
  // A live source (not a file): what it wrote is flushed out whenever it has nothing more ready.
  flushWhenIdle(stream, compressor, coding, squasher);
  // The entity a build stores is what goes into the compressor: squashed, uncompressed.
  if (entityHead !== undefined) collectForCache(squasher ?? stream, response, entityHead);
  ctx.response.body = compressor;
}

/**
 * The response's headers as the entity's: the action's, without what
 * describes one representation (its length, its coding).
 */
function entityHeaders(ctx: Context): Record<string, string | string[]> {
  const headers = { ...ctx.response.headers } as Record<string, string | string[]>;
  delete headers['content-encoding'];
  delete headers['content-length'];
  delete headers['transfer-encoding'];
  return headers;
}

/**
 * A live stream this request builds a cache entry from: each chunk the
 * source gives the compressor is also fed to the build, and the entry is
 * judged and stored when the response ends, if the source ended on its own
 * (cache/streamed-build.ts). Listening after the pipe is set up changes no
 * flowing state. A file stream is not collected: its compressed bytes are
 * memoised by the file's identity instead.
 */
function collectForCache(stream: Readable, response: StreamResponse, headers: Record<string, string | string[]>): void {
  const { ctx, cache, state, options } = response;
  if (!cache?.builds || cache.replayed) return;
  const collector = storeStream(ctx, { status: ctx.response.status, headers }, { options, tagHeader: state.tagHeader });
  if (collector === undefined) return;
  stream.on('data', (chunk: Buffer | string) => collector.take(Buffer.isBuffer(chunk) ? chunk : Buffer.from(chunk)));
  stream.once('end', () => collector.end());
}

export type { FileMemo };
