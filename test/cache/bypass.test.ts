/**
 * The environment switches of the bypass rules against the clock: read at
 * most every envTrustMs, and read again when the clock is set back rather
 * than trusting a reading from the "future".
 */
import test from 'ava';
import type { Context } from 'koa';
import { bypassReason, envTrustMs } from '../../src/cache/bypass.ts';

const plainGet = { request: { method: 'GET', headers: {} }, originalUrl: '/' } as unknown as Context;

test.serial('NO_CACHE is trusted for envTrustMs, and read again at once when the clock goes back', (t) => {
  t.teardown(() => delete process.env.NO_CACHE);
  delete process.env.NO_CACHE;
  // Far from any reading the other tests left: the variables are read now.
  const start = Date.now() + 1e9;
  t.is(bypassReason(plainGet, true, start), undefined);
  process.env.NO_CACHE = '1';
  t.is(bypassReason(plainGet, true, start + envTrustMs - 1), undefined, 'the reading is trusted within envTrustMs');
  t.is(bypassReason(plainGet, true, start + envTrustMs), 'NO_CACHE', 'and read again after it');
  delete process.env.NO_CACHE;
  t.is(bypassReason(plainGet, true, start + envTrustMs + 1), 'NO_CACHE', 'trusted again');
  t.is(bypassReason(plainGet, true, start - 60_000), undefined, 'a clock set back a minute reads the variables again');
});
