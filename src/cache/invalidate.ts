/**
 * A successful write invalidates what it changed (RFC 9111 4.4): a POST,
 * PUT, PATCH or DELETE (any method but the safe ones) answered 2xx or 3xx
 * purges the stored entries of its own URL, and of the URLs its `Location`
 * and `Content-Location` name on the same host (another host's entries are
 * left alone, so a request cannot purge a site it is not on). The purge is
 * made before the response goes out, so the client's next read of what it
 * just changed is not answered from the cache.
 */
import type { Context } from 'koa';
import { urlIds } from './purge/api.ts';
import type { CacheRuntime } from './runtime.ts';

/** Methods that change nothing (RFC 9110 9.2.1); every other method may. */
const safe = new Set(['GET', 'HEAD', 'OPTIONS', 'TRACE']);

/** True when the request may have changed what a stored entry holds. */
export function writes(ctx: Context): boolean {
  const status = ctx.response.status;
  return !safe.has(ctx.request.method) && status >= 200 && status < 400;
}

/**
 * Purges the entries of the URLs a successful write named. Never throws: a
 * store that fails costs a log line (the entries then expire as usual).
 */
export async function invalidate(ctx: Context, runtime: CacheRuntime): Promise<void> {
  const host = ctx.request.host;
  const base = `${ctx.protocol}://${host}${ctx.originalUrl}`;
  const paths = new Set<string>([ctx.originalUrl]);
  for (const name of ['location', 'content-location']) {
    const value = ctx.res.getHeader(name);
    if (typeof value !== 'string' || value === '') continue;
    try {
      const url = new URL(value, base);
      // RFC 9111 4.4: only a URI with the same origin as the request's.
      if (url.host.toLowerCase() === host.toLowerCase() && url.protocol === `${ctx.protocol}:`)
        paths.add(url.pathname + url.search);
    } catch {
      // Not a URL: nothing it names is stored.
    }
  }
  const ids = [...paths].flatMap((path) => urlIds(path, host, runtime.log.messages, runtime.namespace));
  try {
    await runtime.purge(ids);
    runtime.log.debug('log_invalidated', {
      url: `${host}${ctx.originalUrl}`,
      method: ctx.request.method,
      count: paths.size,
    });
  } catch (error) {
    runtime.log.error('log_invalidate_failed', { url: `${host}${ctx.originalUrl}`, error });
  }
}
