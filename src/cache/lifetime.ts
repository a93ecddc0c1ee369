/**
 * How long an entry lives (docs/decisions/0028-stale-entries.md): its TTL
 * and its two stale windows (RFC 5861), in seconds, and how long past them
 * it is kept to be revalidated. The action's own response decides when it
 * says, as a shared cache reads it (RFC 9111 4.2.1: `s-maxage`, `max-age`,
 * then `Expires` − `Date`, less `Age`); what it does not say comes from the options.
 */
import { maxDeltaSeconds, parseCacheControl } from '../http/cache-control.ts';
import { headerText } from '../http/headers.ts';
import { httpDateMs } from '../http/http-date.ts';

export { maxDeltaSeconds } from '../http/cache-control.ts';

/** An entry's TTL and stale windows, seconds. */
export interface Lifetime {
  readonly ttl: number;
  readonly staleWhileRevalidate: number;
  readonly staleIfError: number;
}

/**
 * The longest lifetime an entry gets is {@link maxDeltaSeconds}, the bound
 * RFC 9111 1.2.2 puts on delta-seconds. Every TTL and window is held to it,
 * whether from the response, the options or a per-response value, so the
 * stores get a whole number of ms they accept (Redis refuses a PX it cannot
 * parse as an integer, and `1e+23` is not one) and Cache-Status an integer
 * `ttl=`.
 */
const bounded = (seconds: number): number => (seconds > maxDeltaSeconds ? maxDeltaSeconds : seconds);

/**
 * `lifetime` with each value held to {@link maxDeltaSeconds}.
 *
 * @param lifetime - seconds, finite or not
 */
export function boundedLifetime(lifetime: Lifetime): Lifetime {
  return {
    ttl: bounded(lifetime.ttl),
    staleWhileRevalidate: bounded(lifetime.staleWhileRevalidate),
    staleIfError: bounded(lifetime.staleIfError),
  };
}

/**
 * The numeric directives of a Cache-Control value, by lowercased name, as
 * ../http/cache-control.ts reads them: the first occurrence that carries
 * delta-seconds, at most 2^31. A directive whose value is not delta-seconds
 * is left out, so the option's value applies. test/cache/lifetime.test.ts
 * checks the lifetime against http-cache-semantics.
 *
 * @param value - the response's Cache-Control (a string, or the lines of a repeated header)
 */
export function cacheControlSeconds(value: string | string[] | undefined): ReadonlyMap<string, number> {
  return parseCacheControl(value).seconds;
}

/** The response headers an entry's lifetime is read from (lowercased names). */
export interface FreshnessHeaders {
  readonly 'cache-control'?: string | string[] | undefined;
  readonly expires?: string | string[] | undefined;
  readonly date?: string | string[] | undefined;
  readonly age?: string | string[] | undefined;
}

/**
 * The lifetime of an entry made now from a response with these headers
 * (RFC 9111 4.2.1): its freshness from `s-maxage`, else `max-age`, else
 * `Expires` − `Date` (the time of storing when Date is absent or invalid;
 * an `Expires` that is no HTTP date is in the past, 5.3), less the `Age`
 * the response already has; `cacheDuration` when it says none of them.
 * `no-cache` makes it 0: stored, never answered without revalidation.
 * `no-cache`, `must-revalidate` and `proxy-revalidate` forbid answering it
 * stale, so they close both stale windows; otherwise the windows are the
 * response's `stale-while-revalidate=` and `stale-if-error=`, or the options'.
 *
 * @param headers - the response's headers, lowercased names
 * @param defaults - `cacheDuration`, `cacheStaleWhileRevalidate` and `cacheStaleIfError` (seconds)
 * @param now - ms since the epoch: when the entry is stored
 */
export function lifetimeOf(
  headers: FreshnessHeaders,
  defaults: { cacheDuration: number; cacheStaleWhileRevalidate: number; cacheStaleIfError: number },
  now: number = Date.now(),
): Lifetime {
  const control = parseCacheControl(headers['cache-control']);
  const given = control.seconds;
  const directives = control.directives;
  // A qualified no-cache (no-cache="set-cookie") names fields, not the response: storable.ts leaves them out.
  const noCache = directives.has('no-cache') && directives.get('no-cache') === undefined;
  const neverStale = noCache || directives.has('must-revalidate') || directives.has('proxy-revalidate');
  const freshness = given.get('s-maxage') ?? given.get('max-age') ?? expiresSeconds(headers, now);
  // Negative when the response arrives already stale: its stale windows, which run from its expiry, are that much shorter.
  const remaining = noCache ? 0 : freshness === undefined ? defaults.cacheDuration : freshness - ageSeconds(headers);
  const window = (seconds: number): number => (neverStale ? 0 : Math.max(0, seconds + Math.min(0, remaining)));
  // The options may hold any finite number of seconds: they are held to the same bound.
  return boundedLifetime({
    ttl: Math.max(0, remaining),
    staleWhileRevalidate: window(given.get('stale-while-revalidate') ?? defaults.cacheStaleWhileRevalidate),
    staleIfError: window(given.get('stale-if-error') ?? defaults.cacheStaleIfError),
  });
}

/**
 * Seconds of freshness `Expires` gives: its distance from `Date` (or from
 * `now`), at least 0; 0 for an Expires that is no HTTP date (`0`, `-1`,
 * garbage: RFC 9111 5.3 reads it as already expired); undefined without one.
 */
function expiresSeconds(headers: FreshnessHeaders, now: number): number | undefined {
  const expires = headerText(headers.expires);
  if (expires === undefined) return undefined;
  const at = httpDateMs(expires);
  if (at === undefined) return 0;
  const date = httpDateMs(headerText(headers.date)) ?? now;
  return Math.max(0, Math.floor((at - date) / 1000));
}

/** The response's own Age (RFC 9111 5.1) in seconds; 0 when absent or not a non-negative integer. */
export function ageSeconds(headers: FreshnessHeaders): number {
  const text = headerText(headers.age)?.trim();
  return text !== undefined && /^\d+$/.test(text) ? Math.min(Number(text), maxDeltaSeconds) : 0;
}

/**
 * Seconds past its TTL and stale windows a store keeps an entry that has
 * a validator of the application's (ETag or Last-Modified), answered to
 * nobody, so the request that rebuilds it can revalidate it instead
 * (docs/decisions/0048-revalidation-instead-of-rebuild.md): `window` when
 * the option gives one, else three times the longer of its TTL and
 * `cacheDuration`; 0 for an entry without a validator.
 */
export function keptForRevalidation(
  headers: Record<string, string | string[]>,
  lifetime: Lifetime,
  options: { cacheDuration: number; cacheRevalidationWindow: number | undefined },
): number {
  if (headers.etag === undefined && headers['last-modified'] === undefined) return 0;
  const window = options.cacheRevalidationWindow ?? 3 * Math.max(lifetime.ttl, options.cacheDuration);
  return bounded(window);
}

/**
 * Milliseconds the store keeps an entry of this lifetime: its TTL and the
 * longest of its windows (all begin at expiry), a whole number, at most
 * twice {@link maxDeltaSeconds} in ms, which every store accepts.
 *
 * @param kept - seconds it is kept for revalidation ({@link keptForRevalidation})
 */
export function storeMs(lifetime: Lifetime, kept = 0): number {
  const { ttl, staleWhileRevalidate, staleIfError } = boundedLifetime(lifetime);
  return Math.ceil((ttl + Math.max(staleWhileRevalidate, staleIfError, bounded(kept))) * 1000);
}
