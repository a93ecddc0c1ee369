/**
 * The entry's lifetime from the response's Cache-Control (src/cache/lifetime.ts),
 * checked against http-cache-semantics, the parser a shared cache in Node
 * usually relies on: for any mix of the directives that set a lifetime, the
 * TTL is its maxAge() for a shared cache, and the time the store keeps the
 * entry is its timeToLive().
 */
import test from 'ava';
import fc from 'fast-check';
import CachePolicy from 'http-cache-semantics';
import { cacheControlSeconds, lifetimeOf, storeMs } from '../../src/cache/lifetime.ts';

const none = { cacheDuration: 600, cacheStaleWhileRevalidate: 0, cacheStaleIfError: 0 };

function policy(cacheControl: string, now: number): CachePolicy {
  return new CachePolicy(
    { method: 'GET', url: '/', headers: {} },
    { status: 200, headers: { 'cache-control': cacheControl, date: new Date(now).toUTCString() } },
    { shared: true },
  );
}

test('TTL and store time agree with http-cache-semantics for any mix of lifetime directives (property, fixed seed)', (t) => {
  const seconds = fc.integer({ min: 0, max: 10_000_000 });
  const directive = fc.oneof(
    seconds.map((n) => `max-age=${n}`),
    seconds.map((n) => `s-maxage=${n}`),
    seconds.map((n) => `stale-while-revalidate=${n}`),
    seconds.map((n) => `stale-if-error=${n}`),
    fc.constant('public'),
  );
  const header = fc
    .uniqueArray(directive, { minLength: 1, maxLength: 5, selector: (d) => d.split('=')[0] })
    // Both parsers need a lifetime to compare: without max-age or s-maxage ours takes cacheDuration, theirs a heuristic.
    .filter((list) => list.some((d) => /^(max-age|s-maxage)=/.test(d)))
    .chain((list) => fc.shuffledSubarray(list, { minLength: list.length }))
    .map((list) => list.join(', '));
  const now = Math.floor(Date.now() / 1000) * 1000;
  fc.assert(
    fc.property(header, (cacheControl) => {
      const theirs = policy(cacheControl, now);
      const ours = lifetimeOf(cacheControl, none);
      t.is(ours.ttl, theirs.maxAge(), `TTL of ${cacheControl}`);
      // Theirs subtracts the milliseconds the response has aged since it was made; ours starts at the store.
      const aged = storeMs(ours) - theirs.timeToLive();
      t.true(aged >= 0 && aged < 1000, `store time of ${cacheControl}: ${storeMs(ours)} vs ${theirs.timeToLive()}`);
    }),
    { seed: 20261201, numRuns: 500 },
  );
});

test('what the response does not say comes from the options; s-maxage beats max-age', (t) => {
  const options = { cacheDuration: 60, cacheStaleWhileRevalidate: 5, cacheStaleIfError: 30 };
  t.deepEqual(lifetimeOf(undefined, options), { ttl: 60, staleWhileRevalidate: 5, staleIfError: 30 });
  t.deepEqual(lifetimeOf('no-cache', options), { ttl: 60, staleWhileRevalidate: 5, staleIfError: 30 });
  t.deepEqual(lifetimeOf('max-age=10, s-maxage=20', options), { ttl: 20, staleWhileRevalidate: 5, staleIfError: 30 });
  t.deepEqual(lifetimeOf(['max-age=10', 'stale-if-error=0'], options), {
    ttl: 10,
    staleWhileRevalidate: 5,
    staleIfError: 0,
  });
});

test('a value that is not delta-seconds is ignored; names are case-insensitive; the first occurrence wins', (t) => {
  t.deepEqual(
    [...cacheControlSeconds('Max-Age=5, max-age=9, s-maxage=-1, stale-if-error=1.5, stale-while-revalidate="7"')],
    [
      ['max-age', 5],
      ['stale-while-revalidate', 7],
    ],
  );
  t.deepEqual([...cacheControlSeconds('max-age=abc, max-age=3')], [['max-age', 3]], 'an unusable first one is skipped');
});
