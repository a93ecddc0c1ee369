import test from 'ava';
import {
  exactDuration,
  parseDuration,
  readsAsMilliseconds,
  roughDuration,
  roundedDuration,
} from '../../src/base/duration.ts';

test('numbers are seconds; strings take a unit word', (t) => {
  t.is(parseDuration(10), 10);
  t.is(parseDuration(0.5), 0.5);
  t.is(parseDuration('10 minutes'), 600);
  t.is(parseDuration('1.5 h'), 5400);
  t.is(parseDuration('30s'), 30);
  t.is(parseDuration('2 days'), 172_800);
  t.is(parseDuration('250 ms'), 0.25);
  t.is(parseDuration('42'), 42);
});

test('anything else is not a duration', (t) => {
  for (const bad of [-1, Number.NaN, Infinity, '', 'soon', '10 fortnights', '-5 s', null, undefined, {}, [], '1e3']) {
    t.is(parseDuration(bad), undefined, `${String(bad)} is refused`);
  }
});

test('a bare number reads like milliseconds over a week, or as a whole thousand from 10000 on', (t) => {
  for (const value of [604_801, 60_000, 10_000, 3_600_000, '60000', 1e300])
    t.is(readsAsMilliseconds(value), Number(value), JSON.stringify(value));
  for (const value of [
    604_800,
    86_400,
    9000,
    9999,
    10_001,
    0,
    '30 days',
    '60000 s',
    '1e3',
    -60_000,
    Infinity,
    null,
    {},
  ])
    t.is(readsAsMilliseconds(value), undefined, String(value));
});

test('durations read back for a reader, and as strings parseDuration takes', (t) => {
  t.is(roughDuration(60_000), '16.7 hours');
  t.is(roughDuration(3600), '1 hour');
  t.is(roughDuration(86_400_000), '2.7 years');
  t.is(roughDuration(1e300), '3.17e+292 years', 'an absurd amount in a few digits');
  t.is(exactDuration(60), '1 minute');
  t.is(exactDuration(700), '700 seconds');
  t.is(exactDuration(604.801), '604.801 seconds');
  t.is(roundedDuration(60_000), '17 hours');
  t.is(roundedDuration(86_400_000), '1000 days');
  for (const seconds of [60, 700, 604.801, 3600, 86_400]) t.is(parseDuration(exactDuration(seconds)), seconds);
});
