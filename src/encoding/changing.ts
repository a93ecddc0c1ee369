/**
 * Addresses whose body changes on every request (a timestamp, a counter, a
 * nonce), told apart cheaply so their responses skip the representation
 * memo (docs/decisions/0029-changing-bodies-skip-the-memo.md).
 *
 * For such a body the memo only costs: hashing the whole entity for the
 * memo's key, a sighting that is never followed by a second one, a
 * compressed copy kept until evicted and never served again (promoted to
 * the old generation by then), and the single-flight bookkeeping. An
 * address is taken for changing after {@link changingAfter} new bodies in a
 * row; from then on its responses are compressed afresh at the cold level
 * without the memo, and their ETag is the MD5 of the bytes sent (fewer
 * bytes to hash than the entity's). One response in {@link probeEvery}
 * still takes the memo's path, so an address whose bodies repeat again is
 * noticed within two probes; any body recognised as seen before clears the
 * address at once.
 *
 * Addresses are request URLs (path and query). The record is bounded in
 * bytes: an address longer than {@link addressLongest} is kept as its MD5
 * (a 12 KB URL costs what a short one does), and the table is an LRU of at
 * most {@link streaksBytesMax} bytes, each address charged its length and
 * {@link streakOverhead}.
 */
import { createHash } from 'node:crypto';
import { LRUCache } from 'lru-cache';

/** New bodies in a row after which an address is taken for changing. */
export const changingAfter = 8;

/** One response in this many of a changing address still takes the memo's path. */
export const probeEvery = 16;

/** Bytes of the record at most: a few thousand addresses. */
export const streaksBytesMax = 512 * 1024;

/** Bytes charged per address beyond its own: the LRU's node, its slots and the count. */
export const streakOverhead = 64;

/** Addresses longer than this are kept as their MD5. */
export const addressLongest = 64;

/** The key of `address` in the record: itself when short, else a NUL and its MD5 (no URL starts with NUL). */
const keyOf = (address: string): string =>
  address.length <= addressLongest ? address : `\0${createHash('md5').update(address).digest('hex')}`;

/** The record of one `buffer()` middleware. */
export class ChangingBodies {
  /** New bodies in a row per address key; from {@link changingAfter} on, responses counted since. */
  readonly #streaks = new LRUCache<string, number>({
    maxSize: streaksBytesMax,
    // Two bytes a character for an address that is not Latin-1: what V8 needs at most.
    sizeCalculation: (_streak, key) => key.length * (/[^\0-\xff]/.test(key) ? 2 : 1) + streakOverhead,
  });

  /** Bytes the record is charged now (at most {@link streaksBytesMax}). */
  get bytes(): number {
    return this.#streaks.calculatedSize;
  }

  /**
   * True when this response of `address` should skip the memo: its address
   * is taken for changing and this is not a probe.
   */
  skipsMemo(address: string): boolean {
    if (this.#streaks.size === 0) return false;
    const key = keyOf(address);
    const streak = this.#streaks.get(key);
    if (streak === undefined || streak < changingAfter) return false;
    this.#streaks.set(key, streak + 1);
    return (streak - changingAfter) % probeEvery !== probeEvery - 1;
  }

  /**
   * Records whether the body just sent for `address` had been seen before.
   *
   * @param repeated - true when the memo recognised it or kept it as a second sighting
   */
  observe(address: string, repeated: boolean): void {
    if (repeated) {
      if (this.#streaks.size > 0) this.#streaks.delete(keyOf(address));
      return;
    }
    const key = keyOf(address);
    const streak = this.#streaks.get(key) ?? 0;
    if (streak >= changingAfter) return; // changing already: skipsMemo counts its responses
    this.#streaks.set(key, streak + 1);
  }

  /** True when `address` is taken for changing now. */
  isChanging(address: string): boolean {
    return (this.#streaks.get(keyOf(address)) ?? 0) >= changingAfter;
  }
}
