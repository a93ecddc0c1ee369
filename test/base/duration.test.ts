import test from 'ava';
import { parseDuration } from '../../src/base/duration.ts';

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
