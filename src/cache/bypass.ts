/**
 * The requests that may not use the server-side cache (docs/architecture.md,
 * "The server-side cache"): the action runs as if there were no cache, and nothing
 * is stored. Each rule has the token `Cache-Status` reports it with
 * (`fwd=bypass; detail=…`, RFC 9211 2.4 and 2.7).
 */
import type { Context } from 'koa';
import { parseCacheControl } from '../http/cache-control.ts';
import { isGetOrHead } from '../http/headers.ts';

/** Why a request bypasses the cache, as a Cache-Status detail token. */
export type BypassReason =
  | 'CACHE-OFF'
  | 'METHOD'
  | 'AUTHORIZATION'
  | 'REQUEST-CACHE-CONTROL'
  | 'NO_CACHE'
  | 'NO_STORE'
  | 'REQUEST-TARGET'
  | 'KEY-ERROR'
  | 'STORE-ERROR'
  | 'HOST'
  /** A `cookie:NAME` of varyBy that readers could take differently (http/cookies.ts). */
  | 'COOKIE'
  /** A per-response varyBy that is not a list of header names. */
  | 'VARYBY';

/** What a request's own no-cache does to the server cache (the `cacheRequestNoCache` option). */
export type RequestNoCache = 'ignore' | 'refresh' | 'bypass';

/** The options the bypass rules read. */
export interface BypassOptions {
  readonly cacheRequestNoCache: RequestNoCache;
  /** Lowercased host names whose pages may be cached; undefined for any. */
  readonly cacheHosts: ReadonlySet<string> | undefined;
}

const strictRules: BypassOptions = { cacheRequestNoCache: 'bypass', cacheHosts: undefined };

/**
 * Request Cache-Control directives that refuse a stored response
 * (RFC 9111 5.2.1): no-store, no-cache, private (not a request directive,
 * honoured as the Perl original does), and max-age=0.
 */
export function refusesStored(cacheControl: string | undefined): boolean {
  const { directives, seconds } = parseCacheControl(cacheControl);
  return (
    directives.has('no-store') ||
    directives.has('no-cache') ||
    directives.has('private') ||
    seconds.get('max-age') === 0
  );
}

/**
 * True when the request asks not to be answered from a stored response:
 * its Cache-Control refuses one (see {@link refusesStored}), or it has no
 * Cache-Control and says `Pragma: no-cache` (HTTP/1.0 clients; RFC 9111 5.4
 * has Pragma ignored when Cache-Control is present, and gives its
 * directives the form of Cache-Control's).
 *
 * @param headers - the request headers
 */
export function requestRefusesStored(headers: Record<string, string | string[] | undefined>): boolean {
  const cacheControl = headers['cache-control'];
  if (typeof cacheControl === 'string') return refusesStored(cacheControl);
  const pragma = headers.pragma;
  return typeof pragma === 'string' && parseCacheControl(pragma).directives.has('no-cache');
}

/**
 * How long the NO_CACHE and NO_STORE variables are trusted before they are
 * read again, ms. Requests made while NO_CACHE or NO_STORE is set bypass
 * the cache; a change at run time is obeyed within this time. Not
 * read per request: each read is a getenv, a walk through the whole
 * environment under a lock, and reading both on every request cost a cache
 * hit a large share of its throughput (docs/decisions/0004-trust-windows.md).
 */
export const envTrustMs = 250;

let switchesRead = Number.NaN;
let switchesSet: 'NO_CACHE' | 'NO_STORE' | undefined;

/**
 * NO_CACHE or NO_STORE when either is set in the environment (NO_CACHE
 * first), as read within {@link envTrustMs} of `now` (ms since the epoch; a
 * clock set back reads them again).
 */
export function environmentSwitches(now: number): 'NO_CACHE' | 'NO_STORE' | undefined {
  const age = now - switchesRead;
  if (!(age >= 0 && age < envTrustMs)) {
    switchesRead = now;
    switchesSet =
      process.env.NO_CACHE !== undefined ? 'NO_CACHE' : process.env.NO_STORE !== undefined ? 'NO_STORE' : undefined;
  }
  return switchesSet;
}

/**
 * Why this request may not use the cache, or undefined when it may.
 *
 * @param ctx - the request
 * @param hasCache - whether a cache is configured for this response
 * @param now - the time, ms since the epoch (one clock read serves a whole lookup)
 * @param options - `cacheRequestNoCache` (by default 'ignore'; 'bypass' is the strict rule) and `cacheHosts`
 * @returns the first rule that applies, in the order they are checked below
 */
export function bypassReason(
  ctx: Context,
  hasCache: boolean,
  now: number = Date.now(),
  options: BypassOptions = strictRules,
): BypassReason | undefined {
  if (!hasCache) return 'CACHE-OFF';
  const method = ctx.request.method;
  if (!isGetOrHead(method)) return 'METHOD';
  const headers = ctx.request.headers;
  // RFC 9111 3.5: a response to an authenticated request is someone's own.
  if (headers.authorization !== undefined) return 'AUTHORIZATION';
  // Koa's hostname: the Host (X-Forwarded-Host with app.proxy) without its port.
  if (options.cacheHosts !== undefined && !options.cacheHosts.has(ctx.request.hostname.toLowerCase())) return 'HOST';
  // Only 'bypass' lets a client switch the cache (and its stampede protection) off; the default ignores it.
  if (options.cacheRequestNoCache === 'bypass' && requestRefusesStored(headers)) return 'REQUEST-CACHE-CONTROL';
  const switches = environmentSwitches(now);
  if (switches !== undefined) return switches;
  // The key holds host, path and query; a target in absolute form (RFC 9112 3.2.2) or with a fragment
  // carries more, which ctx.url and ctx.href show the action: stored, it would reach clients who never sent it.
  const target = ctx.originalUrl;
  if (!target.startsWith('/') || target.includes('#')) return 'REQUEST-TARGET';
  return undefined;
}
