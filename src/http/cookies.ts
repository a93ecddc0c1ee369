/**
 * One cookie's value as the application reads it, for a `cookie:NAME` key
 * (docs/decisions/0037-cookie-keys-read-what-koa-reads.md).
 *
 * Koa's `ctx.cookies.get(NAME)` (the `cookies` package) takes the first
 * `;`-separated part that, after spaces (not tabs), starts with `NAME=`
 * exactly, its value up to the next `;` untrimmed; when the value starts
 * with a quote, `cookies` 0.9 (Koa 2.15 and later) drops its first and last
 * character, and 0.8 (Koa 2.13 and 2.14) keeps them. Other readers differ:
 * the `cookie` package and browsers trim tabs and spaces around the name,
 * some split on `,` too. A key that reads one way while the page was built
 * from another lets a crafted header (`session =; session=ATTACKER`) file
 * the attacker's page under the key of visitors without a session. So the
 * value is read exactly as `cookies` reads it, and a header on which any
 * reading could find another value bypasses the cache: one that names the
 * cookie more than once in any spelling, names it where `cookies` does not
 * look, or holds a value that trimming or unquoting would change (a quoted
 * one included, which Koa itself reads two ways).
 *
 * A signed read (`ctx.cookies.get(NAME, {signed: true})`, as koa-session
 * reads its cookie) also reads `NAME.sig`, by the same rule, so its value is
 * part of the reading and held to the same rules.
 */

/** The reading of one cookie and its signature; undefined where `ctx.cookies.get` returns undefined. */
export interface CookieReading {
  readonly value: string | undefined;
  readonly signature: string | undefined;
}

/** No such cookie, nor its signature. */
const absent: CookieReading = Object.freeze({ value: undefined, signature: undefined });

/** What {@link readCookie} answers for a header on which readers could differ. */
export const ambiguousCookie: unique symbol = Symbol('koa-buffer: ambiguous cookie');

/** White space any reader might trim: ASCII controls and space, and whatever JavaScript's trim takes. */
const whiteSpace = /\s/;
function isSpace(text: string, at: number): boolean {
  return text.charCodeAt(at) <= 0x20 || whiteSpace.test(text[at]!);
}

/** `text` without the white space (and, with `quotes`, the quotes) at its ends. */
function trimmed(text: string, quotes: boolean): string {
  let start = 0;
  let end = text.length;
  while (start < end && (isSpace(text, start) || (quotes && text[start] === '"'))) start++;
  while (end > start && (isSpace(text, end - 1) || (quotes && text[end - 1] === '"'))) end--;
  return text.slice(start, end);
}

/** The part of a `;`-separated piece `cookies` compares with `NAME=`: after its leading spaces. */
function strictStart(part: string): number {
  let at = 0;
  while (part.charCodeAt(at) === 0x20) at++;
  return at;
}

/** How a trimming reader unquotes: only a value quoted at both ends. */
function unquotedLoosely(value: string): string {
  const bare = trimmed(value, false);
  return bare.length >= 2 && bare[0] === '"' && bare[bare.length - 1] === '"' ? bare.slice(1, -1) : bare;
}

/**
 * The value `ctx.cookies.get(name)` reads from `header` (undefined when it
 * finds none), or {@link ambiguousCookie} when another reading could differ.
 */
function readOne(header: string, name: string): string | undefined | typeof ambiguousCookie {
  let strict: string | undefined;
  let named = 0;
  for (const part of header.split(';')) {
    const at = strictStart(part);
    if (strict === undefined && part.startsWith(name, at) && part.charCodeAt(at + name.length) === 0x3d) {
      strict = part.slice(at + name.length + 1);
    }
    // Every spelling of the name any reader could take, `,`-separated pieces included.
    if (part.includes(name))
      for (const piece of part.split(',')) {
        const equals = piece.indexOf('=');
        if (trimmed(equals < 0 ? piece : piece.slice(0, equals), true) === name) named++;
      }
  }
  if (named === 0) return undefined;
  if (named > 1 || strict === undefined) return ambiguousCookie;
  // Koa 2.15 and later read a value that starts with a quote without its first and last character, earlier
  // Koa 2 whole: the key cannot know which the page was built from.
  if (strict[0] === '"') return ambiguousCookie;
  return strict === unquotedLoosely(strict) ? strict : ambiguousCookie;
}

/**
 * Reads cookie `name` and its signature `name.sig` as Koa does.
 *
 * @param header - the request's Cookie header as Node gives it (repeated lines joined with '; '), undefined when absent
 * @param name - the cookie name (case-sensitive, as Koa reads it)
 * @returns the reading, or {@link ambiguousCookie} when a reader could find another value (the request then bypasses the cache)
 * @example
 * readCookie('a=1; session=abc', 'session') // { value: 'abc', signature: undefined }
 * readCookie('session =; session=ATTACKER', 'session') // ambiguousCookie
 */
export function readCookie(header: string | undefined, name: string): CookieReading | typeof ambiguousCookie {
  // `cookies` reads nothing from an empty header.
  if (header === undefined || header === '') return absent;
  // A line feed never survives Node's parser: the header was set by code, or was an array joined with one.
  if (header.includes('\n')) return ambiguousCookie;
  if (!header.includes(name)) return absent;
  const value = readOne(header, name);
  if (value === ambiguousCookie) return value;
  const signature = readOne(header, `${name}.sig`);
  if (signature === ambiguousCookie) return signature;
  return value === undefined && signature === undefined ? absent : { value, signature };
}

/**
 * The cookies a `cacheIgnoreCookies: 'analytics'` leaves out: those the
 * usual analytics and advertising scripts set for themselves and read in
 * the browser, named as each vendor's own list of its cookies names them
 * (a trailing `*` is a prefix): Google Analytics' "cookie usage on
 * websites" (GA4 and Universal Analytics, `__utm*` of ga.js), the Google
 * Ads conversion linker (`_gcl_*`), Meta's `_fbp`/`_fbc` parameters,
 * Hotjar's cookie information, Microsoft Clarity's cookie list and UET
 * (`_uet*`), the Mixpanel and Segment (analytics.js) libraries, Matomo's
 * FAQ (`_pk_*`), HubSpot's cookie list and TikTok's pixel (`_ttp`). Varnish's
 * cookie tutorials strip the same kind before hashing.
 */
export const analyticsCookies: readonly string[] = Object.freeze([
  '_ga',
  '_ga_*',
  '_gid',
  '_gat',
  '_gat_*',
  '_gac_*',
  '_dc_gtm_*',
  '__utm*',
  '_gcl_*',
  '_fbp',
  '_fbc',
  '_hj*',
  '_clck',
  '_clsk',
  '_uetsid',
  '_uetvid',
  'mp_*',
  'ajs_*',
  '_pk_*',
  '__hstc',
  '__hssc',
  '__hssrc',
  'hubspotutk',
  '_ttp',
]);

/**
 * The Cookie header without the cookies `ignored` names, for a key that
 * holds the whole header and an application that must not see them. It is
 * cut by the rule {@link readCookie} reads by: at each `;`, as `cookies`
 * splits it, each piece kept or left out whole. A piece is left out when its
 * name, in any spelling a reader could take (white space and quotes around
 * it trimmed), is an ignored one, so no reader finds an ignored cookie
 * afterwards; a piece `cookies` reads as another cookie keeps its text, so
 * every other cookie reads as it did. The spaces that led the first piece
 * kept go, which `cookies` skips anyway: a visitor without the ignored
 * cookies sends the same header.
 *
 * @param header - the request's Cookie header as Node gives it
 * @param ignored - matches the names left out (the whole name)
 * @returns the header, the very string when nothing was left out, undefined when nothing is left
 * @example withoutCookies('_ga=GA1.2.3; session=abc', /^_ga$/) // 'session=abc'
 */
export function withoutCookies(header: string, ignored: RegExp): string | undefined {
  let kept: string | undefined;
  let left = false;
  for (const piece of header.split(';')) {
    const equals = piece.indexOf('=');
    if (ignored.test(trimmed(equals < 0 ? piece : piece.slice(0, equals), true))) left = true;
    else kept = kept === undefined ? piece : `${kept};${piece}`;
  }
  if (!left) return header;
  if (kept === undefined) return undefined;
  let start = 0;
  while (kept.charCodeAt(start) === 0x20) start++;
  return start === kept.length ? undefined : kept.slice(start);
}
