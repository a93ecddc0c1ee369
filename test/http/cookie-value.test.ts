/**
 * The reading a `cookie:NAME` key takes (src/http/cookies.ts): the
 * value Koa's `ctx.cookies.get` returns, or "ambiguous" (the request then
 * bypasses the cache) when the header names the cookie twice in any
 * spelling or another reader could find another value. Checked row by row,
 * and against the real `cookies` package over generated headers.
 */
import test from 'ava';
import Cookies from 'cookies';
import fc from 'fast-check';
import { ambiguousCookie, readCookie } from '../../src/http/cookies.ts';

/** What the `cookies` package (Koa's ctx.cookies) reads, unsigned. */
function koaReads(header: string | undefined, name: string): string | undefined {
  const request = { headers: header === undefined ? {} : { cookie: header } };
  return new Cookies(request as never, {} as never).get(name, { signed: false });
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
