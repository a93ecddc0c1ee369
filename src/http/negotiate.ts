/**
 * Content-coding negotiation by Accept-Encoding q-values (RFC 9110 12.5.3):
 * the client's highest q wins, the server's preference order breaks ties,
 * `*` stands for every coding not listed, `identity` is acceptable unless
 * refused with `identity;q=0` (or `*;q=0` without an `identity` entry), and
 * `x-gzip` is a synonym of gzip. Malformed entries are ignored, never fatal.
 *
 * test/http/differential.test.ts holds the choice against negotiator, as
 * koa-compress calls it (with the server's order) and as Koa's
 * ctx.acceptsEncodings calls it (negotiator 0.6). From the latter it
 * differs, on well-formed headers, in three ways: among codings the client
 * weighs alike, it takes an exact name before `*` and then the client's
 * listing order, where RFC 9110 12.5.3 gives preference by q-value only, so
 * the server chooses among equals (here by `encodings`, identity last); it
 * does not take `x-gzip` for gzip (RFC 9110 8.4.1.3 says a recipient
 * should); and it reads only a lowercase `q`, where the weight's name is
 * case-insensitive (RFC 9110 12.4.2, 5.6.6).
 */

/** The codings koa-buffer can produce. */
export type Coding = 'br' | 'zstd' | 'gzip' | 'deflate';

/** All of them, in the default server preference: deflate last, as every client that takes it also takes gzip. */
export const allCodings: readonly Coding[] = ['br', 'zstd', 'gzip', 'deflate'];

/** The outcome of a negotiation. */
export interface Negotiated {
  /** The coding to send; `identity` for none. */
  coding: Coding | 'identity';
  /** Why identity was chosen, for the debug log (undefined when a coding was). */
  reason?: string;
}

/** Maps a name the options or a client may use to a coding koa-buffer knows. */
export function canonicalCoding(name: string): Coding | undefined {
  const lower = name.toLowerCase();
  if (lower === 'br' || lower === 'zstd' || lower === 'gzip' || lower === 'deflate') return lower;
  if (lower === 'x-gzip') return 'gzip';
  return undefined;
}

const token = /^[!#$%&'*+.^_`|~0-9a-z-]+$/;
const qvalue = /^(?:0(?:\.\d{0,3})?|1(?:\.0{0,3})?)$/;

/** q-values by lowercased coding name; entries that do not parse are left out. */
function parseAcceptEncoding(header: string): Map<string, number> {
  const weights = new Map<string, number>();
  for (const element of header.split(',')) {
    const parts = element.split(';');
    const name = parts[0]!.trim().toLowerCase();
    if (name === '' || !token.test(name)) continue;
    let q = 1;
    let valid = true;
    for (let i = 1; i < parts.length; i++) {
      const param = parts[i]!.trim();
      const eq = param.indexOf('=');
      if (eq === -1 || param.slice(0, eq).trim().toLowerCase() !== 'q') continue; // other parameters mean nothing here
      const value = param.slice(eq + 1).trim();
      if (!qvalue.test(value)) valid = false;
      else q = Number(value);
    }
    if (!valid) continue;
    // A name listed twice keeps its highest weight: the client accepts it at least that much.
    const canonical = name === 'x-gzip' ? 'gzip' : name;
    weights.set(canonical, Math.max(weights.get(canonical) ?? 0, q));
  }
  return weights;
}

function weakestListed(weights: Map<string, number>): number {
  let weakest = 1;
  for (const q of weights.values()) if (q > 0 && q < weakest) weakest = q;
  return weakest;
}

function decide(header: string | undefined, offered: readonly Coding[]): Negotiated {
  // No Accept-Encoding: RFC 9110 allows any coding, but identity is what every
  // client understands, and what caches and older proxies expect.
  if (header === undefined) return { coding: 'identity', reason: 'no Accept-Encoding' };
  if (offered.length === 0) return { coding: 'identity', reason: 'no encodings offered' };
  const weights = parseAcceptEncoding(header);
  const star = weights.get('*');
  let best: Coding | undefined;
  let bestQ = 0;
  for (const coding of offered) {
    const q = weights.get(coding) ?? star ?? 0;
    if (q > bestQ) {
      best = coding;
      bestQ = q;
    }
  }
  // identity not listed and no `*`: as weak as the weakest coding the client
  // listed (as negotiator does), so listing any coding at all means "rather
  // that than nothing", and the server order decides among equals.
  const identityQ = weights.get('identity') ?? star ?? weakestListed(weights);
  if (best === undefined)
    return {
      coding: 'identity',
      reason: identityQ === 0 ? 'no acceptable coding; identity refused but sent anyway' : 'no acceptable coding',
    };
  // The client prefers the plain body over every coding it accepts.
  if (identityQ > bestQ) return { coding: 'identity', reason: 'identity preferred by q-value' };
  return { coding: best };
}

// Clients send a handful of distinct Accept-Encoding values; remembering the
// answer avoids parsing on every request. Bounded, so garbage cannot grow it.
const remembered = new Map<string, Negotiated>();
const rememberedMax = 512;

/**
 * Picks the content coding for a response.
 *
 * @param header - the request's Accept-Encoding, `undefined` when absent
 * @param offered - the codings this response may use, in server preference order
 * @returns the coding, or `identity` with the reason
 * @example negotiate('gzip;q=0.8, br', ['br', 'zstd', 'gzip']) // { coding: 'br' }
 */
export function negotiate(header: string | undefined, offered: readonly Coding[]): Negotiated {
  // Long values are rare and would make long keys: decide them afresh.
  if (header === undefined || header.length > 256) return decide(header, offered);
  const key = `${offered.join(',')}\n${header}`;
  let answer = remembered.get(key);
  if (answer === undefined) {
    answer = decide(header, offered);
    if (remembered.size >= rememberedMax) remembered.clear();
    remembered.set(key, answer);
  }
  return answer;
}
