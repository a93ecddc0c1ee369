/**
 * The `dcz` content coding (RFC 9842 4.2, "Dictionary-Compressed
 * Zstandard"): a zstd skippable frame header of 8 bytes whose payload is the
 * 32-byte SHA-256 of the dictionary, then a zstd frame compressed with the
 * dictionary as raw content.
 *
 * zstd reads a dictionary that starts with the zstd dictionary magic as a
 * trained dictionary and anything else as raw content; browsers always take
 * raw content, so bytes starting with that magic are never offered (see
 * {@link usableAsDictionary}).
 */
import { zstdLib, type ZstdBinding } from '../../http/codings.ts';
import { UpgradeThread } from '../upgrade-thread.ts';

const zstd = zstdLib?.binding;

/** True when dcz can be produced in this process (zstd-napi loads). */
export const dczAvailable = zstd !== undefined;

/** The skippable frame header of a dcz body: magic 0x184D2A5E, then the payload length 32, little-endian. */
export const dczHeader: Buffer = Buffer.from([0x5e, 0x2a, 0x4d, 0x18, 0x20, 0x00, 0x00, 0x00]);

/** The first four bytes of a trained zstd dictionary (0xEC30A437, little-endian). */
const trainedMagic = Buffer.from([0x37, 0xa4, 0x30, 0xec]);

/**
 * True when `bytes` can serve as a raw-content dictionary here: at least 8
 * bytes (zstd ignores shorter ones) and not starting with the trained
 * dictionary magic (which zstd would read differently from a browser).
 */
export function usableAsDictionary(bytes: Buffer): boolean {
  return bytes.length >= 8 && !bytes.subarray(0, 4).equals(trainedMagic);
}

/**
 * One context for every call (they are synchronous): creating a context,
 * and loading a dictionary into a new one, costs far more than
 * `ZSTD_compress_usingDict` on a warm context, dictionary load included
 * (docs/decisions/0032-compression-dictionaries.md).
 */
let context: InstanceType<ZstdBinding['CCtx']> | undefined;

/**
 * The dcz body of `body` compressed with `dictionary`.
 * `ZSTD_compress_usingDict` sizes the window from the level, the body and
 * the dictionary, so it spans both, and writes the content size.
 *
 * @param body - the bytes the client is to decode
 * @param dictionary - the dictionary's bytes, exactly as the client holds them
 * @param hash - the dictionary's SHA-256 as 64 hex digits
 * @param level - the zstd level
 * @throws Error when zstd-napi is not available (check {@link dczAvailable})
 */
export function dczEncode(body: Buffer, dictionary: Buffer, hash: string, level: number): Buffer {
  if (zstd === undefined) throw new Error('zstd-napi is not available');
  context ??= new zstd.CCtx();
  const out = Buffer.allocUnsafe(40 + zstd.compressBound(body.length));
  dczHeader.copy(out, 0);
  out.write(hash, 8, 'hex');
  const written = context.compressUsingDict(out.subarray(40), body, dictionary, level);
  // A copy of the exact length: the memo keeps it, and the bound can be far larger than the frame.
  return Buffer.from(out.subarray(0, 40 + written));
}

/**
 * Above this many bytes of body and dictionary together, dcz is made in a
 * worker thread: `ZSTD_compress_usingDict` is one synchronous call, short
 * below this size but long for pages of a few MiB, and any client can ask
 * for it on every request in a rule's scope
 * (docs/decisions/0043-large-bodies-leave-the-event-loop.md).
 */
export const dczThreadMin = 512 * 1024;

/** The thread large dcz bodies are made in, at normal priority: a request waits for it. */
let thread: UpgradeThread | undefined;

/**
 * {@link dczEncode}'s bytes, made off the event loop when body and dictionary
 * are large (see {@link dczThreadMin}), else in the same turn.
 *
 * @throws Error when zstd-napi is not available, or the thread fails
 */
export async function dczEncodeOffLoop(body: Buffer, dictionary: Buffer, hash: string, level: number): Promise<Buffer> {
  if (body.length + dictionary.length <= dczThreadMin) return dczEncode(body, dictionary, hash, level);
  if (zstd === undefined) throw new Error('zstd-napi is not available');
  thread ??= new UpgradeThread({ priority: 0, waitedFor: true });
  return thread.dcz(body, dictionary, hash, level);
}
