/**
 * The reading a `cookie:NAME` key takes (src/http/cookies.ts): the
 * value Koa's `ctx.cookies.get` returns, or "ambiguous" (the request then
 * bypasses the cache) when the header names the cookie twice in any
 * spelling or another reader could find another value. Checked row by row,
 * and against the real `cookies` package over generated headers, signed
 * reads included: the key holds the value and its `.sig`, so whatever
 * `ctx.cookies.get(NAME, { signed: true })` answers must follow from the two.
 * And the Cookie header less the cookies `cacheIgnoreCookies` names
 * (`withoutCookies`), cut by the same rule: the `cookies` package finds
 * none of those afterwards, and reads every other cookie as before.
 */
import test from 'ava';
import Cookies from 'cookies';
import fc from 'fast-check';
import Keygrip from 'keygrip';
import { ambiguousCookie, analyticsCookies, readCookie, withoutCookies } from '../../src/http/cookies.ts';
import { wildcardsPattern } from '../../src/http/wildcard.ts';

/** What the `cookies` package (Koa's ctx.cookies) reads, unsigned. */
function koaReads(header: string | undefined, name: string): string | undefined {
  const request = { headers: header === undefined ? {} : { cookie: header } };
  return new Cookies(request as never, {} as never).get(name, { signed: false });
}

const keys = ['first secret', 'older secret'];
const grip = new Keygrip(keys);

/** What the `cookies` package reads signed, with Koa's keys (app.keys). */
function koaReadsSigned(header: string, name: string): string | undefined {
  const request = { headers: { cookie: header }, connection: {}, socket: {} };
  // A signature made with an older key is signed again through the response; it is not part of the reading.
  const response = { getHeader: () => undefined, setHeader: () => undefined };
  return new Cookies(request as never, response as never, { keys }).get(name, { signed: true });
}

/** 'bypass', or the value read ('-' for none). */
function shown(header: string | undefined, name: string): string {
  const read = readCookie(header, name);
  return read === ambiguousCookie ? 'bypass' : (read.value ?? '-');
}

const rows: Array<[header: string | undefined, expected: string, why: string]> = [
  [undefined, '-', 'no Cookie header'],
  ['', '-', 'an empty header'],
  ['session=abc', 'abc', 'the plain case'],
  ['a=1; session=abc; b=2', 'abc', 'among others'],
  ['a=1;session=abc', 'abc', 'no space after the separator'],
  ['session=', '', 'empty is a value of its own, as ctx.cookies.get reads an empty string'],
  ['session=""', 'bypass', 'quoted: Koa 2.15+ drops the quotes, Koa 2.13 and 2.14 keep them'],
  ['session="abc"', 'bypass', 'quoted, read two ways by Koa itself'],
  ['Session=abc', '-', 'names are case-sensitive, for Koa as for browsers'],
  ['Session=x; session=abc', 'abc', 'a case variant is another cookie'],
  ['xsession=1; sessionx=2', '-', 'longer names are other cookies'],
  ['session=a=b', 'a=b', 'the value runs to the next separator'],
  ['session =; session=ATTACKER', 'bypass', 'named twice: ctx.cookies.get reads ATTACKER, a trimming reader nothing'],
  ['a=1;\tsession=; session=ATTACKER', 'bypass', 'a tab before the name'],
  ['session=; session=ATTACKER', 'bypass', 'named twice, plainly'],
  ['session=abc; session=abc', 'bypass', 'named twice, even with one value'],
  ['"session"=x; session=ATTACKER', 'bypass', 'a quoted spelling'],
  ['session=x, session=ATTACKER', 'bypass', 'a comma-splitting reader sees two'],
  ['\tsession=abc', 'bypass', 'a spelling ctx.cookies.get does not see'],
  ['session\t=abc', 'bypass', 'white space before ='],
  ['session= abc', 'bypass', 'white space a trimming reader drops'],
  ['session="abc', 'bypass', 'ctx.cookies.get (Koa 2.15+) cuts an opening quote and the last character'],
  ['session="', 'bypass', 'a lone quote'],
  ['session', 'bypass', 'a name without =, which some readers take as a value'],
  ['koa.sess=abc', '-', 'another cookie'],
  ['session=abc; session.sig=s1; session.sig=s2', 'bypass', 'its signature named twice'],
  ['session=a\nsession=b', 'bypass', 'a line feed Node never lets through'],
];

for (const [header, expected, why] of rows)
  test(`reading cookie session from ${JSON.stringify(header)}: ${expected} (${why})`, (t) => {
    t.is(shown(header, 'session'), expected);
    if (expected !== 'bypass')
      t.is(koaReads(header, 'session'), expected === '-' ? undefined : expected, 'as Koa reads it');
  });

test('the signature is read with the cookie, by the same rule', (t) => {
  t.deepEqual(readCookie('koa.sess=v1; koa.sess.sig=s1', 'koa.sess'), { value: 'v1', signature: 's1' });
  t.deepEqual(readCookie('koa.sess.sig=s1', 'koa.sess'), { value: undefined, signature: 's1' });
  t.is(readCookie('koa.sess=v1; koa.sess.sig =; koa.sess.sig=s1', 'koa.sess'), ambiguousCookie);
});

test('whatever the header, the reading is what ctx.cookies.get returns, or a bypass (property against the cookies package, fixed seed)', (t) => {
  const unit = fc.constantFrom(
    'session',
    'sess',
    'ion',
    '=',
    ';',
    '; ',
    ',',
    ' ',
    '\t',
    '"',
    'a',
    'S',
    '.sig',
    '\u00a0',
  );
  let read = 0;
  fc.assert(
    fc.property(fc.string({ unit, maxLength: 12 }), (header) => {
      const reading = readCookie(header, 'session');
      if (reading === ambiguousCookie) return true;
      read++;
      return reading.value === koaReads(header, 'session') && reading.signature === koaReads(header, 'session.sig');
    }),
    { seed: 6265, numRuns: 20_000 },
  );
  t.true(read > 5000, `most headers were read, not bypassed (${read})`);
});

test('a signed read follows from the value and the signature read (property against the cookies package, fixed seed)', (t) => {
  // Pairs in whole: a value, a signature (valid by the current key, by an older one, or not) and
  // others, some of them spellings of the two names, shuffled and joined by separators.
  const value = fc.constantFrom('session=a', 'session=b', 'session=', 'session="a"', 'session=""');
  const signature = fc.constantFrom(
    `session.sig=${grip.sign('session=a')}`,
    `session.sig=${new Keygrip(['older secret']).sign('session=a')}`,
    `session.sig=${grip.sign('session=')}`,
    'session.sig=',
    'session.sig=forged',
  );
  const other = fc.constantFrom('other=1', 'session =a', '"session"=b', 'session.sig =x', '', 'sessionx=a');
  const separator = fc.constantFrom(';', '; ', '; ', ';\t', ' ;', ',', ';  ');
  const header = fc
    .tuple(
      fc.option(value, { freq: 4 }),
      fc.option(signature, { freq: 4 }),
      fc.array(other, { maxLength: 2 }),
      fc.array(fc.tuple(fc.constantFrom('', '', ' ', '\t'), separator), { minLength: 4, maxLength: 4 }),
    )
    .chain(([v, sig, others, spacing]) => {
      const pairs = [v, sig, ...others].filter((p) => p !== null);
      return fc
        .shuffledSubarray(pairs, { minLength: pairs.length })
        .map((shuffled) => shuffled.map((p, i) => (i === 0 ? '' : spacing[i]![1]) + spacing[i]![0] + p).join(''));
    });
  let signed = 0;
  let read = 0;
  fc.assert(
    fc.property(header, (header) => {
      const reading = readCookie(header, 'session');
      if (reading === ambiguousCookie) return true;
      read++;
      const { value, signature } = reading;
      const verified =
        value !== undefined && signature !== undefined && grip.index(`session=${value}`, signature) !== -1
          ? value
          : undefined;
      if (verified !== undefined) signed++;
      return koaReadsSigned(header, 'session') === verified;
    }),
    { seed: 6266, numRuns: 20_000 },
  );
  // Two of the five values are quoted, and a quoted value bypasses (Koa 2.13's reader keeps the quotes).
  t.true(read > 4000, `most headers were read, not bypassed (${read})`);
  t.true(signed > 200, `hundreds carried a valid signature (${signed})`);
});

test('without the ignored cookies, the cookies package finds none of them and reads every other as before (property, fixed seed)', (t) => {
  const ignored = wildcardsPattern(analyticsCookies);
  const ignoredNames = ['_ga', '_ga_X1Y2', '_gid', '__utmz', 'mp_abc_mixpanel'];
  const otherNames = ['session', 'session.sig', 'other', '_gallery', 'mpx'];
  const name = fc.constantFrom(...ignoredNames, ...otherNames);
  const value = fc.constantFrom('', '1', 'GA1.2.3.4', '"a"', 'x=y', 'a b', '"', grip.sign('session=a'));
  const pair = fc
    .record({
      name,
      value,
      before: fc.constantFrom('', '', ' ', '  ', '\t'),
      quoted: fc.integer({ min: 0, max: 9 }).map((n) => n === 0),
      noEquals: fc.integer({ min: 0, max: 19 }).map((n) => n === 0),
      aroundEquals: fc.constantFrom('', '', ' ', '\t'),
    })
    .map(({ name: n, value: v, before, quoted, noEquals, aroundEquals }) => {
      const spelled = quoted ? `"${n}"` : n;
      return noEquals ? `${before}${spelled}` : `${before}${spelled}${aroundEquals}=${v}`;
    });
  const separator = fc.constantFrom(';', '; ', '; ', ';\t', ' ;', ',', ', ');
  const header = fc
    .array(fc.tuple(pair, separator), { minLength: 1, maxLength: 6 })
    .map((pairs) => pairs.map(([p, sep], i) => (i === 0 ? p : sep + p)).join(''));
  const signedRead = (h: string | undefined, n: string) => (h === undefined ? undefined : koaReadsSigned(h, n));
  let changed = 0;
  fc.assert(
    fc.property(header, (h) => {
      const kept = withoutCookies(h, ignored);
      if (kept !== h) changed++;
      else if (ignoredNames.some((n) => koaReads(h, n) !== undefined)) return false;
      for (const n of ignoredNames) if (koaReads(kept, n) !== undefined) return false;
      // A reader that trims white space and quotes around a name finds none either.
      for (const piece of (kept ?? '').split(';'))
        if (ignored.test(piece.split('=')[0]!.replace(/^[\s"]+|[\s"]+$/g, ''))) return false;
      for (const n of otherNames) {
        if (koaReads(kept, n) !== koaReads(h, n)) return false;
        if (signedRead(kept, n) !== signedRead(h, n)) return false;
      }
      return withoutCookies(kept ?? '', ignored) === (kept ?? '');
    }),
    { seed: 6267, numRuns: 20_000 },
  );
  t.true(changed > 10_000, `most headers held an ignored cookie (${changed})`);
});

test('a visitor without the ignored cookies sends the header the others are left with', (t) => {
  const ignored = wildcardsPattern(analyticsCookies);
  t.is(withoutCookies('_ga=GA1.2.3; session=abc', ignored), 'session=abc');
  t.is(withoutCookies('session=abc; _ga=GA1.2.3; _gid=7', ignored), 'session=abc');
  t.is(withoutCookies('a=1; _ga_X1=2; b=3', ignored), 'a=1; b=3');
  t.is(
    withoutCookies('_ga=1; _gid=2', ignored),
    undefined,
    'nothing left: no header, as for a visitor without cookies',
  );
  const plain = 'session=abc; _gallery=1';
  t.is(withoutCookies(plain, ignored), plain, 'nothing ignored: the very string');
  t.is(
    withoutCookies('_ga=1;\tsession=abc', ignored),
    '\tsession=abc',
    'a tab before a name stays: ctx.cookies.get did not read it, nor does it now',
  );
});
