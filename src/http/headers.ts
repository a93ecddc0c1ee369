/**
 * Header values as the rest of the code reads them: a field repeated in a
 * message is one list, its lines joined by a comma and a space (RFC 9110
 * 5.3), and the one test of a method that carries validators and caching.
 */
import type { Context } from 'koa';

/** A header value as one string, or undefined when absent; repeated fields joined as RFC 9110 5.3 joins them. */
export function headerText(value: number | string | readonly string[] | undefined): string | undefined {
  if (value === undefined) return undefined;
  return typeof value === 'object' ? value.join(', ') : String(value);
}

/** A response header as one string; undefined when absent (Koa 3's response.get returns what Node stored). */
export function responseHeader(ctx: Context, name: string): string | undefined {
  return headerText(ctx.res.getHeader(name));
}

/** True for GET and HEAD: the methods whose 200s carry validators, get 304s and may be stored. */
export function isGetOrHead(method: string): boolean {
  return method === 'GET' || method === 'HEAD';
}

/**
 * A request header as one string, repeated fields joined by a line feed,
 * which no field value can hold: unambiguous, for cache keys and for
 * comparing two requests' values. Undefined when absent.
 */
export function requestHeaderLines(ctx: Context, name: string): string | undefined {
  const value = ctx.request.headers[name];
  return Array.isArray(value) ? value.join('\n') : value;
}
