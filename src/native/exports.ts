/**
 * The public md5, Md5 and squashHtml, and the internal SquashStream: the
 * native ones when the addon loaded, else their TypeScript twins (same names,
 * signatures and bytes).
 */
import { core } from './core.ts';
import type { BinaryLike, HtmlSquashStreamConstructor, Md5Hasher, SquashHtml } from './types.ts';

/**
 * The MD5 digest of `data` as lowercase hex, identical to
 * `crypto.createHash('md5').update(data).digest('hex')`.
 *
 * @param data - a Buffer, TypedArray, DataView, or a string hashed as UTF-8
 * @returns 32 lowercase hex characters
 * @throws TypeError naming `data` when it is none of these
 * @example md5('hello') // '5d41402abc4b2a76b9719d911017c592'
 */
export const md5: (data: BinaryLike) => string = core.md5;

/**
 * Streaming MD5.
 *
 * @example
 * const hash = new Md5().update(head).update(body).digest('hex');
 */
export const Md5: new () => Md5Hasher = core.Md5;

/**
 * Squashes the white space of an HTML document: bytes in, bytes out,
 * never longer, idempotent; `pre`, `textarea`, `script`, `style` and quoted
 * attribute values are copied byte for byte.
 *
 * @param input - the HTML as a Buffer, another TypedArray or a DataView, or a string encoded as UTF-8
 * @param options - `level` (0 copy, 1 or 2 squash; default 1), `rewriteLinks` with `host`, `path` and `scheme`
 * @returns a new Buffer
 * @throws TypeError naming `input` or the bad option
 * @example squashHtml('<p>\n  hello   world\n</p>') // <Buffer '<p>\nhello world\n</p>'>
 */
export const squashHtml: SquashHtml = core.squashHtml;

/**
 * The squasher over a body that comes in pieces (internal: the stream path's
 * squashing uses it). The chunks fed, cut anywhere, give the bytes
 * {@link squashHtml} gives the whole body; what a chunk decides comes back
 * from its `feed`, the rest from a later one or `finish`.
 *
 * @example
 * const stream = new SquashStream({ level: 1 });
 * Buffer.concat([stream.feed('<p>  a'), stream.feed('  </p>\n'), stream.finish()]); // '<p> a </p>'
 */
export const SquashStream: HtmlSquashStreamConstructor = core.SquashStream;
