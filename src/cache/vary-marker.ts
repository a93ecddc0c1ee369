/**
 * A response's own Vary as a secondary key, as Varnish keys it: a page that
 * varies on a request header outside `varyBy` (Accept-Language, say) is
 * kept once per value of that header, instead of not at all. The primary
 * key holds a marker naming the fields the page varies on and the variants
 * stored so far; each variant is an entry of its own under the primary key
 * and a digest of the request's values of those fields. `Vary: *` (the
 * answer depends on anything) and a Vary of more than {@link fieldsMax}
 * fields are never stored, and a URL keeps at most {@link variantsMax}
 * variants: a client cannot grow the store by sending new header values.
 *
 * Layout (little-endian): magic `KBVM` (4), version 1 (1), unused (1),
 * expires in ms since the epoch (float64), then JSON `{fields, variants}`
 * (field names as Vary lists them, lowercased; variants as digests).
 */
import { createHash } from 'node:crypto';
import type { Context } from 'koa';
import { requestHeaderLines } from '../http/headers.ts';
import { asBytes } from './entry.ts';

const MAGIC = 0x4d56424b; // 'KBVM' read as a little-endian uint32
const VERSION = 1;
const HEADER = 14;

/** The most fields a stored response may vary on beyond the key. */
export const fieldsMax = 8;
/** The most variants kept per URL. */
export const variantsMax = 16;

/** What a marker says. */
export interface VaryMarker {
  /** The request headers the URL's page varies on beyond the key, lowercased. */
  readonly fields: readonly string[];
  /** The variants stored, as digests of those headers' values. */
  readonly variants: readonly string[];
  /** When the marker goes, ms since the epoch. */
  readonly expires: number;
}

export function encodeVaryMarker(marker: VaryMarker): Buffer {
  const body = Buffer.from(JSON.stringify({ fields: marker.fields, variants: marker.variants }), 'utf8');
  const out = Buffer.alloc(HEADER + body.length);
  out.writeUInt32LE(MAGIC, 0);
  out.writeUInt8(VERSION, 4);
  out.writeDoubleLE(marker.expires, 6);
  body.copy(out, HEADER);
  return out;
}

function isNames(value: unknown, max: number): value is string[] {
  return Array.isArray(value) && value.length <= max && value.every((v) => typeof v === 'string' && v.length <= 256);
}

/** A marker's content, or undefined for anything else (an entry, damage, a foreign value). */
export function readVaryMarker(value: unknown): VaryMarker | undefined {
  const bytes = asBytes(value);
  if (bytes === undefined || bytes.length < HEADER || bytes.readUInt32LE(0) !== MAGIC) return undefined;
  if (bytes.readUInt8(4) !== VERSION) return undefined;
  const expires = bytes.readDoubleLE(6);
  if (!Number.isFinite(expires)) return undefined;
  try {
    const { fields, variants } = JSON.parse(bytes.toString('utf8', HEADER)) as { fields?: unknown; variants?: unknown };
    if (!isNames(fields, fieldsMax) || fields.length === 0 || !isNames(variants, variantsMax)) return undefined;
    return { fields, variants, expires };
  } catch {
    return undefined;
  }
}

/**
 * The digest of this request's values of `fields` (absent distinct from
 * empty): two requests with the same values share a variant.
 */
export function variantOf(ctx: Context, fields: readonly string[]): string {
  const hash = createHash('md5');
  for (const name of fields) {
    const value = requestHeaderLines(ctx, name);
    hash.update(value === undefined ? '-' : `${value.length}:${value}`);
  }
  return hash.digest('hex');
}

/** The store key of a variant of the page under `key`. */
export function variantKey(key: string, variant: string): string {
  return `${key}:v:${variant}`;
}
