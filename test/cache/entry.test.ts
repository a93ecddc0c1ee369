import test from 'ava';
import fc from 'fast-check';
import { Buffer } from 'node:buffer';
import { decodeEntry, encodeEntry, isFresh, remainingMs, type CacheEntry } from '../../src/cache/entry.ts';

const now = Date.UTC(2026, 0, 1);

function entry(overrides: Partial<CacheEntry> = {}): CacheEntry {
  return {
    status: 200,
    headers: { 'content-type': 'text/html; charset=utf-8', link: ['</a.css>; rel=preload', '</b.js>; rel=preload'] },
    body: Buffer.from('<!doctype html><p>héllo, wörld ✓</p>'),
    created: now,
    expires: now + 600_000,
    staleWhileRevalidate: 30_000,
    staleIfError: 3_600_000,
    ...overrides,
  };
}

/** Keyv's serialiser for a Buffer, as @keyv/serialize writes it. */
function keyvSerialise(value: Buffer): string {
  return JSON.stringify(`:base64:${value.toString('base64')}`);
}

test('an entry survives encode then decode: status, times, headers (arrays, UTF-8) and body bytes', (t) => {
  const original = entry({
    status: 203,
    headers: { 'x-ünïcode': 'ça va — 日本語 🚀', 'set-cookie': ['a=1', 'b=2'], empty: '', list: [] },
  });
  const decoded = decodeEntry(encodeEntry(original));
  t.deepEqual(decoded, original, 'every field comes back equal');
  t.true(Buffer.isBuffer(decoded?.body), 'the body is a Buffer');
});

test('any headers, body, status and times round-trip (property, fixed seed)', (t) => {
  const headerValue = fc.oneof(
    fc.string({ unit: 'binary' }),
    fc.array(fc.string({ unit: 'binary' }), { maxLength: 4 }),
  );
  const arbitraryEntry = fc.record({
    status: fc.integer({ min: 100, max: 999 }),
    headers: fc.dictionary(fc.string({ unit: 'binary', maxLength: 20 }), headerValue, { maxKeys: 8 }),
    body: fc.uint8Array({ maxLength: 2048 }).map((bytes) => Buffer.from(bytes)),
    created: fc.integer({ min: 0, max: 2 ** 48 }),
    expires: fc.double({ noNaN: true, noDefaultInfinity: true }),
    staleWhileRevalidate: fc.double({ min: 0, noNaN: true, noDefaultInfinity: true }),
    staleIfError: fc.double({ min: 0, noNaN: true, noDefaultInfinity: true }),
  });
  fc.assert(
    fc.property(arbitraryEntry, (original) => {
      t.deepEqual(decodeEntry(encodeEntry(original)), original);
    }),
    { seed: 20260105, numRuns: 300 },
  );
  t.pass();
});

test('an empty body and a 5 MiB body round-trip byte for byte', (t) => {
  t.deepEqual(
    decodeEntry(encodeEntry(entry({ body: Buffer.alloc(0) })))?.body,
    Buffer.alloc(0),
    'an empty body stays empty',
  );
  const big = Buffer.alloc(5 * 1024 * 1024);
  for (let i = 0; i < big.length; i++) big[i] = (i * 2654435761) >>> 24;
  const decoded = decodeEntry(encodeEntry(entry({ body: big })));
  t.is(decoded?.body.length, big.length, 'the 5 MiB body keeps its length');
  t.true(decoded?.body.equals(big), 'and its bytes');
});

test('encoding copies the body: writing into the original later does not change the stored value', (t) => {
  const body = Buffer.from('original');
  const value = encodeEntry(entry({ body }));
  body.write('changed!');
  t.is(decodeEntry(value)?.body.toString(), 'original');
});

test('a Uint8Array, an ArrayBuffer and a Buffer inside a larger pool decode alike', (t) => {
  const original = entry();
  const value = encodeEntry(original);
  t.deepEqual(decodeEntry(new Uint8Array(value)), original, 'a plain Uint8Array');
  t.deepEqual(
    decodeEntry(value.buffer.slice(value.byteOffset, value.byteOffset + value.length)),
    original,
    'an ArrayBuffer',
  );
  const pool = Buffer.concat([Buffer.from('junk before'), value, Buffer.from('junk after')]);
  const view = new Uint8Array(pool.buffer, pool.byteOffset + 11, value.length);
  t.deepEqual(decodeEntry(view), original, 'a view at an offset of a larger buffer');
});

test("the shapes a JSON round trip gives a Buffer decode: {type, data} and Keyv's :base64: string", (t) => {
  const original = entry();
  const value = encodeEntry(original);
  t.deepEqual(
    decodeEntry(JSON.parse(JSON.stringify(value))),
    original,
    'JSON.stringify(buffer) read back with JSON.parse',
  );
  t.deepEqual(
    decodeEntry(JSON.parse(keyvSerialise(value))),
    original,
    "Keyv's ':base64:' string read without its reviver",
  );
});

test('foreign values are a miss, never a throw', (t) => {
  const foreign: unknown[] = [
    undefined,
    null,
    0,
    42,
    true,
    '',
    'hello',
    ':base64:',
    ':base64:not base64!',
    Symbol('x'),
    () => 1,
    {},
    [],
    { type: 'Buffer' },
    { type: 'Buffer', data: [1, 2, 'x'] },
    { type: 'Buffer', data: [256] },
    { type: 'Other', data: [] },
    Buffer.alloc(0),
    Buffer.from('KBCE'),
    Buffer.alloc(64),
    new Map(),
    new Date(),
  ];
  for (const value of foreign)
    t.is(decodeEntry(value), undefined, `${String(typeof value)} ${JSON.stringify(value) ?? ''} is not an entry`);
});

test('a damaged value is a miss: wrong magic, future version, truncated, padded, bad header JSON, bad header types', (t) => {
  const good = encodeEntry(entry());
  const damage = (change: (copy: Buffer) => Buffer | void): Buffer => {
    const copy = Buffer.from(good);
    return change(copy) ?? copy;
  };
  const headersAt = 48;
  const json = JSON.stringify(entry().headers);
  const cases: Array<[string, Buffer]> = [
    ['wrong magic', damage((b) => void b.write('XBCE', 0, 'latin1'))],
    ['version 3', damage((b) => void b.writeUInt8(3, 4))],
    ['stale window negative', damage((b) => void b.writeDoubleLE(-1, 32))],
    ['stale-if-error NaN', damage((b) => void b.writeDoubleLE(Number.NaN, 40))],
    ['one byte short', good.subarray(0, good.length - 1)],
    ['only the fixed part', good.subarray(0, 48)],
    ['one byte extra', Buffer.concat([good, Buffer.from([0])])],
    ['headers length too large', damage((b) => void b.writeUInt32LE(json.length + 1, 24))],
    ['status 0', damage((b) => void b.writeUInt16LE(0, 6))],
    ['created NaN', damage((b) => void b.writeDoubleLE(Number.NaN, 8))],
    ['expires Infinity', damage((b) => void b.writeDoubleLE(Number.POSITIVE_INFINITY, 16))],
    ['header JSON broken', damage((b) => void b.write('!', headersAt, 'latin1'))],
  ];
  const withHeaders = (headersJson: string): Buffer => {
    const fixed = Buffer.from(good.subarray(0, 48));
    const jsonBytes = Buffer.from(headersJson);
    fixed.writeUInt32LE(jsonBytes.length, 24);
    fixed.writeUInt32LE(0, 28);
    return Buffer.concat([fixed, jsonBytes]);
  };
  t.truthy(decodeEntry(withHeaders('{"a":"b","c":["d"]}')), 'the hand-made control value decodes');
  cases.push(
    ['headers an array', withHeaders('["a"]')],
    ['headers null', withHeaders('null')],
    ['a number header', withHeaders('{"content-length":5}')],
  );
  cases.push(
    ['an array holding a number', withHeaders('{"link":["a",1]}')],
    ['a nested object', withHeaders('{"a":{"b":"c"}}')],
  );
  for (const [what, value] of cases) t.is(decodeEntry(value), undefined, `${what} reads as a miss`);
});

test('a version 1 value (before the stale windows) still reads, with windows of 0', (t) => {
  const v2 = encodeEntry(entry());
  const jsonAndBody = v2.subarray(48);
  const v1 = Buffer.concat([Buffer.from(v2.subarray(0, 32)), jsonAndBody]);
  v1.writeUInt8(1, 4);
  t.deepEqual(decodeEntry(v1), entry({ staleWhileRevalidate: 0, staleIfError: 0 }));
  t.is(decodeEntry(v1.subarray(0, v1.length - 1)), undefined, 'a truncated version 1 value is a miss');
});

test('random bytes and random mutations of a good value never throw (property, fixed seed)', (t) => {
  const good = encodeEntry(entry());
  fc.assert(
    fc.property(
      fc.uint8Array({ maxLength: 200 }),
      fc.nat(),
      fc.integer({ min: 0, max: 255 }),
      (random, position, byte) => {
        decodeEntry(random);
        const mutated = Buffer.from(good);
        mutated[position % mutated.length] = byte;
        const decoded = decodeEntry(mutated);
        // A mutation inside the body or a header string may still decode; it must then be a well-formed entry.
        if (decoded)
          t.true(
            Buffer.isBuffer(decoded.body) && typeof decoded.headers === 'object' && Number.isFinite(decoded.expires),
          );
      },
    ),
    { seed: 77, numRuns: 1000 },
  );
  t.pass();
});

test('a Keyv :base64: string that is not strict base64 is a miss, not a half-decoded value', (t) => {
  const value = encodeEntry(entry());
  const text = value.toString('base64');
  t.truthy(decodeEntry(`:base64:${text}`), 'the strict form decodes');
  t.is(decodeEntry(`:base64:${text.slice(0, 10)} ${text.slice(10)}`), undefined, 'a space inside is refused');
  t.is(decodeEntry(`:base64:${text.slice(0, -1)}`), undefined, 'a truncated string is refused');
});

test('encodeEntry refuses a bad entry with an error naming the field', (t) => {
  t.throws(() => encodeEntry(entry({ status: 99 })), { instanceOf: RangeError, message: /status.*got number 99/ });
  t.throws(() => encodeEntry(entry({ status: 200.5 })), { instanceOf: RangeError, message: /status/ });
  t.throws(() => encodeEntry(entry({ created: Number.NaN })), { instanceOf: TypeError, message: /created/ });
  t.throws(() => encodeEntry(entry({ expires: Number.POSITIVE_INFINITY })), {
    instanceOf: TypeError,
    message: /expires/,
  });
  t.throws(() => encodeEntry(entry({ body: 'text' as unknown as Buffer })), {
    instanceOf: TypeError,
    message: /body must be a Buffer, got the string "text"/,
  });
  t.throws(() => encodeEntry(entry({ headers: { 'content-length': 5 } as unknown as Record<string, string> })), {
    instanceOf: TypeError,
    message: /header 'content-length' must be a string or an array of strings, got number 5/,
  });
  t.throws(() => encodeEntry(entry({ headers: { link: ['a', 2] } as unknown as Record<string, string[]> })), {
    instanceOf: TypeError,
    message: /header 'link'/,
  });
  t.throws(() => encodeEntry(entry({ headers: null as unknown as Record<string, string> })), {
    instanceOf: TypeError,
    message: /headers must be an object, got null/,
  });
  t.throws(() => encodeEntry(null as unknown as CacheEntry), {
    instanceOf: TypeError,
    message: /entry must be an object/,
  });
});

test('a Uint8Array body is accepted and comes back as a Buffer', (t) => {
  const decoded = decodeEntry(encodeEntry(entry({ body: new Uint8Array([1, 2, 3]) as Buffer })));
  t.true(Buffer.isBuffer(decoded?.body));
  t.deepEqual([...decoded!.body], [1, 2, 3]);
});

test("freshness follows the entry's own expiry, whatever the store did", (t) => {
  const e = entry({ expires: now + 1000 });
  t.true(isFresh(e, now), 'fresh when built');
  t.true(isFresh(e, now + 999), 'fresh a millisecond before expiry');
  t.false(isFresh(e, now + 1000), 'stale at expiry');
  t.is(remainingMs(e, now + 250), 750);
  t.is(remainingMs(e, now + 5000), 0, 'never negative');
  t.true(isFresh(entry({ expires: Date.now() + 60_000 })), 'now defaults to the clock');
  t.false(isFresh(entry({ expires: Date.now() - 1 })), 'and an entry past its time is stale by the clock');
});
