/**
 * Whole-body work on a large body, done a slice per turn of the event loop,
 * so that no single call holds other requests up for the whole body: the
 * UTF-8 of a string body, a copy, and an equality check. Each slice is sized
 * to keep a turn short (docs/decisions/0043-large-bodies-leave-the-event-loop.md);
 * bodies up to {@link largeBody} are done in one call, cheaper than the turns.
 */
import { largeBuffer } from './squash-off-loop.ts';

/** Bodies above this many bytes (or UTF-16 units) are worked on in slices. */
export const largeBody = 1024 * 1024;

/** Bytes copied or compared per turn. */
const byteSlice = 1024 * 1024;

/** UTF-16 units converted per turn (up to three bytes each). */
const unitSlice = 256 * 1024;

export const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** The end of the slice of `text` from `start`, moved back so as not to split a surrogate pair. */
function sliceEnd(text: string, start: number): number {
  const end = Math.min(text.length, start + unitSlice);
  if (end === text.length) return end;
  const last = text.charCodeAt(end - 1);
  return last >= 0xd800 && last <= 0xdbff ? end - 1 : end;
}

/**
 * The UTF-8 bytes of `text`, exactly as `Buffer.from(text)` gives them (a
 * lone surrogate becomes U+FFFD): measured, then written, a slice a turn.
 */
export async function utf8InSlices(text: string): Promise<Buffer> {
  if (text.length <= largeBody) return Buffer.from(text);
  let length = 0;
  for (let start = 0; start < text.length;) {
    const end = sliceEnd(text, start);
    length += Buffer.byteLength(text.slice(start, end));
    start = end;
    await nextTurn();
  }
  const out = largeBuffer(length);
  let written = 0;
  for (let start = 0; start < text.length;) {
    const end = sliceEnd(text, start);
    written += out.write(text.slice(start, end), written);
    start = end;
    if (start < text.length) await nextTurn();
  }
  return out;
}

/** A copy of `bytes` in memory of its own. */
export async function copyInSlices(bytes: Buffer): Promise<Buffer> {
  if (bytes.length <= largeBody) return Buffer.from(bytes);
  const out = largeBuffer(bytes.length);
  await copyIntoInSlices(out, 0, bytes);
  return out;
}

/** Copies `bytes` into `target` from offset `at`, a slice a turn of the event loop apart. */
export async function copyIntoInSlices(target: Uint8Array, at: number, bytes: Uint8Array): Promise<void> {
  for (let offset = 0; offset < bytes.byteLength; offset += byteSlice) {
    if (offset > 0) await nextTurn();
    target.set(bytes.subarray(offset, offset + byteSlice), at + offset);
  }
}

/** True when `a` and `b` hold the same bytes, or are the same string. */
export async function sameInSlices(a: Buffer | string, b: Buffer | string): Promise<boolean> {
  if (typeof a !== typeof b || a.length !== b.length) return false;
  if (a.length <= largeBody) return typeof a === 'string' ? a === b : a === b || (a as Buffer).equals(b as Buffer);
  // Not `===` on large strings: V8 compares two string objects by content, in one call.
  if (typeof a !== 'string' && a === b) return true;
  // A string slice compares by content as well; the slices of a flat string are views, not copies.
  const step = typeof a === 'string' ? unitSlice : byteSlice;
  for (let offset = 0; offset < a.length; offset += step) {
    if (offset > 0) await nextTurn();
    const same =
      typeof a === 'string'
        ? a.slice(offset, offset + step) === (b as string).slice(offset, offset + step)
        : a.subarray(offset, offset + step).equals((b as Buffer).subarray(offset, offset + step));
    if (!same) return false;
  }
  return true;
}

/** `Buffer.concat(pieces)`, copied a slice per turn when the result is large. */
export async function concatInSlices(pieces: readonly Buffer[]): Promise<Buffer> {
  let length = 0;
  for (const piece of pieces) length += piece.length;
  if (length <= largeBody) return Buffer.concat(pieces, length);
  const out = largeBuffer(length);
  let written = 0;
  let sinceTurn = 0;
  for (const piece of pieces) {
    for (let offset = 0; offset < piece.length;) {
      if (sinceTurn >= byteSlice) {
        await nextTurn();
        sinceTurn = 0;
      }
      const n = Math.min(piece.length - offset, byteSlice - sinceTurn);
      piece.copy(out, written, offset, offset + n);
      offset += n;
      written += n;
      sinceTurn += n;
    }
  }
  return out;
}
