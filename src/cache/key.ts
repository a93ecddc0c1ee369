/**
 * The cache key of a request: `buffer:` + the MD5 of an unambiguous
 * encoding of the app identity, scheme, host, path, query string and the
 * `varyBy` request headers, or the `cacheKey` option used as given. The
 * scheme is `ctx.protocol` (X-Forwarded-Proto with `app.proxy`): a page built
 * for https holds https links, which a plain-http request must not get.
 *
 * Unambiguous means two different inputs never encode alike, whatever a
 * client puts in its query string or headers: every field is written as
 * `<length>:<text>` (a crafted value cannot pose as a field boundary), an
 * absent header as `-` (distinct from an empty one, `0:`), and a field that
 * is not well-formed UTF-16 (a lone surrogate, which UTF-8 would turn into
 * U+FFFD) as `!` + its code units in hex.
 *
 * A `cookie:NAME` entry joins the cookie's value and its signature's
 * (`NAME.sig`) as Koa's `ctx.cookies.get` reads them (../http/cookies.ts),
 * absent (`-`) distinct from empty; a Cookie header readers could take
 * differently gives no key at all, {@link ambiguousCookie}, and the request
 * bypasses the cache. A plain `cookie` entry joins the whole header, as the
 * application is given it: without the cookies of `cacheIgnoreCookies`
 * ({@link leaveOutIgnoredCookies}).
 */
import { createRequire } from 'node:module';
import type { Context } from 'koa';
import { md5 } from '../native/exports.ts';
import { appIdentity } from '../base/app-identity.ts';
import { ambiguousCookie, readCookie, withoutCookies } from '../http/cookies.ts';
import { isGetOrHead, requestHeaderLines } from '../http/headers.ts';

export { ambiguousCookie } from '../http/cookies.ts';

/**
 * Removes the cookies `ignored` names from the request's Cookie header
 * (../http/cookies.ts, `withoutCookies`), when the key holds the whole
 * header (`varyBy` has `cookie`) and the request is a GET or a HEAD, the
 * requests whose pages are stored. Called before the application runs: the
 * key is then made of the header it sees, and a page built for one visitor
 * cannot hold another's ignored cookies, which Varnish gets by stripping
 * them before it hashes. Headers set by code as a list are joined as Node
 * joins Cookie lines.
 *
 * @param ctx - the request
 * @param ignored - the `cacheIgnoreCookies` option as resolved; undefined does nothing
 * @param varyBy - the `varyBy` option as resolved
 */
export function leaveOutIgnoredCookies(ctx: Context, ignored: RegExp | undefined, varyBy: readonly string[]): void {
  if (ignored === undefined || !varyBy.includes('cookie') || !isGetOrHead(ctx.method)) return;
  const headers = ctx.req.headers;
  const header = headers.cookie as string | string[] | undefined;
  if (header === undefined) return;
  const kept = withoutCookies(typeof header === 'string' ? header : header.join('; '), ignored);
  if (kept === header) return;
  if (kept === undefined) delete headers.cookie;
  else headers.cookie = kept;
}

/** What the key is made of, besides the request. */
export interface KeyOptions {
  /** The `cacheKey` option: a string, or a function of the context; empty falls back to the generated key. */
  cacheKey: string | ((ctx: Context) => string | undefined | null) | undefined;
  /** Lowercased request header names joining the key. */
  varyBy: readonly string[];
  /** The application's name in the key (the `cacheNamespace` option); this process's default when absent. */
  cacheNamespace?: string;
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

/** The namespace last framed, and its field: one namespace per middleware is the rule. */
let lastNamespace: string | undefined;
let namespaceField = '';

/** The namespace as the first field of the material: two applications sharing a store never share entries. */
function namespaced(namespace: string): string {
  if (namespace !== lastNamespace) {
    lastNamespace = namespace;
    namespaceField = field(namespace);
  }
  return namespaceField;
}

/**
 * The encoding the generated key hashes; exported for tests, which check
 * that distinct requests never encode alike.
 *
 * @param ctx - the request
 * @param varyBy - lowercased header names
 * @returns app, scheme, host, path and query as length-prefixed fields, then per varyBy entry its name and a
 *   value (or `-`), and for `cookie:NAME` the signature's value too; {@link ambiguousCookie} when a
 *   `cookie:NAME` cannot be read one way only
 */
export function keyMaterial(
  ctx: Context,
  varyBy: readonly string[],
  namespace: string = appIdentity,
): string | typeof ambiguousCookie {
  const plain = encode(ctx, varyBy, plainField, namespace);
  // A lone surrogate stays lone in the material (a field's text is framed by digits and ':'), so one test covers every field.
  return plain !== ambiguousCookie && loneSurrogate.test(plain) ? encode(ctx, varyBy, field, namespace) : plain;
}

function encode(
  ctx: Context,
  varyBy: readonly string[],
  as: (text: string) => string,
  namespace: string,
): string | typeof ambiguousCookie {
  let material = `${namespaced(namespace)}${as(ctx.protocol)}${as(ctx.host)}${as(ctx.path)}${as(ctx.querystring)}`;
  const optional = (value: string | undefined): string => (value === undefined ? '-' : as(value));
  for (const name of varyBy) {
    if (!name.startsWith('cookie:')) {
      material += as(name) + optional(requestHeaderLines(ctx, name));
      continue;
    }
    const read = readCookie(requestHeaderLines(ctx, 'cookie'), name.slice(7));
    if (read === ambiguousCookie) return read;
    material += as(name) + optional(read.value) + optional(read.signature);
  }
  return material;
}

/**
 * The cache key of this request.
 *
 * @param ctx - the request
 * @param options - `cacheKey` and `varyBy`
 * @returns the `cacheKey` option (or what its function returned) as given when
 *   it is a non-empty string, else `buffer:` + 32 hex digits; {@link ambiguousCookie}
 *   when the generated key would hold a cookie readers could take differently
 * @throws whatever a `cacheKey` function throws (the caller bypasses the cache)
 * @example
 * cacheKeyOf(ctx, { cacheKey: undefined, varyBy: ['cookie'] }) // 'buffer:9e107d9d372bb6826bd81d3542a419d6'
 */
export function cacheKeyOf(ctx: Context, options: KeyOptions): string | typeof ambiguousCookie {
  const custom = typeof options.cacheKey === 'function' ? options.cacheKey(ctx) : options.cacheKey;
  if (typeof custom === 'string' && custom !== '') return custom;
  const namespace = options.cacheNamespace ?? appIdentity;
  if (!signatureStandsForKey(ctx)) return generatedKey(ctx, options.varyBy, namespace);
  return keyBySignature(ctx, options.varyBy, namespace);
}

function generatedKey(ctx: Context, varyBy: readonly string[], namespace: string): string | typeof ambiguousCookie {
  const material = keyMaterial(ctx, varyBy, namespace);
  if (material === ambiguousCookie) return material;
  if (material.length > recentLongest) return `buffer:${md5(material)}`;
  return recent.get(material) ?? keep(material, `buffer:${md5(material)}`);
}

/**
 * Puts `key` into {@link recent} under `by` and returns it; past its byte
 * budget the table starts afresh (a plain bound, no LRU bookkeeping on the
 * hot path).
 */
function keep(by: string, key: string): string {
  recentBytes += by.length * 2 + key.length + keyEntryOverhead;
  if (recentBytes > keyTableBytesMax) {
    recent.clear();
    recentBytes = by.length * 2 + key.length + keyEntryOverhead;
  }
  recent.set(by, key);
  return key;
}

/** Bytes each of the two key tables ({@link recent}, the signature tables together) is charged at most. */
export const keyTableBytesMax = 1024 * 1024;
/** Bytes charged per entry beyond its strings: the Map's slot and the key string's header. */
export const keyEntryOverhead = 64;

/** Keys of recent requests by their material: a miss of the signature table costs a Map lookup instead of an MD5. */
const recent = new Map<string, string>();
/** What {@link recent} is charged: material at two bytes a character (it may hold any header text), key, overhead. */
let recentBytes = 0;
const recentLongest = 512;

/**
 * Keys of recent requests by their signature: the request's own url, its
 * Host header and its varyBy header values (undefined when absent), each
 * looked up in the Map the previous one found, under the varyBy names. No
 * string is built per request: framing the fields into one string and
 * hashing it cost a cache hit more than the lookup in the store.
 *
 * The signature decides the key only while Koa's getters for protocol,
 * host, path and query are unshadowed (then they are functions of the
 * socket, the url and Host), with `app.proxy` off (X-Forwarded-Host and
 * X-Forwarded-Proto would count) and over HTTP/1 (`:authority` would):
 * otherwise the key is made from the getters. The scheme, then only the
 * socket's, picks one of two tables, so it costs no lookup and no string.
 */
type Level = Map<string | undefined, Level | string | typeof ambiguousCookie>;
const bySignature = new Map<string, Level>();
const bySignatureTls = new Map<string, Level>();
/** Bytes charged to the signature tables (fields at two bytes a character, a Map per new level, the key); past {@link keyTableBytesMax} they start afresh. */
let signatureBytes = 0;

/** The varyBy names as one string, for the last list seen: one list per middleware is the rule. */
let lastVaryBy: readonly string[] = [];
let lastTableNamespace: string | undefined;
/** The namespace and varyBy names framed, for the last pair seen: the signature tables are kept apart by it. */
let lastNames = '';

/**
 * The request's value at `depth` of the signature: url, Host, then each
 * varyBy header; for `cookie:NAME` the whole Cookie header, which decides the
 * cookie's value without cutting a string out of it.
 */
function signatureField(ctx: Context, varyBy: readonly string[], depth: number): string | undefined {
  if (depth === 0) return ctx.req.url ?? '';
  if (depth === 1) return ctx.req.headers.host;
  const name = varyBy[depth - 2]!;
  return requestHeaderLines(ctx, name.startsWith('cookie:') ? 'cookie' : name);
}

function keyBySignature(ctx: Context, varyBy: readonly string[], namespace: string): string | typeof ambiguousCookie {
  if (varyBy !== lastVaryBy || namespace !== lastTableNamespace) {
    lastVaryBy = varyBy;
    lastTableNamespace = namespace;
    // Framed by length, as the key material is: the names of a per-response varyBy are not checked.
    lastNames = namespaced(namespace) + varyBy.map((name) => `${name.length}:${name}`).join('');
  }
  const depth = varyBy.length + 2;
  const table = (ctx.req.socket as { encrypted?: boolean }).encrypted === true ? bySignatureTls : bySignature;
  let level = table.get(lastNames);
  for (let i = 0; level !== undefined && i < depth; i++) {
    const found = level.get(signatureField(ctx, varyBy, i));
    if (typeof found === 'string' || typeof found === 'symbol') return found;
    level = found;
  }
  // Not known: made from the getters, and remembered unless the fields are long.
  const key = generatedKey(ctx, varyBy, namespace);
  let length = 0;
  for (let i = 0; i < depth; i++) length += signatureField(ctx, varyBy, i)?.length ?? 0;
  if (length > recentLongest) return key;
  // Charged as if every level were new: a bound, not an exact count.
  const charged = length * 2 + (typeof key === 'string' ? key.length : 0) + depth * levelOverhead;
  signatureBytes += charged;
  if (signatureBytes > keyTableBytesMax) {
    bySignature.clear();
    bySignatureTls.clear();
    signatureBytes = charged;
  }
  let at = table.get(lastNames);
  if (at === undefined) table.set(lastNames, (at = new Map()));
  for (let i = 0; i < depth - 1; i++) {
    const field = signatureField(ctx, varyBy, i);
    let next = at.get(field) as Level | undefined;
    if (next === undefined) at.set(field, (next = new Map()));
    at = next;
  }
  at.set(signatureField(ctx, varyBy, depth - 1), key);
  return key;
}

/** Bytes charged per level of a signature: a Map of its own and a slot in its parent. */
const levelOverhead = 160;

/** Bytes the two key tables are charged now (each at most {@link keyTableBytesMax}). */
export function keyTablesBytes(): { recent: number; signatures: number } {
  return { recent: recentBytes, signatures: signatureBytes };
}

/** Request properties whose getters the signature stands for. */
const derived = ['protocol', 'host', 'path', 'querystring', 'url'] as const;

/** Koa's request prototype, as the `koa` this package resolves ships it; undefined when it cannot be loaded. */
const koaRequest = ((): object | undefined => {
  try {
    return createRequire(import.meta.url)('koa/lib/request.js') as object;
  } catch {
    return undefined;
  }
})();

/** By an application's request prototype (`app.request`): whether its prototype chain resolves them to Koa's own getters. */
const plainChains = new WeakMap<object, boolean>();

/** True when the signature may stand for the key of this request (see {@link bySignature}). */
function signatureStandsForKey(ctx: Context): boolean {
  const request: object = ctx.request;
  const appRequest = Object.getPrototypeOf(request) as object | null;
  if (appRequest === null || koaRequest === undefined) return false;
  let plain = plainChains.get(appRequest);
  if (plain === undefined) {
    plain = derived.every((name) => {
      const found = descriptorOf(Object.getPrototypeOf(appRequest) as object | null, name);
      return found !== undefined && found.get === Object.getOwnPropertyDescriptor(koaRequest, name)?.get;
    });
    plainChains.set(appRequest, plain);
  }
  // Checked on every request, written out (a loop over the names costs more on the hit path:
  // docs/decisions/0009-hit-path-is-measured.md): an application may define its own getter on
  // app.request, or on one request, at any time.
  return (
    plain &&
    !ctx.app.proxy &&
    ctx.req.httpVersionMajor < 2 &&
    !Object.hasOwn(request, 'protocol') &&
    !Object.hasOwn(request, 'host') &&
    !Object.hasOwn(request, 'path') &&
    !Object.hasOwn(request, 'querystring') &&
    !Object.hasOwn(request, 'url') &&
    !Object.hasOwn(appRequest, 'protocol') &&
    !Object.hasOwn(appRequest, 'host') &&
    !Object.hasOwn(appRequest, 'path') &&
    !Object.hasOwn(appRequest, 'querystring') &&
    !Object.hasOwn(appRequest, 'url')
  );
}

/** The descriptor `name` resolves to on `object`'s prototype chain. */
function descriptorOf(object: object | null, name: string): PropertyDescriptor | undefined {
  for (let o = object; o !== null; o = Object.getPrototypeOf(o) as object | null) {
    const found = Object.getOwnPropertyDescriptor(o, name);
    if (found !== undefined) return found;
  }
  return undefined;
}
