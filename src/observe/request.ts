/**
 * The `koa-buffer:request` message of one request that went through
 * `ctx.bufferIsCached()`: published once the response is done (its
 * Cache-Status is final only when its head is written, which for a stored
 * build is after the middleware returns), and only when someone listens.
 */
import type { Context } from 'koa';
import { requestChannel, type RequestMessage } from '../base/channels.ts';

/** The outcome a Cache-Status value says, in the words of the stats and metrics. */
export function outcomeOf(cacheStatus: string | undefined): string {
  if (cacheStatus === undefined) return 'none';
  if (cacheStatus.includes('fwd=bypass')) return 'bypass';
  if (cacheStatus.includes('; hit')) return cacheStatus.includes('fwd=stale') ? 'stale' : 'hit';
  if (cacheStatus.includes('collapsed')) return cacheStatus.includes('detail=') ? 'collapsed-failed' : 'collapsed';
  if (cacheStatus.includes('uri-miss')) return 'not-stored';
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
