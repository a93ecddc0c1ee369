/**
 * squashHtml's edges: which inputs it takes (and how it reads their bytes),
 * how it refuses bad arguments (the same coded errors, word for word, native
 * and twin), level 0, results that share nothing with the input, sizes across
 * the binding's buffer strategies, and worker threads.
 */
import test from 'ava';
import { Worker } from 'node:worker_threads';
import { addon, packageRoot } from '../../../src/native/binding.ts';
import { impls } from '../../helpers/impls.ts';
import { caught } from '../../helpers/caught.ts';
import type { CoreImplementation } from '../../../src/native/types.ts';

type Squash = (input: unknown, options?: unknown) => Buffer;
const call = (impl: CoreImplementation): Squash => impl.squashHtml as unknown as Squash;

const notInput: Array<[string, unknown, string]> = [
  ['undefined', undefined, 'undefined'],
  ['null', null, 'null'],
  ['a number', 42, 'the number 42'],
  ['a boolean', true, 'type boolean'],
  ['an array', [60, 112, 62], 'type object'],
  ['an ArrayBuffer', new ArrayBuffer(4), 'type object'],
  ['a plain object', { length: 1 }, 'type object'],
  ['a symbol', Symbol('x'), 'type symbol'],
  ['a bigint', 1n, 'type bigint'],
  ['a function', () => '<p>', 'type function'],
];

const badOptions: Array<[string, unknown, string, string, string]> = [
  // [what, options, error class, code, message]
  [
    'null options',
    null,
    'TypeError',
    'ERR_INVALID_ARG_TYPE',
    'The "options" argument must be an object or undefined (received null)',
  ],
  [
    'a string for options',
    'fast',
    'TypeError',
    'ERR_INVALID_ARG_TYPE',
    `The "options" argument must be an object or undefined (received the string 'fast')`,
  ],
  [
    'a function for options',
    () => 1,
    'TypeError',
    'ERR_INVALID_ARG_TYPE',
    'The "options" argument must be an object or undefined (received type function)',
  ],
  [
    'a string level',
    { level: '1' },
    'TypeError',
    'ERR_INVALID_ARG_TYPE',
    `The "options.level" property must be 0, 1 or 2 (received the string '1')`,
  ],
  [
    'null level',
    { level: null },
    'TypeError',
    'ERR_INVALID_ARG_TYPE',
    'The "options.level" property must be 0, 1 or 2 (received null)',
  ],
  [
    'level 3',
    { level: 3 },
    'RangeError',
    'ERR_OUT_OF_RANGE',
    'The "options.level" property must be 0, 1 or 2 (received the number 3)',
  ],
  [
    'level -1',
    { level: -1 },
    'RangeError',
    'ERR_OUT_OF_RANGE',
    'The "options.level" property must be 0, 1 or 2 (received the number -1)',
  ],
  [
    'level 1.5',
    { level: 1.5 },
    'RangeError',
    'ERR_OUT_OF_RANGE',
    'The "options.level" property must be 0, 1 or 2 (received the number 1.5)',
  ],
  [
    'level NaN',
    { level: Number.NaN },
    'RangeError',
    'ERR_OUT_OF_RANGE',
    'The "options.level" property must be 0, 1 or 2 (received the number NaN)',
  ],
  [
    'level Infinity',
    { level: Infinity },
    'RangeError',
    'ERR_OUT_OF_RANGE',
    'The "options.level" property must be 0, 1 or 2 (received the number Infinity)',
  ],
  [
    'a number for rewriteLinks',
    { rewriteLinks: 1 },
    'TypeError',
    'ERR_INVALID_ARG_TYPE',
    'The "options.rewriteLinks" property must be a boolean or undefined (received the number 1)',
  ],
  [
    'a number for host',
    { host: 80 },
    'TypeError',
    'ERR_INVALID_ARG_TYPE',
    'The "options.host" property must be a string or undefined (received the number 80)',
  ],
  [
    'null path',
    { path: null },
    'TypeError',
    'ERR_INVALID_ARG_TYPE',
    'The "options.path" property must be a string or undefined (received null)',
  ],
  [
    'an object for path',
    { path: {} },
    'TypeError',
    'ERR_INVALID_ARG_TYPE',
    'The "options.path" property must be a string or undefined (received type object)',
  ],
  [
    'a boolean for scheme',
    { scheme: true },
    'TypeError',
    'ERR_INVALID_ARG_TYPE',
    "The \"options.scheme\" property must be 'http', 'https' or undefined (received type boolean)",
  ],
  [
    'a scheme other than http and https',
    { scheme: 'ftp' },
    'TypeError',
    'ERR_INVALID_ARG_VALUE',
    "The \"options.scheme\" property must be 'http', 'https' or undefined (received the string 'ftp')",
  ],
  [
    'an upper-case scheme',
    { scheme: 'HTTPS' },
    'TypeError',
    'ERR_INVALID_ARG_VALUE',
    "The \"options.scheme\" property must be 'http', 'https' or undefined (received the string 'HTTPS')",
  ],
];

const page = '<ul>\n  <li>a</li>\n  <li>b  c</li>\n</ul>\n';
const squashed = '<ul><li>a</li>\n<li>b c</li></ul>';

for (const [name, impl] of impls) {
  const squash = call(impl);

  test(`${name}: a value that is neither bytes nor a string throws a TypeError naming "input"`, (t) => {
    for (const [what, value, received] of notInput) {
      t.throws(
        () => squash(value),
        {
          instanceOf: TypeError,
          code: 'ERR_INVALID_ARG_TYPE',
          message: `The "input" argument must be a string, Buffer, TypedArray or DataView (received ${received})`,
        },
        what,
      );
    }
  });

  test(`${name}: invalid options throw a coded error naming the option`, (t) => {
    for (const [what, options, kind, code, message] of badOptions) {
      const error = caught(() => squash(page, options));
      t.is(error.constructor.name, kind, `${what}: ${kind}`);
      t.is(error.code, code, `${what}: code`);
      t.is(error.message, message, `${what}: message`);
    }
  });

  test(`${name}: the input is checked before the options`, (t) => {
    t.throws(() => squash(42, { level: 9 }), { instanceOf: TypeError, message: /"input"/ });
  });

  test(`${name}: undefined options and undefined option values mean the defaults; unknown keys are ignored`, (t) => {
    const expected = Buffer.from(squashed);
    t.true(squash(page).equals(expected), 'no options');
    t.true(squash(page, undefined).equals(expected), 'undefined options');
    t.true(squash(page, {}).equals(expected), 'empty options');
    t.true(
      squash(page, {
        level: undefined,
        rewriteLinks: undefined,
        host: undefined,
        path: undefined,
        scheme: undefined,
      }).equals(expected),
      'undefined values',
    );
    t.true(
      squash(page, { level: -0, minifyCss: true }).equals(Buffer.from(page)),
      'level -0 is level 0; unknown keys ignored',
    );
    t.true(squash(page, []).equals(expected), 'an array is an object with no options set');
  });

  test(`${name}: options are read once each, in the order level, rewriteLinks, host, path, scheme`, (t) => {
    const reads: string[] = [];
    const options = {};
    for (const [key, value] of [
      ['level', 1],
      ['rewriteLinks', true],
      ['host', 'h'],
      ['path', '/x'],
      ['scheme', 'http'],
      ['other', 1],
    ] as const) {
      Object.defineProperty(options, key, { get: () => (reads.push(key), value), enumerable: true });
    }
    const out = squash('<a href="http://h/x?y">', options);
    t.deepEqual(reads, ['level', 'rewriteLinks', 'host', 'path', 'scheme']);
    t.is(out.toString(), '<a href="?y">', 'the options read through getters are used');
  });

  test(`${name}: an error thrown by an options getter comes through unchanged`, (t) => {
    const boom = new Error('getter failed');
    const options = {
      get level() {
        throw boom;
      },
    };
    t.is(
      caught(() => squash(page, options)),
      boom,
    );
  });

  test(`${name}: a string is squashed as its UTF-8 bytes, lone surrogates as U+FFFD`, (t) => {
    t.true(squash('<p>  é  😀  </p>').equals(Buffer.from('<p> é 😀 </p>')), 'UTF-8');
    const lone = 'a  \ud800  b';
    t.true(squash(lone).equals(Buffer.from('a \ufffd b')), 'a lone surrogate is EF BF BD, as Buffer.from writes it');
  });

  test(`${name}: typed arrays and DataViews are squashed by their viewed bytes only`, (t) => {
    const backing = Buffer.from(`XXXX${page}YYYY`);
    const view = new Uint8Array(backing.buffer, backing.byteOffset + 4, page.length);
    t.is(squash(view).toString(), squashed, 'Uint8Array view with an offset');
    t.is(
      squash(new DataView(backing.buffer, backing.byteOffset + 4, page.length)).toString(),
      squashed,
      'DataView with an offset',
    );
    const even = Buffer.from('<b>  x  </b>  ');
    t.is(
      squash(new Uint16Array(even.buffer.slice(even.byteOffset, even.byteOffset + even.length))).toString(),
      '<b> x </b> ',
      'Uint16Array',
    );
    const eight = Buffer.from('<i>  y  </i>  \n\n  z     ');
    t.is(eight.length % 8, 0, 'the sample fills whole 8-byte elements');
    const f64 = new Float64Array(eight.buffer.slice(eight.byteOffset, eight.byteOffset + eight.length));
    t.is(squash(f64).toString(), '<i> y </i>\nz ', 'Float64Array');
    const slice = Buffer.from(`ab${page}cd`).subarray(2, 2 + page.length);
    t.is(squash(slice).toString(), squashed, 'a Buffer slice');
  });

  test(`${name}: a view whose byteLength is redefined on the instance is read by its real length`, (t) => {
    const view = Buffer.from('<p>  x  </p>');
    Object.defineProperty(view, 'byteLength', { value: 1 << 20 });
    Object.defineProperty(view, 'length', { value: 1 << 20 });
    t.is(squash(view).toString(), '<p> x </p>');
  });

  test(`${name}: the result is a new Buffer that shares no memory with the input`, (t) => {
    for (const level of [0, 1]) {
      const input = Buffer.from('<p>abc</p>');
      const out = squash(input, { level });
      t.true(Buffer.isBuffer(out), 'a Buffer');
      t.not(out, input, 'not the same object');
      t.true(out.equals(input), 'nothing to squash: same bytes');
      out[1] = 0x21;
      t.is(input.toString(), '<p>abc</p>', `level ${level}: writing to the result leaves the input alone`);
    }
    t.is(squash(Buffer.alloc(0)).length, 0, 'empty in, empty out');
    t.is(squash('').length, 0, 'empty string in, empty out');
  });

  test(`${name}: inputs of every size the binding treats differently squash alike (stack, scratch, over 8 MiB)`, (t) => {
    const unit = Buffer.from('<div>\n  <p>  Words   and <b>more</b>  </p>\n</div>\n');
    const expectedUnit = '<div><p> Words and <b>more</b> </p></div>';
    for (const size of [15, 100, 16 * 1024 - 7, 16 * 1024 + 7, 200_000, 9 * 1024 * 1024]) {
      const count = Math.ceil(size / unit.length);
      const input = Buffer.concat(Array.from({ length: count }, () => unit));
      const out = squash(input);
      t.is(out.length, expectedUnit.length * count, `${input.length} bytes: length`);
      const head = Math.min(count, 2);
      t.is(
        out.subarray(0, expectedUnit.length * head).toString(),
        expectedUnit.repeat(head),
        `${input.length} bytes: start`,
      );
      t.is(out.subarray(out.length - expectedUnit.length).toString(), expectedUnit, `${input.length} bytes: end`);
    }
  });

  test(`${name}: consecutive results are independent (no reuse of a previous result's memory)`, (t) => {
    const a = squash(Buffer.from(`${'<p>  a  </p>\n'.repeat(5000)}`));
    const copy = Buffer.from(a);
    const b = squash(Buffer.from(`${'<li>  b  </li>\n'.repeat(5000)}`));
    t.true(a.equals(copy), 'the first result is unchanged by the second call');
    t.false(a.equals(b));
  });
}

const withAddon = addon ? test : test.skip;

withAddon('the native squasher works in worker threads, each with its own scratch memory', async (t) => {
  const source = `
const { parentPort, workerData } = require('node:worker_threads');
const addon = require(require.resolve('node-gyp-build', { paths: [workerData.root] }))(workerData.root);
const big = Buffer.from('<ul>\\n  <li>x  y</li>\\n</ul>\\n'.repeat(4000));
const out = addon.squashHtml(big);
parentPort.postMessage({ small: addon.squashHtml('<p>  a  </p>\\n<div>').toString(), length: out.length, head: out.subarray(0, 40).toString() });
`;
  const run = () =>
    new Promise<{ small: string; length: number; head: string }>((resolve, reject) => {
      const worker = new Worker(source, { eval: true, workerData: { root: packageRoot } });
      worker.once(
        'message',
        (message: { small: string; length: number; head: string }) =>
          void worker.terminate().then(() => resolve(message)),
      );
      worker.once('error', reject);
    });
  const results = await Promise.all([run(), run(), run()]);
  for (const result of results) {
    t.is(result.small, '<p> a </p><div>');
    t.is(result.length, '<ul><li>x y</li></ul>'.length * 4000);
    t.is(result.head, '<ul><li>x y</li></ul><ul><li>x y</li></ul>'.slice(0, 40));
  }
  t.is(addon!.squashHtml('<p>  a  </p>').toString(), '<p> a </p>', 'the main thread still squashes');
});
