/**
 * A cached response and its binary form. Every store, koa-buffer's own and the
 * user's, receives the encoded Buffer: one byte string that any Keyv store
 * keeps losslessly, that a store without TTL support still expires (the
 * expiry is inside), and that a replayed hit can use without copying the body.
 *
 * Layout, version 2 (little-endian):
 *
 * | offset | size | field                                  |
 * |-------:|-----:|----------------------------------------|
 * |      0 |    4 | magic `KBCE`                           |
 * |      4 |    1 | version (2)                            |
 * |      5 |    1 | flags: bit 0, the JSON is `[headers, origin]` |
 * |      6 |    2 | status (uint16)                        |
 * |      8 |    8 | created, ms since the epoch (float64)  |
 * |     16 |    8 | expires, ms since the epoch (float64)  |
 * |     24 |    4 | byte length H of the headers (uint32)  |
 * |     28 |    4 | byte length B of the body (uint32)     |
 * |     32 |    8 | stale-while-revalidate window, ms (float64) |
 * |     40 |    8 | stale-if-error window, ms (float64)    |
 * |     48 |    H | headers as UTF-8 JSON                  |
 * |   48+H |    B | body                                   |
 *
 * Version 1 (written before the stale windows existed) is the same without
 * the two windows, its headers at offset 32; it is still read, with windows of 0.
 *
 * Flag bit 0 marks an entry that knows where it came from (its purge tags,
 * host, path and build start, docs/decisions/0026-purge-by-ban-records.md,
 * and whether its build was anonymous, docs/decisions/0051-a-front-for-public-hits.md):
 * the JSON is then a two-item array. Entries without it decode as before.
 *
 * Both lengths are recorded so that a value truncated, padded or mangled by a
 * text-only store no longer adds up and reads as a miss.
 *
 * The codec round-trips whatever it is given; {@link readEntry} also asks
 * whether a decoded entry may be replayed ({@link entryProblem}), so a value
 * that decodes but holds what a response could never carry (a header name
 * or value Node refuses, a Set-Cookie) is as damaged as a truncated one.
 */
import { Buffer } from 'node:buffer';
import { validateHeaderName, validateHeaderValue } from 'node:http';
import { describeValue } from '../base/describe.ts';
import { largeBuffer } from '../native/squash-off-loop.ts';
import { copyIntoInSlices, largeBody } from '../native/slices.ts';

/** A response as the cache keeps it. */
export interface CacheEntry {
  /** HTTP status, 100–999 (only 200 is stored today, the format does not care). */
  status: number;
  /** Response headers by name; a header sent several times (Set-Cookie, Link) is an array. */
  headers: Record<string, string | string[]>;
  /**
   * The optimised, uncompressed entity. After {@link decodeEntry} it is a view
   * of the value the store returned: read it, never write into it.
   */
  body: Buffer;
  /** When the entry was built, in milliseconds since the epoch. */
  created: number;
  /** When the entry stops being fresh, in milliseconds since the epoch. */
  expires: number;
  /**
   * Milliseconds after `expires` during which the entry is answered stale while
   * one background refresh rebuilds it (RFC 5861 stale-while-revalidate). 0 or absent: none.
   */
  staleWhileRevalidate?: number;
  /**
   * Milliseconds after `expires` during which the entry is answered instead of
   * a failed rebuild (RFC 5861 stale-if-error). 0 or absent: none.
   */
  staleIfError?: number;
  /** What a purge matches the entry by; absent on entries stored without it. */
  origin?: EntryOrigin;
}

/** What a purge matches an entry by (cache/purge/). */
export interface EntryOrigin {
  /** The request's Host, lowercased, port included. */
  host: string;
  /** The request's path and query as the client sent them (`ctx.originalUrl`). */
  path: string;
  /** Its purge tags (`cacheTags`, the `Cache-Tag` header). */
  tags: string[];
  /** When its build began, ms since the epoch: a purge at or after it removes the entry. */
  since: number;
  /**
   * True when the request that built it carried no Cookie and no
   * Authorization (as the application saw it): only such an entry may be
   * answered by a front before the middleware runs (front/front.ts). Absent: false.
   */
  anonymous?: boolean;
}

const MAGIC = 0x4543424b; // 'KBCE' read as a little-endian uint32
const VERSION = 2;
const HEADER_SIZE = 48;
/** The first format, without the stale windows: still read. */
const VERSION_1 = 1;
const HEADER_SIZE_1 = 32;
const MAX_LENGTH = 0xffff_ffff;

/**
 * The binary form of `entry`, a new Buffer that shares no memory with it.
 *
 * @param entry - the response to store
 * @returns magic, version, status, times, headers as JSON and the body bytes
 * @throws TypeError when a field has the wrong type (a header value that is not
 *   a string or an array of strings, a body that is not bytes, a time that is
 *   not a finite number)
 * @throws RangeError when the status is not an integer in 100–999, or the
 *   headers or body exceed 4 GiB
 *
 * @example
 * const value = encodeEntry({ status: 200, headers: { 'content-type': 'text/html' },
 *   body: Buffer.from('<p>hi'), created: Date.now(), expires: Date.now() + 600_000 });
 * await store.set(key, value, 600_000);
 */
export function encodeEntry(entry: CacheEntry): Buffer {
  const { out, body, at } = frame(entry, (size) => Buffer.allocUnsafe(size));
  out.set(body, at);
  return out;
}

/**
 * {@link encodeEntry}'s bytes, with a large body copied in 1 MiB slices a
 * turn of the event loop apart (a body up to `cacheMaxSize` copied in one
 * call would hold every other request meanwhile:
 * docs/decisions/0043-large-bodies-leave-the-event-loop.md), in memory
 * freed off the loop.
 *
 * @throws as {@link encodeEntry} does, before the first turn
 */
export async function encodeEntryInSlices(entry: CacheEntry): Promise<Buffer> {
  if (entry?.body instanceof Uint8Array && entry.body.byteLength <= largeBody) return encodeEntry(entry);
  const { out, body, at } = frame(entry, largeBuffer);
  await copyIntoInSlices(out, at, body);
  return out;
}

/** The entry's checks, and its bytes but the body's, in memory from `allocate`; the body goes at `at`. */
function frame(entry: CacheEntry, allocate: (size: number) => Buffer): { out: Buffer; body: Uint8Array; at: number } {
  if (entry === null || typeof entry !== 'object')
    throw new TypeError(`cache entry must be an object, got ${describeValue(entry)}`);
  const { status, headers, body, created, expires } = entry;
  const staleWhileRevalidate = entry.staleWhileRevalidate ?? 0;
  const staleIfError = entry.staleIfError ?? 0;
  if (!Number.isInteger(status) || status < 100 || status > 999) {
    throw new RangeError(`cache entry status must be an integer from 100 to 999, got ${describeValue(status)}`);
  }
  if (!Number.isFinite(created))
    throw new TypeError(`cache entry created must be a finite number of ms, got ${describeValue(created)}`);
  if (!Number.isFinite(expires))
    throw new TypeError(`cache entry expires must be a finite number of ms, got ${describeValue(expires)}`);
  if (!isWindow(staleWhileRevalidate) || !isWindow(staleIfError))
    throw new TypeError(
      `cache entry stale windows must be finite non-negative ms, got ${describeValue(staleWhileRevalidate)} and ${describeValue(staleIfError)}`,
    );
  if (!(body instanceof Uint8Array))
    throw new TypeError(`cache entry body must be a Buffer, got ${describeValue(body)}`);
  checkHeaders(headers);
  if (entry.origin !== undefined && !validOrigin(entry.origin))
    throw new TypeError(`cache entry origin must be {host, path, tags, since}, got ${describeValue(entry.origin)}`);

  const origin = entry.origin;
  const json = Buffer.from(JSON.stringify(origin === undefined ? headers : [headers, origin]), 'utf8');
  if (json.length > MAX_LENGTH || body.byteLength > MAX_LENGTH)
    throw new RangeError('cache entry headers and body must each be under 4 GiB');
  const out = allocate(HEADER_SIZE + json.length + body.byteLength);
  out.writeUInt32LE(MAGIC, 0);
  out.writeUInt8(VERSION, 4);
  out.writeUInt8(origin === undefined ? 0 : 1, 5);
  out.writeUInt16LE(status, 6);
  out.writeDoubleLE(created, 8);
  out.writeDoubleLE(expires, 16);
  out.writeUInt32LE(json.length, 24);
  out.writeUInt32LE(body.byteLength, 28);
  out.writeDoubleLE(staleWhileRevalidate, 32);
  out.writeDoubleLE(staleIfError, 40);
  json.copy(out, HEADER_SIZE);
  return { out, body, at: HEADER_SIZE + json.length };
}

/**
 * The entry held in a value read from a store, or `undefined` when the value
 * is not one (absent, foreign, corrupt, or from a future format version).
 * Never throws: whatever a store hands back, the worst outcome is a miss.
 *
 * Accepts a Buffer, any Uint8Array or ArrayBuffer, and the shapes a JSON round
 * trip of a Buffer produces: `{ type: 'Buffer', data: [...] }`
 * (`JSON.stringify(buffer)`) and `':base64:…'` (Keyv's serialiser, read without
 * its reviver).
 *
 * @param value - what `store.get(key)` returned (awaited)
 * @returns the entry, its body a view of `value`'s bytes, or `undefined`
 *
 * @example
 * const entry = decodeEntry(await store.get(key));
 * if (entry && isFresh(entry)) replay(entry);
 */
export function decodeEntry(value: unknown): CacheEntry | undefined {
  const bytes = asBytes(value);
  if (bytes === undefined) return undefined;
  const decoded = decode(bytes);
  return typeof decoded === 'string' ? undefined : decoded;
}

/** The entry in `bytes`, or what is wrong with them. */
function decode(bytes: Buffer): CacheEntry | string {
  if (bytes.length < HEADER_SIZE_1 || bytes.readUInt32LE(0) !== MAGIC) return 'not an encoded entry';
  const version = bytes.readUInt8(4);
  if (version !== VERSION && version !== VERSION_1) return `format version ${version}`;
  const start = version === VERSION ? HEADER_SIZE : HEADER_SIZE_1;
  if (bytes.length < start) return 'truncated';
  const status = bytes.readUInt16LE(6);
  const created = bytes.readDoubleLE(8);
  const expires = bytes.readDoubleLE(16);
  const headersLength = bytes.readUInt32LE(24);
  const bodyLength = bytes.readUInt32LE(28);
  if (start + headersLength + bodyLength !== bytes.length)
    return `${bytes.length} bytes where the framing says ${start + headersLength + bodyLength} (truncated or padded)`;
  if (status < 100 || status > 999) return `status ${status}`;
  if (!Number.isFinite(created) || !Number.isFinite(expires)) return 'times that are not finite';
  const staleWhileRevalidate = version === VERSION ? bytes.readDoubleLE(32) : 0;
  const staleIfError = version === VERSION ? bytes.readDoubleLE(40) : 0;
  if (!isWindow(staleWhileRevalidate) || !isWindow(staleIfError)) return 'stale windows that are not ms';

  let headers: unknown;
  try {
    headers = JSON.parse(bytes.toString('utf8', start, start + headersLength));
  } catch {
    return 'headers that are not JSON';
  }
  let origin: EntryOrigin | undefined;
  if ((bytes.readUInt8(5) & 1) === 1) {
    if (!Array.isArray(headers) || headers.length !== 2 || !validOrigin(headers[1])) return 'a malformed origin';
    origin = headers[1];
    headers = headers[0];
  }
  if (!validHeaders(headers)) return 'headers that are not strings or arrays of strings';
  const body = bytes.subarray(start + headersLength);
  return origin === undefined
    ? { status, headers, body, created, expires, staleWhileRevalidate, staleIfError }
    : { status, headers, body, created, expires, staleWhileRevalidate, staleIfError, origin };
}

/**
 * What a store's value holds: an entry that may be replayed; nothing
 * (`absent`: no value, or a format newer than this code, which a newer
 * release sharing the store wrote and may still use); or a `damaged` value,
 * with what is wrong with it, which no release can use.
 */
export type EntryRead = { readonly entry: CacheEntry } | { readonly absent: true } | { readonly damaged: string };

const absent: EntryRead = { absent: true };

/**
 * Reads a value returned by a store: {@link decodeEntry}, then
 * {@link entryProblem}. Never throws.
 *
 * @param value - what `store.get(key)` returned (awaited)
 */
export function readEntry(value: unknown): EntryRead {
  if (value === undefined || value === null) return absent;
  const bytes = asBytes(value);
  if (bytes === undefined) return { damaged: 'not an encoded entry' };
  if (bytes.length >= HEADER_SIZE_1 && bytes.readUInt32LE(0) === MAGIC && bytes.readUInt8(4) > VERSION) return absent;
  const entry = decode(bytes);
  if (typeof entry === 'string') return { damaged: entry };
  const problem = entryProblem(entry);
  return problem === undefined ? { entry } : { damaged: problem };
}

/**
 * Headers a stored entry never holds: the ones that frame one delivery (the
 * entry holds the uncompressed entity; each replay gets its own length and
 * coding) and Set-Cookie (a response that sets a cookie is never stored).
 */
const neverStored = new Set([
  'set-cookie',
  'content-length',
  'content-encoding',
  'transfer-encoding',
  'connection',
  'keep-alive',
]);

/** The answer of {@link entryProblem} by entry: a hit from the memory store replays the same object, and checks it once. */
const problems = new WeakMap<CacheEntry, string | null>();

/**
 * Why `entry` cannot be replayed as it is, or undefined when it can: a
 * status Koa refuses, a header Node's own checks refuse (`validateHeaderName`,
 * `validateHeaderValue`), a name not in lower case (as every entry is
 * written), a header no stored entry holds, or a field of the wrong type. A
 * replay checks all of it before it touches the response.
 *
 * @param entry - a decoded entry, or one made in this process
 */
export function entryProblem(entry: CacheEntry): string | undefined {
  let problem = problems.get(entry);
  if (problem === undefined) problems.set(entry, (problem = findProblem(entry) ?? null));
  return problem ?? undefined;
}

function findProblem(entry: CacheEntry): string | undefined {
  const { status, headers, body } = entry;
  if (!Number.isInteger(status) || status < 100 || status > 999) return `status ${describeValue(status)}`;
  if (!(body instanceof Uint8Array)) return 'a body that is not bytes';
  if (headers === null || typeof headers !== 'object' || Array.isArray(headers))
    return 'headers that are not an object';
  for (const name of Object.keys(headers)) {
    const value: unknown = headers[name];
    const shown = JSON.stringify(name);
    if (neverStored.has(name)) return `a ${name} header`;
    if (name !== name.toLowerCase()) return `header name ${shown} not in lower case`;
    try {
      validateHeaderName(name);
    } catch {
      return `header name ${shown}`;
    }
    const values: unknown[] = Array.isArray(value) ? value : [value];
    for (const item of values) {
      if (typeof item !== 'string') return `header ${shown} holding ${describeValue(item)}`;
      try {
        validateHeaderValue(name, item);
      } catch {
        return `header ${shown} with a character Node refuses`;
      }
    }
  }
  return undefined;
}

/**
 * Whether `entry` may still be served at `now`. The entry's own expiry decides,
 * so a store that ignores TTLs (a `Map`, a Keyv adapter without expiry) never
 * replays a stale page.
 *
 * @param entry - a decoded entry
 * @param now - the time to judge by, ms since the epoch
 * @defaultValue now - `Date.now()`
 * @returns true while `now` is before `entry.expires`
 */
export function isFresh(entry: CacheEntry, now: number = Date.now()): boolean {
  return now < entry.expires;
}

/**
 * Milliseconds `entry` stays fresh after `now`, never negative: the TTL to hand
 * to `store.set`, and the `ttl=` of a `Cache-Status` hit (in seconds there).
 *
 * @param entry - a decoded or about-to-be-encoded entry
 * @param now - ms since the epoch
 * @defaultValue now - `Date.now()`
 */
export function remainingMs(entry: CacheEntry, now: number = Date.now()): number {
  return Math.max(0, entry.expires - now);
}

/** A stale window: a finite, non-negative number of ms. */
function isWindow(ms: number): boolean {
  return Number.isFinite(ms) && ms >= 0;
}

/** The bytes of `value`, without copying where they already are bytes. */
export function asBytes(value: unknown): Buffer | undefined {
  if (Buffer.isBuffer(value)) return value;
  if (value instanceof Uint8Array) return Buffer.from(value.buffer, value.byteOffset, value.byteLength);
  if (value instanceof ArrayBuffer) return Buffer.from(value);
  if (typeof value === 'string') {
    // Keyv writes a Buffer as ':base64:' + base64; strict base64 only, since
    // Buffer.from silently skips characters that do not belong.
    if (!value.startsWith(':base64:')) return undefined;
    const text = value.slice(8);
    return /^[A-Za-z0-9+/]*={0,2}$/.test(text) && text.length % 4 === 0 ? Buffer.from(text, 'base64') : undefined;
  }
  if (value !== null && typeof value === 'object') {
    const { type, data } = value as { type?: unknown; data?: unknown };
    if (type !== 'Buffer' || !Array.isArray(data)) return undefined;
    for (const byte of data) if (!Number.isInteger(byte) || byte < 0 || byte > 255) return undefined;
    return Buffer.from(data as number[]);
  }
  return undefined;
}

function validOrigin(value: unknown): value is EntryOrigin {
  if (value === null || typeof value !== 'object') return false;
  const { host, path, tags, since, anonymous } = value as Record<string, unknown>;
  return (
    (anonymous === undefined || typeof anonymous === 'boolean') &&
    typeof host === 'string' &&
    typeof path === 'string' &&
    Number.isFinite(since) &&
    Array.isArray(tags) &&
    tags.every((tag) => typeof tag === 'string')
  );
}

function validHeaders(headers: unknown): headers is Record<string, string | string[]> {
  if (headers === null || typeof headers !== 'object' || Array.isArray(headers)) return false;
  for (const value of Object.values(headers)) {
    if (typeof value === 'string') continue;
    if (!Array.isArray(value)) return false;
    for (const item of value) if (typeof item !== 'string') return false;
  }
  return true;
}

function checkHeaders(headers: unknown): void {
  if (headers === null || typeof headers !== 'object' || Array.isArray(headers)) {
    throw new TypeError(`cache entry headers must be an object, got ${describeValue(headers)}`);
  }
  for (const [name, value] of Object.entries(headers)) {
    if (typeof value === 'string') continue;
    if (Array.isArray(value) && value.every((item) => typeof item === 'string')) continue;
    throw new TypeError(
      `cache entry header '${name}' must be a string or an array of strings, got ${describeValue(value)}`,
    );
  }
}

/**
 * The expiry of an encoded entry, read without decoding it (a near cache
 * keeps a value no longer than this); undefined for anything else.
 *
 * @param value - what a store returned
 */
export function encodedExpiry(value: unknown): number | undefined {
  if (!(value instanceof Uint8Array) || value.byteLength < HEADER_SIZE) return undefined;
  const bytes = Buffer.isBuffer(value) ? value : Buffer.from(value.buffer, value.byteOffset, value.byteLength);
  if (bytes.readUInt32LE(0) !== MAGIC || bytes.readUInt8(4) !== VERSION) return undefined;
  const expires = bytes.readDoubleLE(16);
  return Number.isFinite(expires) ? expires : undefined;
}
