/**
 * The client side of RFC 9842 for tests: the `Available-Dictionary` value of
 * some bytes, and a dcz decoder built on zstd-napi (a second implementation
 * beside koa-buffer's encoder: it checks the header itself and decodes with
 * the dictionary as raw content).
 */
import { createHash } from 'node:crypto';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const zstd = require('zstd-napi') as typeof import('zstd-napi');

/** The SHA-256 of `bytes`. */
export const sha256 = (bytes: Buffer): Buffer => createHash('sha256').update(bytes).digest();

/** The `Available-Dictionary` header naming `dictionary`. */
export const availableHeader = (dictionary: Buffer): string => `:${sha256(dictionary).toString('base64')}:`;

/**
 * Decodes a dcz body with `dictionary`, checking the skippable-frame header
 * and that the hash it carries is the dictionary's.
 *
 * @throws Error when the header or the hash is wrong, or the frame does not decode
 */
export function decodeDcz(body: Buffer, dictionary: Buffer): Buffer {
  const magic = Buffer.from([0x5e, 0x2a, 0x4d, 0x18, 0x20, 0x00, 0x00, 0x00]);
  if (!body.subarray(0, 8).equals(magic)) throw new Error(`not a dcz header: ${body.subarray(0, 8).toString('hex')}`);
  if (!body.subarray(8, 40).equals(sha256(dictionary))) throw new Error('the dcz body names another dictionary');
  const decompressor = new zstd.Decompressor();
  decompressor.loadDictionary(dictionary);
  return decompressor.decompress(body.subarray(40));
}
