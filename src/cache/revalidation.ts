/**
 * Revalidation instead of rebuild (docs/decisions/0048-revalidation-instead-of-rebuild.md).
 * When the entry a build replaces has the application's own validator (an
 * ETag or a Last-Modified it set: the generated ones are added after
 * STORE), the builder's request reaches the action carrying that validator
 * in If-None-Match / If-Modified-Since, in place of the visitor's own,
 * which are put back as soon as the action is done. An action that checks
 * `ctx.fresh` and answers 304 has said the stored page still holds: the
 * response becomes the stored entry, its header fields updated with those
 * the 304 carried (RFC 9111 4.3.4), and goes on through the pipeline to be
 * judged, stored with a new lifetime, handed to the waiters and compressed
 * for this visitor, who may get their own 304 from it.
 *
 * A reverse proxy's action forwards the request's headers upstream, so
 * there the revalidation becomes a conditional request to the origin.
 */
import type { Context } from 'koa';
import { setBufferBody } from '../http/koa-body.ts';
import type { Visit } from './visit.ts';

/** The request headers the action sees the entry's validators in, and the entry's header each comes from. */
const asked = [
  ['if-none-match', 'etag'],
  ['if-modified-since', 'last-modified'],
] as const;

/**
 * Before the action of a build that revalidates: the request carries the
 * entry's validators, and nothing of the visitor's conditional headers
 * (an action answering 304 to the visitor's own tag would not be saying
 * anything about the entry).
 */
export function askWithValidators(ctx: Context, visit: Visit): void {
  const entry = visit.revalidating;
  if (entry === undefined || visit.visitorConditionals !== undefined) return;
  const headers = ctx.req.headers;
  const visitor: Record<string, string | string[] | undefined> = {};
  for (const [name, from] of asked) {
    visitor[name] = headers[name];
    const value = entry.headers[from];
    if (typeof value === 'string') headers[name] = value;
    else delete headers[name];
  }
  visit.visitorConditionals = visitor;
}

/** After the action, thrown or not: the visitor's own conditional headers are back for VALIDATE's 304. */
export function restoreVisitorConditionals(ctx: Context, visit: Visit): void {
  const visitor = visit.visitorConditionals;
  if (visitor === undefined) return;
  visit.visitorConditionals = undefined;
  const headers = ctx.req.headers;
  for (const [name] of asked) {
    const value = visitor[name];
    if (value === undefined) delete headers[name];
    else headers[name] = value as string;
  }
}

/**
 * After an action that returned: when it answered the entry's validators
 * with 304, the response becomes the entry (status, entity, and each of its
 * header fields the 304 did not send: those the 304 sent replace the
 * stored ones, an Age the entry had included), marked renewed.
 */
export function renewOn304(ctx: Context, visit: Visit): void {
  const entry = visit.revalidating;
  const build = visit.build;
  if (entry === undefined || build === undefined || ctx.response.status !== 304) return;
  const res = ctx.res;
  if (res.headersSent) return;
  visit.renewed = true;
  visit.runtime.log.stats.builds.revalidated++;
  visit.runtime.log.debug('log_cache_revalidated', { key: visit.slot.key, url: visit.url });
  ctx.response.status = entry.status;
  // The entry's Age counted its time in caches before it was stored: the 304 is a new response, aged by its own Age only.
  for (const name in entry.headers)
    if (name !== 'age' && !res.hasHeader(name)) res.setHeader(name, entry.headers[name]!);
  res.setHeader('x-cache', 'REVALIDATED');
  setBufferBody(ctx, entry.body);
}
