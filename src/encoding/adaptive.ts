/**
 * Adaptive compression by body temperature
 * (docs/decisions/0023-adaptive-compression-by-body-temperature.md). A body is cold the first time it is
 * seen, and always when it changes on every request: it gets the coding the
 * client accepts whose cold level is cheapest, by the levels of
 * coding-table.ts, whose bytes stay at or below what koa-compress would
 * send. It is hot from its second sighting (its cold bytes are already in
 * the representation memo, or a cache entry is hit again): then it is
 * recompressed once at its coding's smallest setting, off the request path
 * (upgrades.ts), and later requests get those bytes.
 *
 * This file holds the pure decisions: the server preference for each
 * temperature, the levels, and which representation of the current content
 * a client already holds (If-None-Match), whatever coding it was sent in.
 */
import { codingTable, coldOrder, hotOrder } from './coding-table.ts';
import { defaultEncodings } from '../http/codings.ts';
import { parseIfNoneMatch } from '../http/conditional.ts';
import { negotiate, type Coding } from '../http/negotiate.ts';

/** The server preference for cold and for hot bodies. */
export interface TemperatureOrders {
  readonly cold: readonly Coding[];
  readonly hot: readonly Coding[];
}

/** `offered` sorted by the position of each coding in `order`; codings the table does not name keep their place after it. */
function sortedBy(offered: readonly Coding[], order: readonly string[]): Coding[] {
  const rank = (coding: Coding): number => {
    const at = order.indexOf(coding);
    return at === -1 ? order.length + offered.indexOf(coding) : at;
  };
  return [...offered].sort((a, b) => rank(a) - rank(b));
}

// Computed once per `encodings` array: the resolved options hand the same array to every request.
const ordersOf = new WeakMap<readonly Coding[], TemperatureOrders>();

/**
 * The server preference for each temperature. When the user set `encodings`
 * (any array other than the default one), their order wins for both; the
 * client's q-values always come first.
 *
 * @param encodings - the offered codings, in the user's order
 */
export function temperatureOrders(encodings: readonly Coding[]): TemperatureOrders {
  let orders = ordersOf.get(encodings);
  if (orders === undefined) {
    orders =
      encodings === defaultEncodings
        ? { cold: sortedBy(encodings, coldOrder), hot: sortedBy(encodings, hotOrder) }
        : { cold: encodings, hot: encodings };
    ordersOf.set(encodings, orders);
  }
  return orders;
}

/** The cold level of `coding`: the table's, else the fixed level for it. */
export function coldLevel(coding: Coding, fixed: Readonly<Record<Coding, number>>): number {
  return codingTable[coding]?.cold ?? fixed[coding];
}

/** The hot level of `coding`: the table's, else the fixed level for it. */
export function hotLevel(coding: Coding, fixed: Readonly<Record<Coding, number>>): number {
  return codingTable[coding]?.hot ?? fixed[coding];
}

/** The coding a hot body should be sent in for this Accept-Encoding, or undefined when none. */
export function hotCoding(acceptEncoding: string | undefined, orders: TemperatureOrders): Coding | undefined {
  const { coding } = negotiate(acceptEncoding, orders.hot);
  return coding === 'identity' ? undefined : coding;
}

/** A representation the client holds: its coding, and the level named in its tag (hot bytes only). */
export interface Held {
  readonly coding: Coding | 'identity';
  readonly hotLevel: number | undefined;
}

const identityRefused = /(?:^|,)\s*(?:identity|\*)\s*;\s*q\s*=\s*0(?:\.0{0,3})?\s*(?:,|$)/i;

/** True when the client, by its Accept-Encoding, may be sent `coding` (RFC 9110 12.5.3). */
function acceptable(acceptEncoding: string | undefined, coding: Coding | 'identity'): boolean {
  if (coding === 'identity') {
    if (acceptEncoding === undefined || !identityRefused.test(acceptEncoding)) return true;
    // `*;q=0` refuses identity only when identity is not listed with a weight of its own.
    return /(?:^|,)\s*identity\s*(?:;\s*q\s*=\s*(?:1|0?\.\d*[1-9]))?\s*(?:,|$)/i.test(acceptEncoding);
  }
  return negotiate(acceptEncoding, [coding]).coding === coding;
}

/**
 * The representation of the current content (entity MD5 `md5`) that
 * If-None-Match names, in a coding the client accepts and the server offers,
 * or undefined. The tags are the ones koa-buffer generates: `"<md5>"`,
 * `"<md5>-<coding>"` and, for hot bytes, `"<md5>-<coding><level>"`.
 *
 * A tag in a coding the client does not accept is not taken: a shared cache
 * revalidating for a br-only client may list the gzip variant it stores for
 * others, and must not be told to serve it to this client.
 *
 * @param ifNoneMatch - the request header
 * @param md5 - lowercase hex MD5 of the current entity
 * @param acceptEncoding - the request's Accept-Encoding
 * @param offered - the codings this response may use
 * @param hotLevelOf - the hot level of a coding, undefined when levels are fixed (no hot tags then)
 */
export function heldRepresentation(
  ifNoneMatch: string,
  md5: string,
  acceptEncoding: string | undefined,
  offered: readonly Coding[],
  hotLevelOf: ((coding: Coding) => number) | undefined,
): Held | undefined {
  const tags = parseIfNoneMatch(ifNoneMatch);
  if (tags === '*') return undefined; // `*` matches whatever is sent: the usual path answers it
  const prefix = `"${md5}`;
  for (const tag of tags) {
    if (!tag.startsWith(prefix)) continue;
    const rest = tag.slice(prefix.length, -1);
    if (rest === '') {
      if (acceptable(acceptEncoding, 'identity')) return { coding: 'identity', hotLevel: undefined };
      continue;
    }
    const named = /^-([a-z]+)(\d*)$/.exec(rest);
    const coding = offered.find((c) => c === named?.[1]);
    if (!named || coding === undefined || !acceptable(acceptEncoding, coding)) continue;
    if (named[2] === '') return { coding, hotLevel: undefined };
    if (hotLevelOf !== undefined && Number(named[2]) === hotLevelOf(coding))
      return { coding, hotLevel: hotLevelOf(coding) };
  }
  return undefined;
}
