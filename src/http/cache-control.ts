/**
 * Cache-Control (RFC 9111 5.2), read by one parser wherever koa-buffer
 * reads it: the response's lifetime and stale windows (cache/lifetime.ts),
 * whether it may be stored (cache/storable.ts), a request's refusal of a
 * stored response and its Pragma (cache/bypass.ts), and no-transform
 * (pipeline/switches.ts). Four hand parsers used to read it four ways.
 *
 * The value is a list (RFC 9110 5.6.1) of `token [ "=" ( token /
 * quoted-string ) ]`. Names are compared case-insensitively (RFC 9111 5.2),
 * so they are lowercased; an argument in a quoted-string is unquoted, its
 * quoted-pairs undone (RFC 9110 5.6.4), and a comma inside it separates
 * nothing. Recipients are asked to be lenient, and so is this parser: white
 * space is trimmed around names and arguments, empty elements are skipped,
 * and an argument that is not one well-formed quoted-string runs to the next
 * comma and loses a quote at either end (`max-age="5` is 5, as every parser
 * this one replaced read it). When a directive is repeated, the first
 * occurrence wins (RFC 9111 4.2.1: "the first occurrence should be used").
 *
 * Delta-seconds (RFC 9111 1.2.2) are digits only, and a value beyond 2^31
 * is taken as 2^31. A directive's seconds are those of its first
 * occurrence that carries delta-seconds: `max-age=abc, max-age=3` is 3, as
 * the lifetime always read it, rather than falling back to the options.
 *
 * test/http/cache-control.test.ts holds this parser against
 * http-cache-semantics (the parser a shared cache in Node usually relies
 * on) over generated headers. The two differ where that package departs
 * from the RFCs, each shown there: it keeps the last occurrence of a
 * repeated directive (RFC 9111 4.2.1 says the first), keeps names in the
 * case they were sent (RFC 9111 5.2: case-insensitive), splits at every
 * comma and cuts an argument at a second `=` even inside a quoted-string,
 * leaves quoted-pairs escaped (RFC 9110 5.6.4), and records an empty
 * element as a directive named '' (RFC 9110 5.6.1: ignored).
 */
import { headerText } from './headers.ts';

/**
 * The greatest delta-seconds value: RFC 9111 1.2.2 has a cache take a value
 * beyond the greatest integer it can represent as 2^31 (68 years).
 */
export const maxDeltaSeconds = 2 ** 31;

/** A Cache-Control value, parsed. */
export interface CacheControl {
  /**
   * Each directive by lowercased name, in the order of first occurrence,
   * with its first occurrence's argument: the text (unquoted), or
   * undefined for a directive given without `=`.
   */
  readonly directives: ReadonlyMap<string, string | undefined>;
  /**
   * The directives that carry delta-seconds, by lowercased name, in the
   * order found: the first such occurrence's value, at most {@link maxDeltaSeconds}.
   */
  readonly seconds: ReadonlyMap<string, number>;
}

const none: CacheControl = { directives: new Map(), seconds: new Map() };

/** JavaScript's white space, as `trim()` takes it beyond ASCII: the parsers this one replaced trimmed with it. */
const wideSpace = /\s/;

function isSpace(code: number): boolean {
  return code === 0x20 || (code >= 0x09 && code <= 0x0d) || (code > 0x7f && wideSpace.test(String.fromCharCode(code)));
}

/**
 * The end of the quoted-string opening at `start` (the index past its
 * closing quote), and its content with quoted-pairs undone; undefined when
 * it is never closed.
 */
function quotedString(text: string, start: number): { end: number; content: string } | undefined {
  const close = text.indexOf('"', start + 1);
  if (close === -1) return undefined;
  const backslash = text.indexOf('\\', start + 1);
  // The common case: no quoted-pair before the closing quote.
  if (backslash === -1 || backslash > close) return { end: close + 1, content: text.slice(start + 1, close) };
  let content = '';
  for (let at = start + 1; at < text.length; at++) {
    const c = text[at]!;
    if (c === '"') return { end: at + 1, content };
    if (c === '\\' && at + 1 < text.length) content += text[++at];
    else content += c;
  }
  return undefined;
}

/** An argument that is no well-formed quoted-string: trimmed, less one quote at either end. */
function bareArgument(raw: string): string {
  let value = raw.trim();
  if (value.startsWith('"')) value = value.slice(1);
  if (value.endsWith('"')) value = value.slice(0, -1);
  return value;
}

/** True when `text` is delta-seconds: one or more digits (RFC 9111 1.2.2). */
function isDeltaSeconds(text: string): boolean {
  if (text === '') return false;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code < 0x30 || code > 0x39) return false;
  }
  return true;
}

/** The directives of one value. */
function parse(text: string): CacheControl {
  const directives = new Map<string, string | undefined>();
  let seconds: Map<string, number> | undefined;
  let at = 0;
  while (at <= text.length) {
    let comma = text.indexOf(',', at);
    if (comma === -1) comma = text.length;
    let equals = text.indexOf('=', at);
    if (equals > comma) equals = -1;
    let argument: string | undefined;
    let next = comma + 1;
    if (equals !== -1) {
      let open = equals + 1;
      while (open < comma && isSpace(text.charCodeAt(open))) open++;
      const quoted = text.charCodeAt(open) === 0x22 ? quotedString(text, open) : undefined;
      let after = quoted === undefined ? -1 : quoted.end;
      while (after !== -1 && after < text.length && isSpace(text.charCodeAt(after))) after++;
      if (quoted !== undefined && (after === text.length || text.charCodeAt(after) === 0x2c)) {
        argument = quoted.content;
        next = after + 1;
      } else argument = bareArgument(text.slice(equals + 1, comma));
    }
    const name = text
      .slice(at, equals === -1 ? comma : equals)
      .trim()
      .toLowerCase();
    if (name !== '') {
      if (!directives.has(name)) directives.set(name, argument);
      if (argument !== undefined && isDeltaSeconds(argument) && seconds?.has(name) !== true) {
        const n = Number(argument);
        (seconds ??= new Map()).set(name, n > maxDeltaSeconds ? maxDeltaSeconds : n);
      }
    }
    at = next;
  }
  return { directives, seconds: seconds ?? none.seconds };
}

/**
 * Values parsed lately: an application sends a handful of distinct
 * Cache-Control values, and browsers a handful more, and several readers
 * look at one response's. Bounded (values of at most {@link rememberedLongest}
 * characters, {@link rememberedMax} of them, then it starts afresh), so
 * values a client makes up cannot grow it.
 */
const remembered = new Map<string, CacheControl>();
const rememberedMax = 64;
const rememberedLongest = 256;

/**
 * Parses a Cache-Control value (or Pragma, whose directives have the same
 * form: RFC 9111 5.4). The answer may be shared with other callers: it is
 * not to be changed.
 *
 * @param value - the header: a string, the lines of a repeated header (joined as RFC 9110 5.3 joins them), or undefined
 * @returns the directives and their delta-seconds
 * @example
 * parseCacheControl('Max-Age=60, private="set-cookie, x-token"').directives
 * // Map { 'max-age' => '60', 'private' => 'set-cookie, x-token' }
 */
export function parseCacheControl(value: string | readonly string[] | undefined): CacheControl {
  const text = headerText(value);
  if (text === undefined || text === '') return none;
  if (text.length > rememberedLongest) return parse(text);
  let parsed = remembered.get(text);
  if (parsed === undefined) {
    parsed = parse(text);
    if (remembered.size >= rememberedMax) remembered.clear();
    remembered.set(text, parsed);
  }
  return parsed;
}
