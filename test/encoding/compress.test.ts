/**
 * The compressed bytes as compress() hands them to the representation memo:
 * the same bytes in every mode, and in a Buffer of their own, so the memo's
 * bound in bytes bounds the memory it holds.
 */
import { gunzipSync, brotliDecompressSync } from 'node:zlib';
import test from 'ava';
import { compressIn } from '../../src/encoding/compress.ts';
import { htmlPage } from '../helpers/serve.ts';

const page = Buffer.from(htmlPage(50 * 1024, 3)); // about 10 KB compressed: less than one zlib output chunk

for (const mode of ['sync', 'async'] as const) {
  for (const coding of ['gzip', 'br'] as const) {
    test(`${coding} ${mode}: the bytes decompress to the body and own their memory`, async (t) => {
      const { bytes } = await compressIn(mode, page, coding, coding === 'br' ? 4 : 6);
      t.true(bytes.length > 4096, 'large enough not to come from the shared pool');
      t.true(
        bytes.buffer.byteLength <= 2 * bytes.length,
        `a ${bytes.length}-byte result holds ${bytes.buffer.byteLength} bytes`,
      );
      t.true((coding === 'gzip' ? gunzipSync(bytes) : brotliDecompressSync(bytes)).equals(page));
    });
  }
}
