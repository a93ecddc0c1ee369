/**
 * The 304 check, one for both paths (the buffered steps and the stream
 * path): the request's If-None-Match and If-Modified-Since against the
 * response's validators as they stand now (http/conditional.ts holds the
 * comparison rules).
 */
import type { Context } from 'koa';
import { notModifiedReason } from '../http/conditional.ts';
import { responseHeader } from '../http/headers.ts';

/**
 * Why this response may be answered 304 Not Modified, or undefined when it
 * may not. The caller has checked it is a 200 to GET or HEAD.
 *
 * @param trustLastModified - also honour If-Modified-Since when the response has an ETag
 */
export function notModifiedNow(ctx: Context, trustLastModified: boolean): string | undefined {
  const headers = ctx.request.headers;
  return notModifiedReason({
    ifNoneMatch: headers['if-none-match'],
    ifModifiedSince: headers['if-modified-since'],
    etag: responseHeader(ctx, 'ETag'),
    lastModified: responseHeader(ctx, 'Last-Modified'),
    trustLastModified,
  });
}
