/**
 * Compressing one body: br, gzip and deflate with node:zlib, zstd with zstd-napi.
 *
 * Small bodies are compressed synchronously: a hop to the libuv threadpool
 * costs more than the work itself. Large bodies must not stall the event
 * loop, so br, gzip and deflate go to the threadpool, and zstd (zstd-napi has no
 * asynchronous one-shot call) is fed to a streaming context in slices with a
 * turn of the event loop between slices. Where the limits come from: see
 * {@link syncLimit} and `bench/compress-threshold.bench.ts`.
 */
import zlib from 'node:zlib';
import { zstdLib, type ZstdBinding, type ZstdModule } from '../http/codings.ts';
import type { Coding } from '../http/negotiate.ts';

/**
 * The largest body, in bytes, compressed synchronously on the event loop.
 *
 * A synchronous call holds every other request up for its whole duration,
 * so the budget is about 1 ms per call: each limit is the largest size that
 * `bench/compress-threshold.bench.ts` measured within it at the default
 * level. Below these sizes the asynchronous path only adds its fixed cost
 * (the threadpool hop, or zstd's slicing); above them its fixed cost is
 * small beside the work it keeps off the event loop. The figures:
 * docs/decisions/0007-compression-sync-below-a-size.md.
 */
export const syncLimit: Readonly<Record<Coding, number>> = {
  br: 64 * 1024,
  gzip: 32 * 1024,
  // deflate is gzip's compressor without its header and trailer
  deflate: 32 * 1024,
  zstd: 256 * 1024,
};

/**
 * Input per zstd slice: well under a millisecond of blocking
 * (docs/decisions/0007-compression-sync-below-a-size.md).
 */
const zstdSlice = 128 * 1024;

/** How a body was compressed, for the debug log. */
export type CompressMode = 'sync' | 'threadpool' | 'sliced';

/** The compressed bytes and how they were made. */
export interface Compressed {
  bytes: Buffer;
  mode: CompressMode;
}

function brotliParams(level: number, size: number): zlib.BrotliOptions {
  return { params: { [zlib.constants.BROTLI_PARAM_QUALITY]: level, [zlib.constants.BROTLI_PARAM_SIZE_HINT]: size } };
}

// Larger output chunks than zlib's 16 KiB default mean fewer threadpool round trips for a big body.
const asyncChunk = 256 * 1024;

function zlibAsync(body: Buffer, coding: 'br' | 'gzip' | 'deflate', level: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const done = (error: Error | null, result: Buffer): void => (error ? reject(error) : resolve(result));
    if (coding === 'br')
      zlib.brotliCompress(body, { ...brotliParams(level, body.length), chunkSize: asyncChunk }, done);
    else if (coding === 'gzip') zlib.gzip(body, { level, chunkSize: asyncChunk }, done);
    else zlib.deflate(body, { level, chunkSize: asyncChunk }, done);
  });
}

// One reusable context per level: creating a zstd context costs more than compressing a small page.
const zstdCompressors = new Map<number, InstanceType<ZstdModule['Compressor']>>();
function zstdCompressor(lib: ZstdModule, level: number): InstanceType<ZstdModule['Compressor']> {
  let compressor = zstdCompressors.get(level);
  if (!compressor) {
    compressor = new lib.Compressor();
    compressor.setParameters({ compressionLevel: level });
    zstdCompressors.set(level, compressor);
  }
  return compressor;
}

const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

async function zstdSliced(lib: ZstdBinding, body: Buffer, level: number): Promise<Buffer> {
  const cctx = new lib.CCtx();
  cctx.setParameter(lib.CParameter.compressionLevel, level);
  cctx.setPledgedSrcSize(body.length);
  const out = Buffer.allocUnsafe(lib.compressBound(body.length));
  let written = 0;
  for (let offset = 0; offset < body.length; offset += zstdSlice) {
    let slice = body.subarray(offset, Math.min(body.length, offset + zstdSlice));
    const last = offset + zstdSlice >= body.length;
    const directive = last ? lib.EndDirective.end : lib.EndDirective.continue;
    for (;;) {
      const [remaining, produced, consumed] = cctx.compressStream2(out.subarray(written), slice, directive);
      written += produced;
      slice = slice.subarray(consumed);
      if (slice.length === 0 && (!last || remaining === 0)) break;
    }
    if (!last) await nextTurn();
  }
  return out.subarray(0, written);
}

/**
 * Compresses `body` with `coding` at `level` in the given mode: `sync` on the
 * event loop, or `async` (threadpool for br and gzip, slices for zstd).
 * {@link compress} picks the mode; benches call this to compare them.
 */
export async function compressIn(
  mode: 'sync' | 'async',
  body: Buffer,
  coding: Coding,
  level: number,
): Promise<Compressed> {
  const { bytes, mode: made } = await compressWith(mode, body, coding, level);
  return { bytes: exact(bytes), mode: made };
}

/**
 * The bytes in a Buffer of their own when they are a small view of a larger
 * one. zlib hands back a view of its output chunk (16 KiB sync, the 256 KiB
 * `asyncChunk` on the thread pool): kept in the representation memo, which
 * counts the view's length, a 9 KB page would hold 256 KiB, and the memo's
 * bound in bytes would not bound memory. The copy is cheap beside the
 * compression it keeps (docs/decisions/0007-compression-sync-below-a-size.md).
 */
function exact(bytes: Buffer): Buffer {
  return bytes.byteLength < bytes.buffer.byteLength / 2 ? Buffer.from(bytes) : bytes;
}

async function compressWith(mode: 'sync' | 'async', body: Buffer, coding: Coding, level: number): Promise<Compressed> {
  const sync = mode === 'sync';
  switch (coding) {
    case 'br':
      return sync
        ? { bytes: zlib.brotliCompressSync(body, brotliParams(level, body.length)), mode: 'sync' }
        : { bytes: await zlibAsync(body, 'br', level), mode: 'threadpool' };
    case 'gzip':
      return sync
        ? { bytes: zlib.gzipSync(body, { level }), mode: 'sync' }
        : { bytes: await zlibAsync(body, 'gzip', level), mode: 'threadpool' };
    case 'deflate':
      return sync
        ? { bytes: zlib.deflateSync(body, { level }), mode: 'sync' }
        : { bytes: await zlibAsync(body, 'deflate', level), mode: 'threadpool' };
    case 'zstd': {
      if (!zstdLib) throw new Error('zstd-napi is not available');
      return sync
        ? { bytes: zstdCompressor(zstdLib.zstd, level).compress(body), mode: 'sync' }
        : { bytes: await zstdSliced(zstdLib.binding, body, level), mode: 'sliced' };
    }
  }
}

/**
 * Compresses `body` with `coding` at `level`, synchronously when it is small
 * (see {@link syncLimit}), otherwise without blocking the event loop.
 *
 * @param body - the uncompressed bytes
 * @param coding - br, zstd, gzip or deflate
 * @param level - within {@link levelRange} for the coding
 * @returns the compressed bytes and how they were made
 * @throws Error when zstd is asked for but zstd-napi did not load
 */
export function compress(body: Buffer, coding: Coding, level: number): Promise<Compressed> {
  return compressIn(body.length <= syncLimit[coding] ? 'sync' : 'async', body, coding, level);
}
