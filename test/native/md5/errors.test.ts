/**
 * Bad input to md5 and Md5 fails with a clear, coded error on both
 * implementations, and the native and twin messages are word for word equal.
 */
import test from 'ava';
import { createRequire } from 'node:module';
import { impls, native, twins } from '../../helpers/impls.ts';
import { caught } from '../../helpers/caught.ts';

const notBytes: Array<[string, unknown]> = [
  ['undefined', undefined],
  ['null', null],
  ['a number', 42],
  ['a boolean', true],
  ['a plain object', { length: 3 }],
  ['an array', [1, 2, 3]],
  ['an ArrayBuffer', new ArrayBuffer(8)],
  ['a symbol', Symbol('x')],
  ['a bigint', 10n],
  ['a function', () => 'abc'],
];

for (const [name, impl] of impls) {
  test(`${name}: a value that is neither bytes nor a string throws a TypeError naming "data"`, (t) => {
    for (const [what, value] of notBytes) {
      t.throws(
        () => impl.md5(value as string),
        { instanceOf: TypeError, code: 'ERR_INVALID_ARG_TYPE', message: /"data" argument/ },
        `md5 of ${what}`,
      );
      t.throws(
        () => new impl.Md5().update(value as string),
        { instanceOf: TypeError, code: 'ERR_INVALID_ARG_TYPE', message: /"data" argument/ },
        `update with ${what}`,
      );
    }
    t.throws(() => impl.md5(42 as unknown as string), {
      message: 'The "data" argument must be a string, Buffer, TypedArray or DataView (received the number 42)',
    });
  });

  test(`${name}: a failed update leaves the hasher usable`, (t) => {
    const hasher = new impl.Md5().update('ab');
    t.throws(() => hasher.update(null as unknown as string), { instanceOf: TypeError });
    t.is(
      hasher.update('c').digest('hex'),
      '900150983cd24fb0d6963f7d28e17f72',
      'the digest ignores the rejected update',
    );
  });

  test(`${name}: digest() twice throws KB_DIGEST_ALREADY_CALLED, and so does update after digest`, (t) => {
    const hasher = new impl.Md5().update('abc');
    t.is(hasher.digest('hex'), '900150983cd24fb0d6963f7d28e17f72');
    t.throws(() => hasher.digest(), {
      instanceOf: Error,
      code: 'KB_DIGEST_ALREADY_CALLED',
      message: /digest\(\) called twice/,
    });
    t.throws(() => hasher.digest('hex'), { code: 'KB_DIGEST_ALREADY_CALLED' });
    t.throws(() => hasher.update('more'), {
      code: 'KB_DIGEST_ALREADY_CALLED',
      message: /update\(\) called after digest\(\)/,
    });
  });

  test(`${name}: an unknown digest encoding throws a TypeError naming "encoding" and spends nothing`, (t) => {
    const hasher = new impl.Md5().update('abc');
    for (const encoding of ['latin1', 'HEX', 'buffer', 1, null, {}]) {
      t.throws(
        () => hasher.digest(encoding as 'hex'),
        { instanceOf: TypeError, code: 'ERR_INVALID_ARG_TYPE', message: /"encoding" argument/ },
        `encoding ${String(encoding)}`,
      );
    }
    t.is(hasher.digest('base64'), 'kAFQmDzST7DWlj99KOF/cg==', 'the hasher still digests once');
  });

  test(`${name}: a method borrowed onto a foreign object throws a TypeError`, (t) => {
    const { update, digest } = impl.Md5.prototype;
    const zstd = createRequire(import.meta.url)('zstd-napi/binding') as { CCtx: new () => object };
    // Another addon's wrapped object must not be read as an Md5's memory.
    const foreign = [{}, Object.create(impl.Md5.prototype), new zstd.CCtx(), undefined, 5];
    for (const self of foreign) {
      t.throws(() => update.call(self, 'x'), {
        instanceOf: TypeError,
        code: 'ERR_INVALID_THIS',
        message: 'Md5.prototype.update called on an object that is not an Md5',
      });
      t.throws(() => digest.call(self), {
        instanceOf: TypeError,
        code: 'ERR_INVALID_THIS',
        message: 'Md5.prototype.digest called on an object that is not an Md5',
      });
    }
  });

  test(`${name}: Md5 called without new throws a TypeError`, (t) => {
    t.throws(() => (impl.Md5 as unknown as () => unknown)(), { instanceOf: TypeError });
  });
}

const both = native ? test : test.skip;

both('native and twin errors carry the same class, code and message', (t) => {
  const pairs: Array<[string, (impl: typeof twins) => unknown]> = [
    ...notBytes.map(([what, value]): [string, (impl: typeof twins) => unknown] => [
      `md5(${what})`,
      (impl) => impl.md5(value as string),
    ]),
    ['update(string object)', (impl) => new impl.Md5().update(new String('x') as unknown as string)],
    [
      'digest twice',
      (impl) => {
        const h = new impl.Md5();
        h.digest();
        h.digest();
      },
    ],
    [
      'update after digest',
      (impl) => {
        const h = new impl.Md5();
        h.digest();
        h.update('x');
      },
    ],
    ["digest('utf8')", (impl) => new impl.Md5().digest('utf8' as 'hex')],
    ['borrowed update', (impl) => impl.Md5.prototype.update.call({}, 'x')],
  ];
  for (const [what, run] of pairs) {
    const fromNative = caught(() => run(native!));
    const fromTwin = caught(() => run(twins));
    t.is(fromNative.constructor, fromTwin.constructor, `${what}: same class`);
    t.is(fromNative.code, fromTwin.code, `${what}: same code`);
    t.is(fromNative.message, fromTwin.message, `${what}: same message`);
  }
});
