/**
 * The entry's lifetime from the response's Cache-Control, Expires, Date and
 * Age (src/cache/lifetime.ts), checked against http-cache-semantics, the
 * parser a shared cache in Node usually relies on: for any mix of the
 * directives and headers that set a lifetime, the TTL is its maxAge() for a
 * shared cache less the Age, and the time the store keeps the entry is its
 * timeToLive(). Where that package departs from RFC 9111 (max-age=0 read as
 * absent, proxy-revalidate as no freshness) the cases are shown apart.
 */
import test from 'ava';
import fc from 'fast-check';
import CachePolicy from 'http-cache-semantics';
import { cacheControlSeconds, keptForRevalidation, lifetimeOf, storeMs } from '../../src/cache/lifetime.ts';

const none = { cacheDuration: 600, cacheStaleWhileRevalidate: 0, cacheStaleIfError: 0 };

test('TTL and store time agree with http-cache-semantics for any mix of lifetime directives, Expires, Date and Age (property, fixed seed)', (t) => {
  const seconds = fc.integer({ min: 0, max: 10_000_000 });
  // http-cache-semantics reads max-age=0 and s-maxage=0 as absent (a falsy value) and falls back to Expires: RFC 9111 does not.
  const lifetimeSeconds = fc.integer({ min: 1, max: 10_000_000 });
  const directive = fc.oneof(
    lifetimeSeconds.map((n) => `max-age=${n}`),
    lifetimeSeconds.map((n) => `s-maxage=${n}`),
    seconds.map((n) => `stale-while-revalidate=${n}`),
    seconds.map((n) => `stale-if-error=${n}`),
    fc.constant('public'),
  );
  const cacheControl = fc
    .uniqueArray(directive, { minLength: 0, maxLength: 5, selector: (d) => d.split('=')[0] })
    .chain((list) => fc.shuffledSubarray(list, { minLength: list.length }))
    .map((list) => list.join(', '));
  const now = Math.floor(Date.now() / 1000) * 1000;
  const response = fc.record({
    cacheControl,
    // Seconds from Date to Expires (negative: already past), or an Expires that is no date.
    expires: fc.option(fc.oneof(fc.integer({ min: -100_000, max: 10_000_000 }), fc.constantFrom('0', '-1', 'soon')), {
      nil: undefined,
    }),
    age: fc.option(fc.integer({ min: 0, max: 20_000_000 }), { nil: undefined }),
  });
  fc.assert(
    fc.property(response, ({ cacheControl, expires, age }) => {
      const headers: Record<string, string> = { date: new Date(now).toUTCString() };
      if (cacheControl !== '') headers['cache-control'] = cacheControl;
      if (expires !== undefined)
        headers.expires = typeof expires === 'number' ? new Date(now + expires * 1000).toUTCString() : expires;
      if (age !== undefined) headers.age = String(age);
      // Both need a lifetime to compare: without one ours takes cacheDuration, theirs a heuristic.
      fc.pre(headers.expires !== undefined || /max-age|s-maxage/.test(cacheControl));
      const theirs = new CachePolicy(
        { method: 'GET', url: '/', headers: {} },
        { status: 200, headers },
        { shared: true },
      );
      const ours = lifetimeOf(headers, none, now);
      const label = JSON.stringify(headers);
      t.is(ours.ttl, Math.max(0, theirs.maxAge() - (age ?? 0)), `TTL of ${label}`);
      // Theirs subtracts the milliseconds the response has aged since it was made; ours starts at the store.
      const aged = storeMs(ours) - theirs.timeToLive();
      t.true(aged >= 0 && aged < 1000, `store time of ${label}: ${storeMs(ours)} vs ${theirs.timeToLive()}`);
    }),
    { seed: 20261204, numRuns: 800 },
  );
});

test('what the response does not say comes from the options; s-maxage beats max-age, which beats Expires', (t) => {
  const options = { cacheDuration: 60, cacheStaleWhileRevalidate: 5, cacheStaleIfError: 30 };
  t.deepEqual(lifetimeOf({}, options), { ttl: 60, staleWhileRevalidate: 5, staleIfError: 30 });
  t.deepEqual(lifetimeOf({ 'cache-control': 'max-age=10, s-maxage=20' }, options), {
    ttl: 20,
    staleWhileRevalidate: 5,
    staleIfError: 30,
  });
  t.deepEqual(lifetimeOf({ 'cache-control': ['max-age=10', 'stale-if-error=0'] }, options), {
    ttl: 10,
    staleWhileRevalidate: 5,
    staleIfError: 0,
  });
  const now = Date.UTC(2026, 11, 4, 12, 0, 0);
  const expires = 'Fri, 04 Dec 2026 12:05:00 GMT';
  t.is(lifetimeOf({ expires, date: 'Fri, 04 Dec 2026 12:00:00 GMT' }, options, now).ttl, 300, 'Expires − Date');
  t.is(lifetimeOf({ expires }, options, now + 60_000).ttl, 240, 'without a Date, Expires − the time of storing');
  t.is(lifetimeOf({ expires, date: 'yesterday' }, options, now).ttl, 300, 'an invalid Date is the time of storing');
  t.is(lifetimeOf({ expires, 'cache-control': 'max-age=7' }, options, now).ttl, 7, 'max-age beats Expires');
});

test('an Expires in the past, or that is no HTTP date, is stale at once; the obsolete date forms are read in GMT', (t) => {
  const options = { cacheDuration: 600, cacheStaleWhileRevalidate: 0, cacheStaleIfError: 0 };
  const now = Date.UTC(2026, 11, 4, 12, 0, 0);
  for (const expires of ['Thu, 01 Jan 1970 00:00:00 GMT', '0', '-1', 'never', '2026-12-05T12:00:00Z', ''])
    t.is(lifetimeOf({ expires }, options, now).ttl, 0, `Expires: ${JSON.stringify(expires)}`);
  t.is(lifetimeOf({ expires: 'Friday, 04-Dec-26 12:01:00 GMT' }, options, now).ttl, 60, 'RFC 850');
  t.is(lifetimeOf({ expires: 'Fri Dec  4 12:02:00 2026' }, options, now).ttl, 120, 'asctime, in GMT whatever TZ says');
});

test('the Age a response already has is taken off its freshness', (t) => {
  const options = { cacheDuration: 600, cacheStaleWhileRevalidate: 0, cacheStaleIfError: 0 };
  t.is(lifetimeOf({ 'cache-control': 'max-age=600', age: '500' }, options).ttl, 100);
  t.is(lifetimeOf({ 'cache-control': 'max-age=600', age: '900' }, options).ttl, 0, 'older than its freshness: stale');
  t.is(
    lifetimeOf({ 'cache-control': 'max-age=600', age: '-5' }, options).ttl,
    600,
    'an Age that is no delta-seconds is ignored',
  );
  t.is(lifetimeOf({ 'cache-control': 'max-age=600', age: '1.5' }, options).ttl, 600);
  t.is(lifetimeOf({ age: '500' }, options).ttl, 600, "the options' duration is this cache's own: no Age comes off it");
});

test('no-cache is fresh for no time; no-cache, must-revalidate and proxy-revalidate are never answered stale', (t) => {
  const options = { cacheDuration: 600, cacheStaleWhileRevalidate: 30, cacheStaleIfError: 3600 };
  const windows = 'stale-while-revalidate=60, stale-if-error=600';
  t.deepEqual(lifetimeOf({ 'cache-control': `no-cache, max-age=60, ${windows}` }, options), {
    ttl: 0,
    staleWhileRevalidate: 0,
    staleIfError: 0,
  });
  for (const directive of ['must-revalidate', 'proxy-revalidate'])
    t.deepEqual(lifetimeOf({ 'cache-control': `max-age=60, ${directive}, ${windows}` }, options), {
      ttl: 60,
      staleWhileRevalidate: 0,
      staleIfError: 0,
    });
  t.deepEqual(
    lifetimeOf({ 'cache-control': 'no-cache="set-cookie", max-age=60' }, options),
    { ttl: 60, staleWhileRevalidate: 30, staleIfError: 3600 },
    'a no-cache naming fields leaves the response fresh (those fields are not stored)',
  );
});

test('an entry with an ETag or Last-Modified is kept three times its TTL (at least cacheDuration) past it, or as long as the option says', (t) => {
  const lifetime = { ttl: 60, staleWhileRevalidate: 0, staleIfError: 0 };
  const options = { cacheDuration: 600, cacheRevalidationWindow: undefined };
  t.is(keptForRevalidation({ etag: '"v1"' }, lifetime, options), 1800);
  t.is(
    keptForRevalidation({ 'last-modified': 'Fri, 04 Dec 2026 12:00:00 GMT' }, { ...lifetime, ttl: 3600 }, options),
    10800,
  );
  t.is(keptForRevalidation({}, lifetime, options), 0, 'nothing to revalidate with: not kept');
  t.is(keptForRevalidation({ etag: '"v1"' }, lifetime, { ...options, cacheRevalidationWindow: 90 }), 90);
  t.is(
    keptForRevalidation({ etag: '"v1"' }, lifetime, { ...options, cacheRevalidationWindow: 0 }),
    0,
    '0 turns it off',
  );
  t.is(storeMs(lifetime, 1800), (60 + 1800) * 1000);
  t.is(
    storeMs({ ttl: 60, staleWhileRevalidate: 0, staleIfError: 3600 }, 1800),
    (60 + 3600) * 1000,
    'the longest window',
  );
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
