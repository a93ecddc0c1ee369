/**
 * The `koa-buffer:request` message of one request that went through
 * `ctx.bufferIsCached()`: published once the response is done (its
 * Cache-Status is final only when its head is written, which for a stored
 * build is after the middleware returns), and only when someone listens.
 */
import type { Context } from 'koa';
import { requestChannel, type RequestMessage } from '../base/channels.ts';
import type { Stats } from '../base/stats.ts';

/**
 * The outcome a Cache-Status value says, in the words of the metrics' `outcome`
 * label: hit, stale, stale_on_error, collapsed, failed (a waiter answered 503),
 * miss (the action ran, stored or not) or bypass.
 */
export function outcomeOf(cacheStatus: string | undefined): string {
  if (cacheStatus === undefined) return 'none';
  if (cacheStatus.includes('fwd=bypass')) return 'bypass';
  if (cacheStatus.includes('; hit'))
    return !cacheStatus.includes('fwd=stale') ? 'hit' : cacheStatus.includes('detail=') ? 'stale_on_error' : 'stale';
  if (cacheStatus.includes('collapsed')) return cacheStatus.includes('detail=') ? 'failed' : 'collapsed';
  return 'miss';
}

/** Publishes the request's message once its response is done; nothing when nobody listens. */
export function publishRequest(ctx: Context): void {
  if (!requestChannel.hasSubscribers) return;
  const { method } = ctx.request;
  const url = ctx.originalUrl;
  const host = ctx.request.host;
  ctx.res.once('close', () => {
    const header = ctx.res.getHeader('cache-status');
    const cacheStatus = header === undefined ? undefined : String(header);
    requestChannel.publish({
      method,
      url,
      host,
      outcome: outcomeOf(cacheStatus),
      cacheStatus,
      status: ctx.res.statusCode,
    } satisfies RequestMessage);
  });
}

/**
 * Counts the request by its route, when the application listed it
 * (`metrics.routes`), else as `other`: the route @koa/router matched
 * (`ctx._matchedRoute`), never the URL, so the label's values stay the
 * listed few. The outcome is the Cache-Status as it stands once the
 * pipeline is done (a stored build still says `fwd=miss`: a miss).
 */
export function countRoute(ctx: Context, routes: ReadonlySet<string>, stats: Stats): void {
  const matched = (ctx as { _matchedRoute?: unknown })._matchedRoute;
  const route = typeof matched === 'string' && routes.has(matched) ? matched : 'other';
  const header = ctx.res.getHeader('cache-status');
  stats.routeOutcome(route, outcomeOf(header === undefined ? undefined : String(header)));
}
