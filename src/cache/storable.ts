/**
 * Which finished responses may be stored, and so handed to the requests that
 * waited for them: a 200 that sets no cookie, is neither
 * `no-store` nor `private`, varies on nothing outside `varyBy`
 * (Accept-Encoding aside: every hit is compressed for its own client), and
 * is no larger than `cacheMaxSize`.
 */
import type { OutgoingHttpHeaders } from 'node:http';
import { parseCacheControl } from '../http/cache-control.ts';
import { headerText } from '../http/headers.ts';
import { fieldsMax } from './vary-marker.ts';
import type { SentHead } from '../http/sent-head.ts';
import type { CacheEntry } from './entry.ts';
import type { Lifetime } from './lifetime.ts';

/** The response the STORE step hands over: the optimised, uncompressed entity. */
export interface StoreableResponse {
  status: number;
  /** Response headers, lowercased names, without Content-Encoding and Content-Length (they describe one representation). */
  headers: Record<string, string | string[]>;
  /** The optimised, uncompressed entity. */
  body: Buffer;
}

/** Why a response is not stored, as a Cache-Status detail token. */
export type NotStorable = 'STATUS' | 'SET-COOKIE' | 'NO-STORE' | 'PRIVATE' | 'VARY' | 'TOO-LARGE';

/** What storability depends on, besides the response. */
export interface StorableOptions {
  /** Lowercased header names that are part of the key. */
  varyBy: readonly string[];
  /** Bytes. */
  cacheMaxSize: number;
  /** Seconds. */
  cacheDuration: number;
}

/** Headers that describe one delivery, not the entity: never stored, never replayed. */
const perDelivery = new Set([
  'content-length',
  'content-encoding',
  'transfer-encoding',
  'connection',
  'keep-alive',
  'x-cache',
  'cache-status',
  'date',
]);

/** The comma-separated members of a header, trimmed and lowercased. */
export function members(value: string | string[] | undefined): string[] {
  return (headerText(value) ?? '')
    .split(',')
    .map((m) => m.trim().toLowerCase())
    .filter((m) => m !== '');
}

/**
 * Why `response` may not be stored, or undefined when it may.
 *
 * @param response - the headers (lowercased names) and body STORE hands over
 * @param options - `varyBy` and `cacheMaxSize`
 */
export function notStorableReason(response: StoreableResponse, options: StorableOptions): NotStorable | undefined {
  if (response.status !== 200) return 'STATUS';
  const headers = response.headers;
  if (headers['set-cookie'] !== undefined) return 'SET-COOKIE';
  // The first of the two the response names is the reason given. A directive may carry a field
  // list (private="set-cookie"); the response is still not for a shared cache.
  for (const name of parseCacheControl(headers['cache-control']).directives.keys()) {
    if (name === 'no-store') return 'NO-STORE';
    if (name === 'private') return 'PRIVATE';
  }
  // A Vary beyond the key is a secondary key (vary-marker.ts), but `*` and an unbounded list are not storable.
  if (secondaryFields(headers.vary, options.varyBy) === undefined) return 'VARY';
  if (response.body.length > options.cacheMaxSize) return 'TOO-LARGE';
  return undefined;
}

/**
 * Why the head as sent may not be stored (../http/sent-head.ts), though
 * the response the action left could be: an outer middleware set a cookie,
 * said private, varied, or changed the status (a 304 VALIDATE made of a
 * 200 is the same page).
 *
 * @param head - the status and headers going out
 * @param response - the status and entity the action left
 * @param options - `varyBy` and `cacheMaxSize`
 */
export function notStorableAsSent(
  head: SentHead,
  response: { status: number; body: Buffer },
  options: StorableOptions,
): NotStorable | undefined {
  const sameStatus = head.status === response.status || (head.status === 304 && response.status === 200);
  if (!sameStatus) return 'STATUS';
  return notStorableReason({ status: response.status, headers: asStrings(head.headers), body: response.body }, options);
}

/** Node's outgoing headers as the strings storability reads. */
function asStrings(headers: OutgoingHttpHeaders): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const [name, value] of Object.entries(headers))
    if (value !== undefined) out[name] = Array.isArray(value) ? value.map(String) : String(value);
  return out;
}

/**
 * True when varyBy names cookies one by one (`cookie:NAME`): the user has
 * said which cookies the page depends on, so a `Vary: Cookie` (which session
 * middleware sends) is covered by the key.
 */
export function keysOnCookies(varyBy: readonly string[]): boolean {
  for (const name of varyBy) if (name.startsWith('cookie:')) return true;
  return false;
}

/**
 * The request headers a response varies on beyond the key (its varyBy, and
 * the Cookie when the key holds the cookies that count): sorted and without
 * repeats, so two builds that list them differently share the variants;
 * undefined when they cannot be a secondary key (`Vary: *`, or more than
 * `fieldsMax` fields).
 */
export function secondaryFields(vary: string | string[] | undefined, varyBy: readonly string[]): string[] | undefined {
  const fields = new Set<string>();
  for (const name of varyFields(vary)) {
    if (name === '*') return undefined;
    if (!varyBy.includes(name) && !(name === 'cookie' && keysOnCookies(varyBy))) fields.add(name);
  }
  return fields.size > fieldsMax ? undefined : [...fields].sort();
}

/**
 * The request headers a response varies on, Accept-Encoding and
 * Available-Dictionary left out: the entry holds the uncompressed entity,
 * and koa-buffer negotiates the coding (a dictionary's included) per hit.
 */
export function varyFields(vary: string | string[] | undefined): string[] {
  return members(vary).filter((name) => name !== 'accept-encoding' && name !== 'available-dictionary');
}

/**
 * The entry to store for a storable response: its headers as strings without
 * the per-delivery ones, the entity, its own expiry and its stale windows.
 *
 * @param response - what STORE handed over
 * @param lifetime - its TTL and stale windows, seconds (see lifetime.ts)
 * @param now - ms since the epoch
 */
export function entryOf(response: StoreableResponse, lifetime: Lifetime, now: number = Date.now()): CacheEntry {
  const headers: Record<string, string | string[]> = {};
  // no-cache="field, …": those fields may not be answered without revalidation (RFC 9111 5.2.2.4), so they are not kept.
  const unkept = parseCacheControl(response.headers['cache-control']).directives.get('no-cache');
  const withheld = unkept === undefined ? undefined : members(unkept);
  for (const [name, value] of Object.entries(response.headers)) {
    if (perDelivery.has(name) || value === undefined || withheld?.includes(name)) continue;
    // Node keeps a number given to setHeader as a number; the entry format wants strings.
    headers[name] = Array.isArray(value) ? value.map(String) : String(value);
  }
  return {
    status: response.status,
    headers,
    body: response.body,
    created: now,
    expires: now + lifetime.ttl * 1000,
    staleWhileRevalidate: lifetime.staleWhileRevalidate * 1000,
    staleIfError: lifetime.staleIfError * 1000,
  };
}
