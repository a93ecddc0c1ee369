/**
 * The cache key of a request (SPEC 7): `buffer:` + the MD5 of an unambiguous
 * encoding of the app identity, host, path, query string and the `varyBy`
 * request headers, or the `cacheKey` option used as given.
 *
 * Unambiguous means two different inputs never encode alike, whatever a
 * client puts in its query string or headers: every field is written as
 * `<length>:<text>` (a crafted value cannot pose as a field boundary), an
 * absent header as `-` (distinct from an empty one, `0:`), and a field that
 * is not well-formed UTF-16 (a lone surrogate, which UTF-8 would turn into
 * U+FFFD) as `!` + its code units in hex.
 */
import type { Context } from 'koa';
import { md5 } from '../native/exports.ts';

/** What the key is made of, besides the request. */
export interface KeyOptions {
  /** The `cacheKey` option: a string, or a function of the context; empty falls back to the generated key. */
  cacheKey: string | ((ctx: Context) => string | undefined | null) | undefined;
  /** Lowercased request header names joining the key. */
  varyBy: readonly string[];
}

/** In `u` mode a surrogate pair is one code point, so this matches only a lone surrogate. */
const loneSurrogate = /\p{Cs}/u;

/** One field of the encoding, for text known to hold no lone surrogate. */
function plainField(text: string): string {
  return `${text.length}:${text}`;
}

/** One field of the encoding. */
function field(text: string): string {
  if (!loneSurrogate.test(text)) return `${text.length}:${text}`;
  let hex = '';
  for (let i = 0; i < text.length; i++) hex += text.charCodeAt(i).toString(16).padStart(4, '0');
  return `!${hex.length}:${hex}`;
}

/** A request header as one string (Node joins repeated ones), undefined when absent. */
function header(ctx: Context, name: string): string | undefined {
  const value = ctx.request.headers[name];
  if (value === undefined) return undefined;
  return Array.isArray(value) ? value.join('\n') : value;
}

/** The application's identity: its script path, so two apps sharing a store never share entries. */
const appIdentity = field(process.argv[1] ?? '');

/**
 * The encoding the generated key hashes; exported for tests, which check
 * that distinct requests never encode alike.
 *
 * @param ctx - the request
 * @param varyBy - lowercased header names
 * @returns app, host, path and query as length-prefixed fields, then a name and a value (or `-`) per varyBy header
 */
export function keyMaterial(ctx: Context, varyBy: readonly string[]): string {
  const plain = encode(ctx, varyBy, plainField);
  // A lone surrogate stays lone in the material (a field's text is framed by digits and ':'), so one test covers every field.
  return loneSurrogate.test(plain) ? encode(ctx, varyBy, field) : plain;
}

function encode(ctx: Context, varyBy: readonly string[], as: (text: string) => string): string {
  let material = `${appIdentity}${as(ctx.host)}${as(ctx.path)}${as(ctx.querystring)}`;
  for (const name of varyBy) {
    const value = header(ctx, name);
    material += as(name) + (value === undefined ? '-' : as(value));
  }
  return material;
}

/**
 * The cache key of this request.
 *
 * @param ctx - the request
 * @param options - `cacheKey` and `varyBy`
 * @returns the `cacheKey` option (or what its function returned) as given when
 *   it is a non-empty string, else `buffer:` + 32 hex digits
 * @throws whatever a `cacheKey` function throws (the caller bypasses the cache)
 * @example
 * cacheKeyOf(ctx, { cacheKey: undefined, varyBy: ['cookie'] }) // 'buffer:9e107d9d372bb6826bd81d3542a419d6'
 */
export function cacheKeyOf(ctx: Context, options: KeyOptions): string {
  const custom = typeof options.cacheKey === 'function' ? options.cacheKey(ctx) : options.cacheKey;
  if (typeof custom === 'string' && custom !== '') return custom;
  const material = keyMaterial(ctx, options.varyBy);
  if (material.length > recentLongest) return `buffer:${md5(material)}`;
  let key = recent.get(material);
  if (key === undefined) {
    // A plain bound, no LRU bookkeeping on the hot path: when full, start afresh.
    if (recent.size >= recentMax) recent.clear();
    key = `buffer:${md5(material)}`;
    recent.set(material, key);
  }
  return key;
}

/** Keys of recent requests by their material: a hit costs a Map lookup instead of an MD5 (at most about 2 MiB). */
const recent = new Map<string, string>();
const recentMax = 4096;
const recentLongest = 512;
