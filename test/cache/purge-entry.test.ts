/** The origin an entry carries for purges (flag bit 0 of the encoded entry), and the expiry a near cache reads. */
import test from 'ava';
import { decodeEntry, encodedExpiry, encodeEntry, type CacheEntry } from '../../src/cache/entry.ts';

const plain: CacheEntry = {
  status: 200,
  headers: { 'content-type': 'text/html' },
  body: Buffer.from('<p>hi'),
  created: 1_700_000_000_000,
  expires: 1_700_000_600_000,
};

test('an entry with an origin decodes with it; one without keeps the old layout', (t) => {
  const origin = { host: 'site.example:8080', path: '/a?b=1', tags: ['article:1', 'list'], since: 1_699_999_999_000 };
  const decoded = decodeEntry(encodeEntry({ ...plain, origin }));
  t.deepEqual(decoded?.origin, origin);
  t.deepEqual(decoded?.headers, plain.headers);
  t.is(decoded?.body.toString(), '<p>hi');
  const old = encodeEntry(plain);
  t.is(old.readUInt8(5), 0, 'no flag: readable by a version that knows no origin');
  t.is(decodeEntry(old)?.origin, undefined);
});

test('a flagged entry whose JSON is not [headers, origin] is a miss; a bad origin is refused when encoding', (t) => {
  const value = encodeEntry(plain);
  value.writeUInt8(1, 5);
  t.is(decodeEntry(value), undefined);
  const bad = { ...plain, origin: { host: 'h', path: '/', tags: [1], since: 0 } } as unknown as CacheEntry;
  t.throws(() => encodeEntry(bad), { instanceOf: TypeError, message: /origin must be/ });
});

test('encodedExpiry reads the expiry of an encoded entry and nothing else', (t) => {
  t.is(encodedExpiry(encodeEntry(plain)), plain.expires);
  t.is(encodedExpiry(Buffer.from('not an entry, but long enough to be read as one')), undefined);
  t.is(encodedExpiry('text'), undefined);
});
