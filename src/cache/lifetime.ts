/**
 * How long an entry lives (docs/decisions/0028-stale-entries.md): its TTL
 * and its two stale windows (RFC 5861), in seconds. The action's own
 * response `Cache-Control` decides when it says: `s-maxage`, else
 * `max-age`, is the TTL (RFC 9111 5.2.2.10: a shared cache prefers
 * s-maxage), and `stale-while-revalidate=` and `stale-if-error=` are the
 * windows; what it does not say comes from the options.
 */
import { maxDeltaSeconds, parseCacheControl } from '../http/cache-control.ts';

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

/**
 * The lifetime of an entry made from a response with this Cache-Control.
 *
 * @param cacheControl - the response's Cache-Control header
 * @param defaults - `cacheDuration`, `cacheStaleWhileRevalidate` and `cacheStaleIfError` (seconds)
 */
export function lifetimeOf(
  cacheControl: string | string[] | undefined,
  defaults: { cacheDuration: number; cacheStaleWhileRevalidate: number; cacheStaleIfError: number },
): Lifetime {
  const given = cacheControl === undefined ? undefined : cacheControlSeconds(cacheControl);
  // The options may hold any finite number of seconds: they are held to the same bound.
  return boundedLifetime({
    ttl: given?.get('s-maxage') ?? given?.get('max-age') ?? defaults.cacheDuration,
    staleWhileRevalidate: given?.get('stale-while-revalidate') ?? defaults.cacheStaleWhileRevalidate,
    staleIfError: given?.get('stale-if-error') ?? defaults.cacheStaleIfError,
  });
}

/**
 * Milliseconds the store keeps an entry of this lifetime: its TTL and the
 * longer window (both begin at expiry), a whole number, at most twice
 * {@link maxDeltaSeconds} in ms, which every store accepts.
 */
export function storeMs(lifetime: Lifetime): number {
  const { ttl, staleWhileRevalidate, staleIfError } = boundedLifetime(lifetime);
  return Math.ceil((ttl + Math.max(staleWhileRevalidate, staleIfError)) * 1000);
}
