/**
 * The representation memo: a per-middleware LRU bounded in bytes, so a page
 * whose bytes repeat (a cache hit, or a dynamic page that renders the same
 * bytes again) is optimised, hashed and compressed once, not per request.
 *
 * Two kinds of entry share one byte budget:
 * - entity entries recognise a body by its exact content (a cheap fingerprint
 *   finds the candidate; `===` for a string body, `Buffer#equals` for bytes,
 *   proves it) and give back the optimised entity and its MD5, so a repeated
 *   body costs one comparison instead of encoding, squashing and hashing;
 * - coding entries map (entity MD5, coding, level) — the very MD5 the ETag
 *   is made of — to the compressed bytes, or to "no gain" when compression
 *   did not make that entity smaller.
 *
 * An entity entry is kept from the second time its entity is seen: the
 * first sighting only leaves its MD5 in a small bounded set (the MD5, not
 * the fingerprint, which a page differing in one counter shares). A page whose
 * bytes change on every request (a timestamp, a counter) would otherwise
 * fill the memo with bodies never seen again, each held until evicted and so
 * promoted to the old generation; with the bytes changing on every request
 * that cost throughput
 * (docs/decisions/0008-memo-keeps-a-body-from-its-second-sighting.md). A
 * repeated body loses nothing but one comparison's worth of savings, once:
 * its coding entry, keyed by MD5, is kept from the first sighting.
 */
import { createHash } from 'node:crypto';
import { LRUCache } from 'lru-cache';

/** An entity the memo recognised or learnt. */
export interface KnownEntity {
  /** The body as the action produced it: a string, or bytes. */
  readonly raw: Buffer | string;
  /** The body after optimisation, as bytes (the same Buffer as `raw` when nothing changed it). */
  readonly entity: Buffer;
  /** Lowercase hex MD5 of `entity`. */
  readonly md5: string;
}

/** A coding entry: the compressed bytes, or null when compression did not shrink the entity. */
interface Encoded {
  readonly bytes: Buffer | null;
}

type Entry = KnownEntity | Encoded;

/** Bytes charged per entry beyond its buffers: the key, the entry object and the LRU's bookkeeping. */
const entryOverhead = 96;

function sizeOf(entry: Entry, key: string): number {
  if ('raw' in entry) {
    // A string is charged two bytes a character, what V8 needs at most.
    const raw = typeof entry.raw === 'string' ? entry.raw.length * 2 : entry.raw.length;
    return raw + (entry.entity === entry.raw ? 0 : entry.entity.length) + key.length + entryOverhead;
  }
  return (entry.bytes?.length ?? 0) + key.length + entryOverhead;
}

/**
 * A key for a body that is cheap to build and almost never shared by two
 * different bodies of one length: the kind, the length and sixteen samples
 * (32-bit words of bytes, or UTF-16 units of a string) at evenly spread
 * offsets. A shared key only costs a failed comparison.
 */
function fingerprint(raw: Buffer | string): string {
  const n = raw.length;
  if (typeof raw === 'string') {
    if (n < 64) return `s${n}:${raw}`;
    let key = `s${n}`;
    for (let i = 0; i < 16; i++) key += `:${raw.charCodeAt(Math.floor((i * (n - 1)) / 15))}`;
    return key;
  }
  if (n < 64) return `b${n}:${raw.toString('base64')}`;
  const span = n - 4;
  let key = `b${n}`;
  for (let i = 0; i < 16; i++) key += `:${raw.readUInt32LE(Math.floor((i * span) / 15))}`;
  return key;
}

function same(a: Buffer | string, b: Buffer | string): boolean {
  if (a === b) return true;
  if (typeof a === 'string' || typeof b === 'string') return false;
  return a.equals(b);
}

/** Bytes of the seen-once table at most (the least recently seen are forgotten). */
export const sightingsBytesMax = 512 * 1024;
/** Bytes charged per sighting beyond its key: the LRU's node and slots. */
export const sightingOverhead = 64;
/** A sighting's key longer than this (a variant holding a long path) is kept as its MD5. */
const sightingLongest = 96;

/** The memo of one `buffer()` middleware. */
export class RepresentationMemo {
  readonly #lru: LRUCache<string, Entry> | undefined;
  /** Entities seen once, by variant and MD5 (a long one by the MD5 of both), in a byte budget. */
  readonly #seenOnce = new LRUCache<string, true>({
    maxSize: sightingsBytesMax,
    sizeCalculation: (_seen, key) => key.length * (/[^\0-\xff]/.test(key) ? 2 : 1) + sightingOverhead,
  });

  /** @param maxSize - the byte budget; 0 turns the memo off */
  constructor(maxSize: number) {
    this.#lru = maxSize > 0 ? new LRUCache<string, Entry>({ maxSize, sizeCalculation: sizeOf }) : undefined;
  }

  /** False when the memo is off. */
  get enabled(): boolean {
    return this.#lru !== undefined;
  }

  /** Bytes currently charged against the budget. */
  get size(): number {
    return this.#lru?.calculatedSize ?? 0;
  }

  /** Bytes the seen-once table is charged (at most {@link sightingsBytesMax}), apart from {@link size}. */
  get sightingsBytes(): number {
    return this.#seenOnce.calculatedSize;
  }

  /** The byte budget (0 when off). */
  get maxSize(): number {
    return this.#lru?.maxSize ?? 0;
  }

  /**
   * The entity learnt for exactly these bytes under `variant` (the
   * optimisation settings that turned raw into entity), or undefined.
   */
  recall(raw: Buffer | string, variant: string): KnownEntity | undefined {
    const known = this.candidate(raw, variant);
    return known !== undefined && same(known.raw, raw) ? known : undefined;
  }

  /**
   * The entity learnt under `variant` for a body with `raw`'s fingerprint,
   * not yet compared with `raw`: for a large body, which the caller compares
   * in slices rather than in one call (./slices.ts).
   */
  candidate(raw: Buffer | string, variant: string): KnownEntity | undefined {
    const known = this.#lru?.get(`e\0${variant}\0${fingerprint(raw)}`);
    return known === undefined || !('raw' in known) ? undefined : known;
  }

  /**
   * True when {@link learn} would keep this entity now: it was seen once
   * before, and it fits the budget. The caller of a large body then makes
   * the copy learn keeps in slices, and hands it over.
   */
  wouldKeep(raw: Buffer | string, variant: string, entity: Buffer, md5: string): boolean {
    if (!this.#lru || !this.#seenOnce.has(`${variant}\0${md5}`)) return false;
    return this.#fits(raw, variant, entity);
  }

  #fits(raw: Buffer | string, variant: string, entity: Buffer): boolean {
    const key = `e\0${variant}\0${fingerprint(raw)}`;
    return sizeOf({ raw, entity, md5: '' }, key) <= this.#lru!.maxSize;
  }

  /**
   * Remembers what `raw` became under `variant`, from the second time it is
   * learnt (see the module comment).
   *
   * @param copy - a copy of `raw` made already (in slices, for a large body), kept instead of making one
   * @returns true when it is kept now
   */
  learn(raw: Buffer | string, variant: string, entity: Buffer, md5: string, copy?: Buffer): boolean {
    if (!this.#lru) return false;
    let sighting = `${variant}\0${md5}`;
    if (sighting.length > sightingLongest) sighting = `\0${createHash('md5').update(sighting).digest('hex')}`;
    if (!this.#seenOnce.delete(sighting)) {
      this.#seenOnce.set(sighting, true);
      return false;
    }
    // Larger than the whole budget: the LRU would not keep it, so no copy is made for nothing.
    if (!this.#fits(raw, variant, entity)) return false;
    const key = `e\0${variant}\0${fingerprint(raw)}`;
    // A Buffer may be reused and changed in place by the application after this
    // response: keep a copy, so the memo never compares a body with itself.
    let kept: KnownEntity = { raw, entity, md5 };
    if (typeof raw !== 'string') {
      copy ??= Buffer.from(raw);
      kept = { raw: copy, entity: entity === raw ? copy : entity, md5 };
    }
    this.#lru.set(key, kept);
    return this.#lru.has(key);
  }

  /**
   * The compressed bytes of the entity `md5` in `coding` at `level`: a Buffer,
   * null when compression is known not to help, undefined when not known.
   */
  encoded(md5: string, coding: string, level: number): Buffer | null | undefined {
    const entry = this.#lru?.get(`c\0${md5}\0${coding}\0${level}`);
    return entry === undefined || !('bytes' in entry) ? undefined : entry.bytes;
  }

  /** Remembers the compressed bytes (or null for "no gain") of the entity `md5`. */
  remember(md5: string, coding: string, level: number, bytes: Buffer | null): void {
    this.#lru?.set(`c\0${md5}\0${coding}\0${level}`, { bytes });
  }

  /** Keeps a compression dictionary (dictionaries/) under its SHA-256 hex; it counts against the same budget. */
  keepDictionary(sha256: string, bytes: Buffer): void {
    this.#lru?.set(`d\0${sha256}`, { bytes });
  }

  /** The dictionary kept under `sha256`, or undefined (never kept, evicted, or the memo is off). */
  dictionary(sha256: string): Buffer | undefined {
    const entry = this.#lru?.get(`d\0${sha256}`);
    return entry === undefined || !('bytes' in entry) ? undefined : (entry.bytes ?? undefined);
  }

  /** Forgets the dictionary kept under `sha256`, when a newer version replaces it. */
  forgetDictionary(sha256: string): void {
    this.#lru?.delete(`d\0${sha256}`);
  }
}
