/**
 * For tests of live streams: a streaming decoder of a response's coding,
 * and a bounded wait for what a client has decoded so far.
 */
import type { Transform } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import zlib from 'node:zlib';
import { zstdLib } from '../../src/http/codings.ts';

/** A decoder of `coding` as a stream. */
export function decoder(coding: string): Transform {
  if (coding === 'br') return zlib.createBrotliDecompress();
  if (coding === 'gzip') return zlib.createGunzip();
  if (coding === 'deflate') return zlib.createInflate();
  return new zstdLib!.zstd.DecompressStream();
}

/** Waits until `done()` holds, at most `ms`; true when it did. */
export async function within(ms: number, done: () => boolean): Promise<boolean> {
  const deadline = performance.now() + ms;
  while (!done()) {
    if (performance.now() > deadline) return false;
    await sleep(5);
  }
  return true;
}
