/**
 * The TypeScript twin of the native MD5 (native/binding/md5.cc), built on
 * node:crypto: same exports, same argument checks, same error codes and
 * messages, so the md5 suite runs unchanged on both.
 */
import * as crypto from 'node:crypto';
import { describe, withCode } from './errors.ts';
import type { BinaryLike, Md5Hasher } from '../types.ts';

const DATA_EXPECTED = 'a string, Buffer, TypedArray or DataView';
const ENCODING_EXPECTED = "'hex', 'base64' or undefined";

function invalidArg(name: string, expected: string, received: unknown): TypeError {
  return withCode(
    new TypeError(`The "${name}" argument must be ${expected} (received ${describe(received)})`),
    'ERR_INVALID_ARG_TYPE',
  );
}

/** Checks `data` as the binding does; node:crypto would accept more (ArrayBuffer) or word it otherwise. */
function checkData(data: unknown): asserts data is BinaryLike {
  if (typeof data !== 'string' && !ArrayBuffer.isView(data)) throw invalidArg('data', DATA_EXPECTED, data);
}

// crypto.hash (Node >= 20.12) skips the Hash object; older 20.x fall back to createHash.
const hashOnce: (data: BinaryLike) => string =
  typeof crypto.hash === 'function'
    ? (data) => crypto.hash('md5', data, 'hex')
    : (data) => crypto.createHash('md5').update(data).digest('hex');

/**
 * The MD5 of `data`, as 32 lowercase hex digits.
 *
 * @param data - Bytes (a Buffer, any TypedArray or DataView, honouring its offset and length) or a string, hashed as UTF-8 with lone surrogates as U+FFFD.
 * @returns The digest in lowercase hex.
 * @throws TypeError with code `ERR_INVALID_ARG_TYPE` when `data` is neither bytes nor a string.
 * @example
 * md5('abc'); // '900150983cd24fb0d6963f7d28e17f72'
 */
export function md5(data: BinaryLike): string {
  checkData(data);
  return hashOnce(data);
}

/**
 * Streaming MD5: {@link Md5.update} any number of times, then {@link Md5.digest} once.
 *
 * @example
 * new Md5().update('ab').update(Buffer.from('c')).digest('hex'); // '900150983cd24fb0d6963f7d28e17f72'
 */
export class Md5 implements Md5Hasher {
  #hash: crypto.Hash = crypto.createHash('md5');
  #digested = false;

  // The twin of the binding's type tag: a method borrowed onto another object fails clearly.
  static #of(self: unknown, method: string): Md5 {
    if (typeof self === 'object' && self !== null && #hash in self) return self as Md5;
    throw withCode(new TypeError(`Md5.prototype.${method} called on an object that is not an Md5`), 'ERR_INVALID_THIS');
  }

  /**
   * Feeds more bytes.
   *
   * @param data - Bytes or a string (UTF-8).
   * @returns This hasher, for chaining.
   * @throws Error with code `KB_DIGEST_ALREADY_CALLED` after {@link Md5.digest}.
   * @throws TypeError with code `ERR_INVALID_ARG_TYPE` when `data` is neither bytes nor a string.
   */
  update(data: BinaryLike): this {
    const self = Md5.#of(this, 'update');
    if (self.#digested) {
      throw withCode(
        new Error('Md5.update() called after digest(): an Md5 digests once; create a new Md5'),
        'KB_DIGEST_ALREADY_CALLED',
      );
    }
    checkData(data);
    self.#hash.update(data);
    return this;
  }

  /**
   * Finishes the hash. Callable once.
   *
   * @param encoding - `'hex'` or `'base64'` for a string; omitted for the 16 raw bytes.
   * @returns The digest.
   * @throws Error with code `KB_DIGEST_ALREADY_CALLED` when called a second time.
   * @throws TypeError with code `ERR_INVALID_ARG_TYPE` for any other `encoding`.
   */
  digest(): Buffer;
  digest(encoding: 'hex' | 'base64'): string;
  digest(encoding?: 'hex' | 'base64'): Buffer | string {
    const self = Md5.#of(this, 'digest');
    if (encoding !== undefined && encoding !== 'hex' && encoding !== 'base64') {
      throw invalidArg('encoding', ENCODING_EXPECTED, encoding);
    }
    if (self.#digested) {
      throw withCode(
        new Error('Md5.digest() called twice: an Md5 digests once; create a new Md5'),
        'KB_DIGEST_ALREADY_CALLED',
      );
    }
    self.#digested = true;
    return encoding === undefined ? self.#hash.digest() : self.#hash.digest(encoding);
  }
}
