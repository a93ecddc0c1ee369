/**
 * Addresses whose body changes on every request (a timestamp, a counter, a
 * nonce), told apart cheaply so their responses skip the representation
 * memo (docs/decisions.md, "Bodies that change on every request").
 *
 * For such a body the memo only costs: hashing the whole entity for the
 * memo's key, a sighting that is never followed by a second one, a
 * compressed copy kept until evicted and never served again (promoted to
 * the old generation by then), and the single-flight bookkeeping. An
 * address is taken for changing after {@link changingAfter} new bodies in a
 * row; from then on its responses are compressed afresh at the cold level
 * without the memo, and their ETag is the MD5 of the bytes sent (a fifth
 * of the entity's bytes to hash here). One response in {@link probeEvery}
 * still takes the memo's path, so an address whose bodies repeat again is
 * noticed within two probes; any body recognised as seen before clears the
 * address at once.
 *
 * Addresses are request URLs (path and query). The record is bounded: when
 * it holds {@link addressesMax} addresses it is forgotten all at once.
 */

/** New bodies in a row after which an address is taken for changing. */
export const changingAfter = 8;

/** One response in this many of a changing address still takes the memo's path. */
export const probeEvery = 16;

/** Addresses recorded, at most. */
export const addressesMax = 4096;

/** The record of one `buffer()` middleware. */
export class ChangingBodies {
  /** New bodies in a row per address; from {@link changingAfter} on, responses counted since. */
  readonly #streaks = new Map<string, number>();

  /**
   * True when this response of `address` should skip the memo: its address
   * is taken for changing and this is not a probe.
   */
  skipsMemo(address: string): boolean {
    const streak = this.#streaks.get(address);
    if (streak === undefined || streak < changingAfter) return false;
    this.#streaks.set(address, streak + 1);
    return (streak - changingAfter) % probeEvery !== probeEvery - 1;
  }

  /**
   * Records whether the body just sent for `address` had been seen before.
   *
   * @param repeated - true when the memo recognised it or kept it as a second sighting
   */
  observe(address: string, repeated: boolean): void {
    if (repeated) {
      if (this.#streaks.size > 0) this.#streaks.delete(address);
      return;
    }
    const streak = this.#streaks.get(address) ?? 0;
    if (streak >= changingAfter) return; // changing already: skipsMemo counts its responses
    if (streak === 0 && this.#streaks.size >= addressesMax) this.#streaks.clear();
    this.#streaks.set(address, streak + 1);
  }

  /** True when `address` is taken for changing now. */
  isChanging(address: string): boolean {
    return (this.#streaks.get(address) ?? 0) >= changingAfter;
  }
}
