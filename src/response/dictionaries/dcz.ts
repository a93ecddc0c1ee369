/**
 * The `dcz` content coding (RFC 9842 4.2, "Dictionary-Compressed
 * Zstandard"): a zstd skippable frame header of 8 bytes whose payload is the
 * 32-byte SHA-256 of the dictionary, then a zstd frame compressed with the
 * dictionary as raw content.
 *
 * zstd-napi loads a dictionary with `ZSTD_CCtx_loadDictionary`, which reads
 * bytes starting with the zstd dictionary magic as a trained dictionary and
 * anything else as raw content; browsers always take raw content, so bytes
 * starting with that magic are never offered (see {@link usableAsDictionary}).
 */
import { createRequire } from 'node:module';

type ZstdModule = typeof import('zstd-napi');
type Compressor = InstanceType<ZstdModule['Compressor']>;

const require = createRequire(import.meta.url);

function loadZstd(): ZstdModule | undefined {
  try {
    return require('zstd-napi') as ZstdModule;
  } catch {
    return undefined;
  }
}
const zstd = loadZstd();

/** True when dcz can be produced in this process (zstd-napi loads). */
export const dczAvailable = zstd !== undefined;

/** The skippable frame header of a dcz body: magic 0x184D2A5E, then the payload length 32, little-endian. */
export const dczHeader: Buffer = Buffer.from([0x5e, 0x2a, 0x4d, 0x18, 0x20, 0x00, 0x00, 0x00]);

/** The first four bytes of a trained zstd dictionary (0xEC30A437, little-endian). */
const trainedMagic = Buffer.from([0x37, 0xa4, 0x30, 0xec]);

/**
 * True when `bytes` can serve as a raw-content dictionary here: at least 8
 * bytes (zstd ignores shorter ones) and not starting with the trained
 * dictionary magic (which zstd-napi would read differently from a browser).
 */
export function usableAsDictionary(bytes: Buffer): boolean {
  return bytes.length >= 8 && !bytes.subarray(0, 4).equals(trainedMagic);
}

/**
 * The window, as a power of two, that spans the dictionary and the body, so
 * every match into the dictionary is in reach; 2^10 at least, 2^23 (8 MiB,
 * what RFC 9842 lets a client refuse beyond) at most.
 */
export function windowLogFor(span: number): number {
  return Math.min(23, Math.max(10, Math.ceil(Math.log2(Math.max(1, span)))));
}

// A compressor with a dictionary loaded is reused: loading a dictionary costs about as much as compressing a page.
const compressors = new Map<string, Compressor>();
const compressorsMax = 16;

function compressorFor(hash: string, dictionary: Buffer, level: number, windowLog: number): Compressor {
  const key = `${hash}\0${level}\0${windowLog}`;
  let compressor = compressors.get(key);
  if (compressor !== undefined) {
    // Most recently used last, so the oldest is the one dropped.
    compressors.delete(key);
    compressors.set(key, compressor);
    return compressor;
  }
  compressor = new zstd!.Compressor();
  compressor.setParameters({ compressionLevel: level, windowLog, checksumFlag: false });
  compressor.loadDictionary(dictionary);
  if (compressors.size >= compressorsMax) compressors.delete(compressors.keys().next().value!);
  compressors.set(key, compressor);
  return compressor;
}

/**
 * The dcz body of `body` compressed with `dictionary`.
 *
 * @param body - the bytes the client is to decode
 * @param dictionary - the dictionary's bytes, exactly as the client holds them
 * @param hash - the dictionary's SHA-256 as 64 hex digits
 * @param level - the zstd level
 * @param bodyLimit - the largest body this dictionary's rule encodes (sizes the window)
 * @throws Error when zstd-napi is not available (check {@link dczAvailable})
 */
export function dczEncode(body: Buffer, dictionary: Buffer, hash: string, level: number, bodyLimit: number): Buffer {
  if (zstd === undefined) throw new Error('zstd-napi is not available');
  const windowLog = windowLogFor(dictionary.length + bodyLimit);
  const frame = compressorFor(hash, dictionary, level, windowLog).compress(body);
  return Buffer.concat([dczHeader, Buffer.from(hash, 'hex'), frame]);
}
