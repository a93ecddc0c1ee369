/**
 * The one rule for answering again: when the pipeline's earlier answer may
 * be given to this request instead of running the steps (memo answers and
 * prepared hits both ask here). An earlier answer is right only when every
 * input the pipeline would read is the same as it was, so this file names
 * every input the steps read, and for each how an answer given again
 * accounts for it:
 *
 * - `keyed`: the owner keeps answers apart by it (Accept-Encoding; the host,
 *   path and scheme through the memo's variant or the cache key);
 * - `absent`: the request must not carry it (conditional headers, a named
 *   dictionary), so it cannot differ;
 * - `config`: the response's options are the `buffer()` options themselves,
 *   unchanged by a section or `ctx.state.buffer`;
 * - `compared`: the response must agree with the recorded one on it
 *   (the status and the response headers, prepared-answer.ts);
 * - `noted`: read to learn, never to decide this response (the URL, for the
 *   table of bodies that change on every request).
 *
 * A test records what the steps read (test/pipeline/replay-inputs.test.ts)
 * and fails on any request header, context field or response header not
 * named here: a new input must be named, and accounted for, before it can
 * leak a stale answer.
 */
import type { Context } from 'koa';
import type { Dictionaries } from '../../encoding/dictionaries/dictionaries.ts';
import { isGetOrHead, responseHeader } from '../../http/headers.ts';
import { mediaType } from '../../http/media-types.ts';
import type { RequestState } from '../state.ts';

/** How an answer given again accounts for one input. */
export type Accounted = 'keyed' | 'absent' | 'config' | 'compared' | 'noted' | 'GET or HEAD';

/** The request headers the steps read, by lowercase name. */
export const requestHeaderInputs: Readonly<Record<string, Accounted>> = {
  'accept-encoding': 'keyed',
  'if-none-match': 'absent',
  'if-modified-since': 'absent',
  // Read only where a dictionary rule covers the path, which an answer given again may not.
  'available-dictionary': 'absent',
  authorization: 'absent',
  // ctx.host and ctx.protocol read them (X-Forwarded-* with app.proxy): part of the memo's variant and the key.
  host: 'keyed',
  ':authority': 'keyed',
  'x-forwarded-host': 'keyed',
  'x-forwarded-proto': 'keyed',
};

/** The fields of the context (and of ctx.request and ctx.response) the steps read. */
export const contextInputs: Readonly<Record<string, Accounted>> = {
  method: 'GET or HEAD',
  compress: 'absent',
  host: 'keyed',
  path: 'keyed',
  protocol: 'keyed',
  url: 'noted',
  originalUrl: 'keyed',
  status: 'compared',
  body: 'compared',
  respond: 'compared',
  writable: 'compared',
};

/**
 * The response headers the steps read or write: what their decisions depend
 * on. An answer given again applies only to a response that agrees on each,
 * and on any other header the pipeline set or removed.
 */
export const responseHeaderInputs: readonly string[] = [
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

/**
 * True when the pipeline would read exactly what it read for an earlier
 * answer kept by Accept-Encoding and by what made the entity (the memo's
 * variant, or the cache key): the inputs above marked `absent`, `config`
 * and `GET or HEAD` hold. The owner checks the rest (its key, the response
 * as recorded). Allocates nothing in the usual case.
 *
 * @param dictionaries - the middleware's compression dictionaries, undefined when off
 */
export function mayAnswerAgain(ctx: Context, state: RequestState, dictionaries: Dictionaries | undefined): boolean {
  const options = state.options;
  // config: sections and ctx.state.buffer left the buffer() options as they are; a function may read anything.
  if (options !== state.config || typeof options.lastModified === 'function') return false;
  const { method, headers } = ctx.request;
  if (!isGetOrHead(method)) return false;
  if (headers['if-none-match'] !== undefined || headers['if-modified-since'] !== undefined) return false;
  if ((ctx as { compress?: unknown }).compress !== undefined) return false;
  // A dictionary rule's answers depend on the path, the request's credentials and the dictionary it names.
  if (dictionaries === undefined) return true;
  if (headers['available-dictionary'] !== undefined) return false;
  const type = mediaType(responseHeader(ctx, 'Content-Type'));
  return type === undefined || dictionaries.scope(ctx, type) === undefined;
}
