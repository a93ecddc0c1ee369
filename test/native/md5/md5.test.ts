/**
 * md5 and Md5 give node:crypto's digest for every input, on the native addon
 * and on the twin alike (bufferutil's use(native)/use(fallback)).
 */
import test from 'ava';
import fc from 'fast-check';
import { createHash } from 'node:crypto';
import { impls } from '../../helpers/impls.ts';

const MiB = 1 << 20;

function reference(data: Buffer | NodeJS.ArrayBufferView | string): Buffer {
  return createHash('md5').update(data).digest();
}

/** Deterministic bytes (xorshift32), so a failure reproduces. */
function bytes(size: number, seed = 0x9e3779b9): Buffer {
  const out = Buffer.allocUnsafe(size);
  let x = seed >>> 0 || 1;
  for (let i = 0; i < size; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    out[i] = x & 0xff;
  }
  return out;
}

/** Bytes as Buffer.from(string) encodes them: UTF-8 with lone surrogates as U+FFFD. */
function utf8(s: string): Buffer {
  return Buffer.from(s, 'utf8');
}

const typedArrayKinds = [
  Int8Array,
  Uint8Array,
  Uint8ClampedArray,
  Int16Array,
  Uint16Array,
  Int32Array,
  Uint32Array,
  Float32Array,
  Float64Array,
  BigInt64Array,
  BigUint64Array,
] as const;

for (const [name, impl] of impls) {
  test(`${name}: md5 and Md5 equal node:crypto at the padding boundaries and 1 MiB`, (t) => {
    for (const size of [0, 1, 55, 56, 63, 64, 65, 119, 120, 127, 128, 129, MiB]) {
      const data = bytes(size, size + 1);
      const expected = reference(data);
      t.is(impl.md5(data), expected.toString('hex'), `md5 of ${size} bytes`);
      t.deepEqual(new impl.Md5().update(data).digest(), expected, `Md5 digest() of ${size} bytes`);
      t.is(new impl.Md5().update(data).digest('hex'), expected.toString('hex'), `Md5 hex of ${size} bytes`);
      t.is(new impl.Md5().update(data).digest('base64'), expected.toString('base64'), `Md5 base64 of ${size} bytes`);
    }
  });

  test(`${name}: streaming over random split points equals one-shot and node:crypto`, (t) => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 700 }), fc.array(fc.nat(), { maxLength: 8 }), (array, cuts) => {
        const data = Buffer.from(array);
        const points = cuts.map((c) => c % (data.length + 1)).sort((a, b) => a - b);
        const hasher = new impl.Md5();
        let from = 0;
        for (const point of [...points, data.length]) {
          hasher.update(data.subarray(from, point));
          from = point;
        }
        const expected = reference(data).toString('hex');
        return hasher.digest('hex') === expected && impl.md5(data) === expected;
      }),
      { seed: 20260101, numRuns: 300 },
    );
    t.pass('every streamed digest equalled the one-shot and node:crypto digests');
  });

  test(`${name}: a 1 MiB input streamed in uneven pieces equals node:crypto`, (t) => {
    const data = bytes(MiB, 7);
    const hasher = new impl.Md5();
    for (let from = 0, step = 1; from < data.length; from += step, step = (step * 7 + 3) % 9001) {
      hasher.update(data.subarray(from, from + step));
    }
    t.is(hasher.digest('hex'), reference(data).toString('hex'), 'pieces of 1 to 9000 bytes hash like the whole');
  });

  test(`${name}: strings hash as UTF-8, emoji whole and lone surrogates as U+FFFD`, (t) => {
    const cases = [
      '',
      'abc',
      'é',
      '日本語',
      '😀',
      '👩‍👩‍👧',
      '\ud800',
      '\udc00',
      'x\ud83d',
      '\ude00x',
      '\ud83d\ude00\ud83d',
      'a'.repeat(1023),
      'é'.repeat(1024),
      '€'.repeat(1025),
      '😀'.repeat(600),
      '€'.repeat(1024) + '\ud800',
      '\udfff'.repeat(5000),
      'x'.repeat(MiB),
    ];
    for (const s of cases) {
      const expected = reference(utf8(s)).toString('hex');
      t.is(impl.md5(s), expected, `md5 of a ${s.length}-unit string`);
      t.is(new impl.Md5().update(s).digest('hex'), expected, `Md5 of a ${s.length}-unit string`);
    }
  });

  test(`${name}: any UTF-16 string, surrogates included, hashes as Buffer.from encodes it`, (t) => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 0, max: 0xffff }), { maxLength: 1500 }), (units) => {
        const s = String.fromCharCode(...units);
        return impl.md5(s) === reference(utf8(s)).toString('hex');
      }),
      { seed: 4242, numRuns: 300 },
    );
    t.pass('every generated string hashed as its UTF-8 bytes');
  });

  test(`${name}: every TypedArray kind and DataView is hashed over its own bytes only`, (t) => {
    const backing = new ArrayBuffer(4096);
    bytes(4096, 99).copy(new Uint8Array(backing));
    for (const Kind of typedArrayKinds) {
      const length = 37;
      const view = new Kind(backing, 8 * 3, length);
      const expected = reference(Buffer.from(backing, 8 * 3, length * Kind.BYTES_PER_ELEMENT)).toString('hex');
      t.is(impl.md5(view), expected, `md5 of a ${Kind.name} at offset 24`);
      t.is(new impl.Md5().update(view).digest('hex'), expected, `Md5 of a ${Kind.name} at offset 24`);
    }
    const dataView = new DataView(backing, 13, 501);
    const expected = reference(Buffer.from(backing, 13, 501)).toString('hex');
    t.is(impl.md5(dataView), expected, 'md5 of a DataView at offset 13');
    t.is(new impl.Md5().update(dataView).digest('hex'), expected, 'Md5 of a DataView at offset 13');
  });

  test(`${name}: a view whose byteLength property is redefined is hashed over its real bytes`, (t) => {
    const backing = new ArrayBuffer(1024);
    bytes(1024, 5).copy(new Uint8Array(backing));
    for (const view of [
      new Float64Array(backing, 8, 4),
      new Uint8Array(backing, 8, 32),
      new DataView(backing, 8, 32),
    ]) {
      Object.defineProperty(view, 'byteLength', { value: 1 << 30 });
      t.is(
        impl.md5(view),
        reference(Buffer.from(backing, 8, 32)).toString('hex'),
        `${view.constructor.name} is 32 bytes`,
      );
    }
  });

  test(`${name}: a small Buffer from the shared pool is hashed over its slice, not the pool`, (t) => {
    const pooled = Buffer.from('a small string lives in the pool');
    t.true(pooled.buffer.byteLength > pooled.length, 'the Buffer is a view into a larger pool');
    const expected = createHash('md5').update('a small string lives in the pool').digest('hex');
    t.is(impl.md5(pooled), expected);
    const sliced = pooled.subarray(2, 7);
    t.is(impl.md5(sliced), createHash('md5').update('small').digest('hex'), 'a subarray at offset 2');
    t.is(
      new impl.Md5().update(pooled.subarray(0, 2)).update(sliced).digest('hex'),
      createHash('md5').update('a small').digest('hex'),
    );
  });

  test(`${name}: update returns the hasher itself for chaining`, (t) => {
    const hasher = new impl.Md5();
    t.is(hasher.update('a'), hasher, 'update returns this');
    t.true(hasher instanceof impl.Md5, 'an instance of Md5');
    t.is(hasher.update('bc').digest('hex'), '900150983cd24fb0d6963f7d28e17f72');
  });
}
