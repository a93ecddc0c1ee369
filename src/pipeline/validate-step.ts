/**
 * VALIDATE: on a 200 to GET or HEAD, the ETag (generated, or the action's
 * own with the coding named in it), the generated Last-Modified with its
 * heuristic-freshness guard, and 304 Not Modified when the client holds
 * this representation (conditional.ts, shared with the stream path).
 */
import type { Context } from 'koa';
import type { ResolvedOptions } from '../config/options.ts';
import { codedTag, entityTag } from '../http/etag.ts';
import { isGetOrHead, responseHeader } from '../http/headers.ts';
import { httpDate, lastModifiedSeconds } from '../http/last-modified.ts';
import { mediaType } from '../http/media-types.ts';
import { md5 } from '../native/exports.ts';
import { notModifiedNow } from './conditional.ts';
import { digest, type Step } from './work.ts';

/**
 * True when this response may get the Last-Modified of the `lastModified`
 * option: its media type is one of `lastModifiedTypes` (HTML by default),
 * or the application asked for this response's date itself, by a function
 * (called for every type: it answers for each response) or through
 * `ctx.state.buffer`. A site-wide date, the app script's and templates'
 * newest mtime above all, says when the pages rendered from them changed;
 * on a JSON API it says nothing of the data, and with the no-cache guard
 * it would change headers the API chose.
 */
function lastModifiedApplies(ctx: Context, options: ResolvedOptions): boolean {
  if (typeof options.lastModified === 'function' || options.overridden.has('lastModified')) return true;
  const type = mediaType(responseHeader(ctx, 'Content-Type'));
  return type !== undefined && options.lastModifiedTypes.matches(type);
}

/**
 * The Last-Modified VALIDATE sets on this response, in seconds: undefined
 * when `lastModified` is off, the response has its own, its type is not
 * one it applies to, or nothing is known. Answers given again are checked
 * against it too (replay/).
 */
export function generatedLastModified(
  ctx: Context,
  options: ResolvedOptions,
): number | undefined | Promise<number | undefined> {
  if (!options.lastModified || ctx.res.hasHeader('Last-Modified') || !lastModifiedApplies(ctx, options))
    return undefined;
  // The options carry the template paths, the cache, the logger and the messages a scan needs.
  return lastModifiedSeconds(options.lastModified, ctx, options);
}

export const validate: Step = async (work, shared) => {
  const { ctx, options } = work;
  // ETag, Last-Modified and 304 belong to 200 responses to GET and HEAD only.
  if (ctx.response.status !== 200 || !isGetOrHead(ctx.request.method)) return true;
  if (!ctx.res.hasHeader('ETag')) {
    if (options.generateEtag)
      ctx.response.set(
        'ETag',
        work.changing
          ? entityTag(md5(work.payload), work.coding) // names the bytes sent (docs/decisions/0029-changing-bodies-skip-the-memo.md)
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
  const reason = notModifiedNow(ctx, options.trustLastModified);
  if (reason === undefined) return true;
  shared.log.debug('log_not_modified', { reason });
  shared.log.stats.notModified++;
  // Koa drops the body, Content-Type and Content-Length of a 304; the coding goes too.
  // ETag, Last-Modified, Vary, Cache-Control, Content-Location, Expires and Date stay (RFC 9110 15.4.5).
  ctx.response.status = 304;
  ctx.response.remove('Content-Encoding');
  return false;
};
