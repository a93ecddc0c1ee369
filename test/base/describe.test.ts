/**
 * How option values read in errors and log lines (shownValue): short,
 * written as code writes them, never a secret, never a getter called, and
 * never a throw, whatever the value.
 */
import test from 'ava';
import fc from 'fast-check';
import { maskSecrets, shownValue } from '../../src/base/describe.ts';

test('values read as code writes them, lists and objects one level deep and cut after five entries', (t) => {
  t.is(shownValue(60000), '60000');
  t.is(shownValue('10 minutes'), '"10 minutes"');
  t.is(shownValue(undefined), 'undefined');
  t.is(shownValue(null), 'null');
  t.is(shownValue(5n), '5n');
  t.is(shownValue(Number.NaN), 'NaN');
  t.is(shownValue(['br', 5]), '["br", 5]');
  t.is(shownValue([1, 2, 3, 4, 5, 6]), '[1, 2, 3, 4, 5, …]');
  t.is(shownValue({ br: 12 }), '{ br: 12 }');
  t.is(shownValue([{ match: '/a', ttl: 0 }]), '[{ match: "/a", ttl: 0 }]');
  t.is(shownValue({ a: { b: { c: 1 } } }), '{ a: { b: an object } }');
  t.is(shownValue({}), '{}');
  t.is(shownValue(Object.create(null)), '{}');
  t.is(shownValue({ 'content-type': 1 }), '{ "content-type": 1 }');
  t.is(shownValue(new Map()), 'a Map');
  t.is(
    shownValue(() => 1),
    'a function',
  );
  t.is(shownValue(/html/i), '/html/i');
  t.is(shownValue('x'.repeat(200)), `"${'x'.repeat(60)}…"`);
  t.true(shownValue({ a: 'x'.repeat(60), b: 'y'.repeat(60) }).length <= 101, 'the whole is cut too');
});

test('a URL password, a secret query parameter and the values of secret-looking keys are shown as ***', (t) => {
  t.is(shownValue('redis://:hunter2@cache:6379/0'), '"redis://:***@cache:6379/0"');
  t.is(shownValue('rediss://default:hunter2@cache:6380'), '"rediss://default:***@cache:6380"');
  t.is(shownValue('redis://us:p@ss/w@h:1/0'), '"redis://us:***@ss/w@h:1/0"', 'up to the first slash after the host');
  t.is(shownValue('redis://us:p@ss@h:1/0'), '"redis://us:***@h:1/0"', 'an unescaped @ in the password');
  t.is(shownValue('rediss://hunter2@cache'), '"rediss://***@cache"', 'a user part without a colon may be a token');
  t.is(shownValue('redis://cache?password=hunter2&db=1'), '"redis://cache?password=***&db=1"');
  t.is(shownValue('redis://cache?db=1&auth_token=hunter2'), '"redis://cache?db=1&auth_token=***"');
  t.is(shownValue({ host: 'cache', password: 'hunter2' }), '{ host: "cache", password: *** }');
  t.is(shownValue(['redis://:hunter2@a']), '["redis://:***@a"]');
  t.is(maskSecrets('sqlite:/var/cache.sqlite'), 'sqlite:/var/cache.sqlite', 'nothing to hide');
  // A password past the cut is still hidden: masking comes first.
  t.false(shownValue(`redis://:${'p'.repeat(500)}@h`).includes('pp'));
});

test('no shown value holds a line break or another control character', (t) => {
  t.is(shownValue(Symbol('a\nb')), 'Symbol(a\\u000ab)');
  const named = { ['x\ny']: class {} }['x\ny']!;
  t.is(shownValue(new named()), 'a x\\u000ay');
  t.is(shownValue('a\nb'), '"a\\nb"', 'a string is escaped as JSON escapes it');
});

test('a getter is not called, and a value whose traps throw is named, not thrown', (t) => {
  let called = false;
  const getter = Object.defineProperty({}, 'x', {
    enumerable: true,
    get: () => {
      called = true;
      return 1;
    },
  });
  t.is(shownValue(getter), '{ x: a getter }');
  t.false(called);
  const hostile = new Proxy(
    {},
    {
      getPrototypeOf: () => {
        throw new Error('no');
      },
    },
  );
  t.is(shownValue(hostile), 'a value that cannot be read');
  const { proxy, revoke } = Proxy.revocable([], {});
  revoke();
  t.is(shownValue(proxy), 'a value that cannot be read');
});

test('any value is shown in at most 101 characters without a throw (property, fixed seed)', (t) => {
  fc.assert(
    fc.property(fc.anything({ withBigInt: true, withMap: true, withNullPrototype: true, withDate: true }), (value) => {
      const shown = shownValue(value);
      return typeof shown === 'string' && shown.length <= 101;
    }),
    { seed: 77, numRuns: 2000 },
  );
  t.pass();
});

test('masking stays linear on long hostile strings', (t) => {
  const started = Date.now();
  maskSecrets(`?${'a'.repeat(1_000_000)}`);
  maskSecrets(`redis://${'a:'.repeat(500_000)}`);
  maskSecrets('&a'.repeat(500_000));
  t.true(Date.now() - started < 2000, `${Date.now() - started} ms`);
});
