/**
 * The action of a caching reverse proxy: `proxyTo(origin)` forwards each
 * request to an HTTP origin with node:http and hands its answer to Koa, so
 * the `buffer({ cache: … })` mounted before it stores, compresses and
 * revalidates the origin's pages. See README.md beside this file.
 *
 * It forwards `ctx.request.headers` as they are when the action runs: when
 * koa-buffer rebuilds an expired entry that has an ETag or Last-Modified, it
 * has put them in If-None-Match / If-Modified-Since, so the rebuild becomes
 * a conditional request upstream, and the origin's 304 renews the entry.
 */
import http from 'node:http';
import type { Context, Middleware } from 'koa';

/** Options of {@link proxyTo}. */
export interface ProxyOptions {
  /** How long the origin may take to answer, ms; then 504. @defaultValue 30000 */
  timeoutMs?: number;
}

/**
 * Hop-by-hop headers (RFC 9110 7.6.1): they describe one connection, so a
 * proxy never passes them on. Those the Connection header names are too.
 */
const hopByHop = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'transfer-encoding',
  'te',
  'trailer',
  'upgrade',
  'proxy-authenticate',
  'proxy-authorization',
]);

/** The header names the Connection header lists, lowercased. */
function connectionOptions(value: string | string[] | undefined): Set<string> {
  const text = Array.isArray(value) ? value.join(',') : (value ?? '');
  return new Set(
    text
      .split(',')
      .map((name) => name.trim().toLowerCase())
      .filter((name) => name !== ''),
  );
}

/** `headers` without the hop-by-hop ones and those in `drop`. */
function endToEnd(headers: http.IncomingHttpHeaders, drop: readonly string[] = []): http.OutgoingHttpHeaders {
  const named = connectionOptions(headers.connection);
  const out: http.OutgoingHttpHeaders = {};
  for (const [name, value] of Object.entries(headers)) {
    if (value === undefined || hopByHop.has(name) || name.startsWith('proxy-') || named.has(name)) continue;
    if (drop.includes(name)) continue;
    out[name] = value;
  }
  return out;
}

/** Statuses whose response never has a body (RFC 9110 6.4.1). */
const bodiless = (status: number): boolean => status === 204 || status === 304 || (status >= 100 && status < 200);

/**
 * A Koa action that forwards the request to `origin` and answers with what
 * it sends back. Mount it after `buffer()`.
 *
 * @param origin - e.g. `http://127.0.0.1:8080`; its path, if any, is ignored
 * @example
 * app.use(buffer({ cache: true }));
 * app.use(proxyTo('http://127.0.0.1:8080'));
 */
export function proxyTo(origin: string | URL, options: ProxyOptions = {}): Middleware {
  const target = new URL(origin);
  if (target.protocol !== 'http:') throw new TypeError(`proxyTo: only http: origins, not ${target.protocol}`);
  const timeoutMs = options.timeoutMs ?? 30_000;
  const agent = new http.Agent({ keepAlive: true });

  return async function proxy(ctx: Context): Promise<void> {
    const method = ctx.method;
    const safe = method === 'GET' || method === 'HEAD';
    // Only GET and HEAD are looked up; anything else goes to the origin, and koa-buffer
    // purges the URL's entries when the origin says it succeeded.
    if (safe && (await ctx.bufferIsCached())) return;

    // The entity is compressed here, once per coding a client asks for: the origin sends it plain.
    const headers = endToEnd(ctx.request.headers, ['host', 'accept-encoding', 'content-length']);
    headers.host = target.host;
    headers['accept-encoding'] = 'identity';
    headers['x-forwarded-host'] = ctx.request.host;
    headers['x-forwarded-proto'] = ctx.protocol;
    const forwardedFor = ctx.request.headers['x-forwarded-for'];
    headers['x-forwarded-for'] = forwardedFor ? `${forwardedFor}, ${ctx.ip}` : ctx.ip;
    headers.via = ctx.request.headers.via ? `${ctx.request.headers.via}, 1.1 koa-buffer` : '1.1 koa-buffer';
    if (ctx.request.headers['content-length'] !== undefined)
      headers['content-length'] = ctx.request.headers['content-length'];

    let upstream: { res: http.IncomingMessage; body: Buffer };
    try {
      upstream = await new Promise((resolve, reject) => {
        const req = http.request(
          {
            protocol: target.protocol,
            hostname: target.hostname,
            port: target.port,
            // A HEAD miss asks for the whole page: the entry it stores serves GETs too.
            method: method === 'HEAD' ? 'GET' : method,
            path: ctx.originalUrl,
            headers,
            agent,
            timeout: timeoutMs,
          },
          (res) => {
            const chunks: Buffer[] = [];
            res.on('data', (chunk: Buffer) => chunks.push(chunk));
            res.on('end', () => resolve({ res, body: Buffer.concat(chunks) }));
            res.on('error', reject);
          },
        );
        req.on('timeout', () => req.destroy(Object.assign(new Error('origin timed out'), { code: 'ETIMEDOUT' })));
        req.on('error', reject);
        if (safe) req.end();
        else ctx.req.pipe(req); // the request body goes through as it comes, unstored
      });
    } catch (error) {
      const timedOut = (error as NodeJS.ErrnoException).code === 'ETIMEDOUT';
      ctx.status = timedOut ? 504 : 502;
      ctx.body = timedOut ? 'Gateway Timeout' : 'Bad Gateway';
      return;
    }

    const { res, body } = upstream;
    ctx.status = res.statusCode ?? 502;
    // Koa sets Content-Length from the body; a Content-Encoding is kept only if the origin ignored `identity`.
    for (const [name, value] of Object.entries(endToEnd(res.headers, ['content-length'])))
      if (value !== undefined) ctx.set(name, typeof value === 'number' ? String(value) : value);
    // A 304 here answers the validators koa-buffer put in the request: it renews the stored entry.
    if (bodiless(ctx.status)) return;
    ctx.body = body;
  };
}
