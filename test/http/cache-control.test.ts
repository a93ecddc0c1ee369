/**
 * The one Cache-Control parser (src/http/cache-control.ts) against
 * http-cache-semantics, whose CachePolicy parses the request's and the
 * response's Cache-Control with one function (its `toObject()` hands both
 * back as `reqcc` and `rescc`). Over generated headers (known and unknown
 * directives, repeated, in any case, with and without arguments, tokens,
 * digits, quoted-strings, white space around everything, empty elements)
 * both give the same directives, except where that package departs from the
 * RFCs:
 *
 * - a repeated directive: it keeps the last occurrence (each one overwrites
 *   the one before in its object), where RFC 9111 4.2.1 says the first
 *   should be used; so ours is compared with its reading of the same
 *   directives in reverse order;
 * - names: it keeps them as sent (`Max-Age` is not `max-age` to it), where
 *   RFC 9111 5.2 compares them case-insensitively; the reversed header it
 *   reads has them lowercased;
 * - an empty element (`a, , b`): it records a directive named '', where
 *   RFC 9110 5.6.1 has a recipient ignore empty elements; its '' is dropped.
 *
 * Headers whose names are all lowercase and all different are compared as
 * they are, no adjustment. Three more differences lie in quoted-strings
 * (RFC 9110 5.6.4), which the generated arguments do not hold: that package
 * splits at a comma inside one, cuts the argument at a second `=`, and
 * leaves a quoted-pair escaped. The rows below show each.
 */
import test from 'ava';
import fc from 'fast-check';
import CachePolicy from 'http-cache-semantics';
import { maxDeltaSeconds, parseCacheControl } from '../../src/http/cache-control.ts';

type Directives = Record<string, string | null>;

/** What http-cache-semantics reads, as the request's and as the response's Cache-Control (null for no argument). */
function theirs(header: string): { request: Directives; response: Directives } {
  const policy = new CachePolicy(
    { method: 'GET', url: '/', headers: { 'cache-control': header } },
    { status: 200, headers: { 'cache-control': header } },
  ).toObject() as { reqcc: Record<string, string | true>; rescc: Record<string, string | true> };
  const plain = (cc: Record<string, string | true>): Directives =>
    sorted(Object.entries(cc).map(([name, value]) => [name, value === true ? null : value]));
  return { request: plain(policy.reqcc), response: plain(policy.rescc) };
}

/** Ours, in the same form. */
function ours(header: string): Directives {
  return sorted([...parseCacheControl(header).directives].map(([name, value]) => [name, value ?? null]));
}

function sorted(entries: Array<[string, string | null]>): Directives {
  return Object.fromEntries(entries.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}

function withoutEmptyName(directives: Directives): Directives {
  const { '': _, ...rest } = directives;
  return rest;
}

// --- generated headers --------------------------------------------------------

const known = [
  'max-age',
  's-maxage',
  'no-cache',
  'no-store',
  'private',
  'public',
  'no-transform',
  'must-revalidate',
  'stale-while-revalidate',
  'stale-if-error',
  'immutable',
  'x-extension',
];
/** A name as sent: mostly lowercase, sometimes in another case. */
const name = fc
  .tuple(fc.constantFrom(...known), fc.integer({ min: 0, max: 5 }))
  .map(([n, casing]) => (casing === 0 ? n.toUpperCase() : casing === 1 ? n[0]!.toUpperCase() + n.slice(1) : n));
const ows = fc.constantFrom('', '', '', ' ', '  ', '\t', ' \t');
/** Text a quoted-string may hold that both parsers read alike: no comma, `=`, quote or backslash. */
const quotedText = fc.string({ unit: fc.constantFrom('a', 'Z', '5', ' ', '-', ';', '/', ':', '\t'), maxLength: 8 });
const argument = fc.oneof(
  fc.constant(undefined),
  fc.constantFrom('0', '5', '60', '3600', '2147483648', '99999999999999999999', '-1', '1.5', 'abc', 'set-cookie'),
  quotedText.map((text) => `"${text}"`),
  fc.constantFrom('"60"', '""'),
);
/** One element: a directive with white space around its name, its `=` and its argument, or an empty element. */
const element = fc.oneof(
  {
    weight: 12,
    arbitrary: fc.record({ name, argument, before: ows, after: ows, aroundEquals: fc.tuple(ows, ows) }).map((d) => ({
      name: d.name,
      text: (argument: string | undefined, spelled: string) =>
        argument === undefined
          ? `${d.before}${spelled}${d.after}`
          : `${d.before}${spelled}${d.aroundEquals[0]}=${d.aroundEquals[1]}${argument}${d.after}`,
      argument: d.argument,
    })),
  },
  { weight: 1, arbitrary: ows.map((space) => ({ name: '', text: () => space, argument: undefined })) },
);
const elements = fc.array(element, { minLength: 1, maxLength: 6 });

const render = (
  list: ReadonlyArray<{
    name: string;
    text: (a: string | undefined, n: string) => string;
    argument: string | undefined;
  }>,
  lower: boolean,
) => list.map((e) => e.text(e.argument, lower ? e.name.toLowerCase() : e.name)).join(',');

test('every generated header gives the directives http-cache-semantics gives, first occurrence and lowercased names aside (property, fixed seed)', (t) => {
  let asTheyAre = 0;
  let repeated = 0;
  fc.assert(
    fc.property(elements, (list) => {
      const header = render(list, false);
      const mine = ours(header);
      // Theirs on the same directives reversed, names lowercased: its last occurrence is our first.
      const reference = theirs(render([...list].reverse(), true));
      t.deepEqual(mine, withoutEmptyName(reference.response), `${JSON.stringify(header)} against the reversed reading`);
      t.deepEqual(reference.request, reference.response, 'it parses a request and a response alike');
      const names = list.map((e) => e.name).filter((n) => n !== '');
      const distinct = new Set(names.map((n) => n.toLowerCase())).size === names.length;
      if (distinct && names.every((n) => n === n.toLowerCase())) {
        asTheyAre++;
        t.deepEqual(mine, withoutEmptyName(theirs(header).response), `${JSON.stringify(header)} as it is`);
      }
      if (!distinct) repeated++;
    }),
    { seed: 9111, numRuns: 3000 },
  );
  t.true(asTheyAre > 500, `many headers compared as they are (${asTheyAre})`);
  t.true(repeated > 500, `and many with a repeated directive (${repeated})`);
});

test('delta-seconds: digits only, bounded at 2^31, the first occurrence that carries them (property, fixed seed)', (t) => {
  fc.assert(
    fc.property(elements, (list) => {
      const header = render(list, false);
      const { seconds } = parseCacheControl(header);
      const expected = new Map<string, number>();
      for (const e of list) {
        const bare = e.argument?.replace(/^"|"$/g, '');
        if (e.name === '' || bare === undefined || !/^\d+$/.test(bare)) continue;
        const n = e.name.toLowerCase();
        if (!expected.has(n)) expected.set(n, Math.min(Number(bare), maxDeltaSeconds));
      }
      t.deepEqual([...seconds], [...expected], JSON.stringify(header));
    }),
    { seed: 9112, numRuns: 1000 },
  );
});

// [header, ours, theirs (the response reading), why they differ]
const differences: Array<[string, Directives, Directives, string]> = [
  [
    'max-age=5, max-age=9',
    { 'max-age': '5' },
    { 'max-age': '9' },
    'RFC 9111 4.2.1: the first occurrence of a repeated directive should be used; it keeps the last',
  ],
  [
    'No-Store, MAX-AGE=5',
    { 'max-age': '5', 'no-store': null },
    { 'MAX-AGE': '5', 'No-Store': null },
    'RFC 9111 5.2: names are case-insensitive; it keeps them as sent',
  ],
  [
    'public, , max-age=5,',
    { 'max-age': '5', public: null },
    { '': null, 'max-age': '5', public: null },
    'RFC 9110 5.6.1: empty elements are ignored',
  ],
  [
    'private="set-cookie, x-token", max-age=5',
    { 'max-age': '5', private: 'set-cookie, x-token' },
    { 'max-age': '5', private: 'set-cookie', 'x-token"': null },
    'RFC 9110 5.6.4: a comma inside a quoted-string separates nothing',
  ],
  [
    'x-extension="a=b"',
    { 'x-extension': 'a=b' },
    { 'x-extension': 'a' },
    'RFC 9110 5.6.4: `=` inside a quoted-string is part of it; it cuts the argument there',
  ],
  [
    'x-extension="a\\"b\\\\c"',
    { 'x-extension': 'a"b\\c' },
    { 'x-extension': 'a\\"b\\\\c' },
    'RFC 9110 5.6.4: a quoted-pair stands for the character after the backslash',
  ],
];

for (const [header, mine, reference, why] of differences)
  test(`${JSON.stringify(header)}: ${why}`, (t) => {
    t.deepEqual(ours(header), mine, 'ours');
    t.deepEqual(theirs(header).response, reference, 'http-cache-semantics');
  });

test('an argument that is no well-formed quoted-string runs to the next comma and loses a quote at either end', (t) => {
  const read = (header: string | string[]) => Object.fromEntries(parseCacheControl(header).directives);
  t.deepEqual(read('max-age="5, public'), { 'max-age': '5', public: undefined }, 'never closed');
  t.deepEqual(read('max-age=5", public'), { 'max-age': '5', public: undefined });
  t.deepEqual(read('a="x"y, b'), { a: 'x"y', b: undefined }, 'text after the closing quote');
  t.is(parseCacheControl('max-age="5').seconds.get('max-age'), 5, 'as the lifetime always read it');
  t.is(
    parseCacheControl('max-age=abc, max-age=3').seconds.get('max-age'),
    3,
    'an unusable first occurrence is skipped',
  );
  t.deepEqual(read(['no-cache', 'max-age=0']), { 'no-cache': undefined, 'max-age': '0' }, 'lines of a repeated header');
  t.is(parseCacheControl(undefined).directives.size, 0);
  t.is(parseCacheControl('').directives.size, 0);
});
