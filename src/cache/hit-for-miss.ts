/**
 * Hit-for-miss markers: what a key whose build could not be stored leaves
 * in the store, in place of an entry, for a short time (`cacheHitForMiss`).
 *
 * Without it every request for a page that sets a cookie (a CSRF token, a
 * session) would wait for another's build and then learn that the build
 * cannot be shared: a queue behind each build, and before that a 503 for
 * every waiter. Varnish answers this with its hit-for-miss object; the
 * marker does the same, in the store so that every process and host sharing
 * it sees it: a request that finds one goes to the action at once, joins no
 * flight and waits for nobody. A storable response of the key replaces it
 * (docs/decisions/0011-waiters-503-or-their-own-build.md).
 *
 * Layout (little-endian): magic `KBHM` (4), version 1 (1), the reason's
 * length (1), expires in ms since the epoch (float64), the reason (ASCII, a
 * Cache-Status detail token). Nothing in it comes from a request or
 * response but the reason, which is one of koa-buffer's own tokens.
 */
import { asBytes } from './entry.ts';

const MAGIC = 0x4d48424b; // 'KBHM' read as a little-endian uint32
const VERSION = 1;
const HEADER = 14;

/** A marker that the key is not storable until `expires` (ms since the epoch), for `reason`. */
export function encodeMarker(reason: string, expires: number): Buffer {
  const text = Buffer.from(reason.slice(0, 255), 'latin1');
  const out = Buffer.alloc(HEADER + text.length);
  out.writeUInt32LE(MAGIC, 0);
  out.writeUInt8(VERSION, 4);
  out.writeUInt8(text.length, 5);
  out.writeDoubleLE(expires, 6);
  text.copy(out, HEADER);
  return out;
}

/** What a marker says (it may have expired: compare `expires`); undefined for anything else (an entry, a foreign value). */
export function readMarker(value: unknown): { reason: string; expires: number } | undefined {
  const bytes = asBytes(value);
  if (bytes === undefined || bytes.length < HEADER || bytes.readUInt32LE(0) !== MAGIC) return undefined;
  if (bytes.readUInt8(4) !== VERSION) return undefined;
  const length = bytes.readUInt8(5);
  if (bytes.length !== HEADER + length) return undefined;
  const expires = bytes.readDoubleLE(6);
  if (!Number.isFinite(expires)) return undefined;
  return { reason: bytes.toString('latin1', HEADER), expires };
}
