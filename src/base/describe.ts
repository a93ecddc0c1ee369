/**
 * How values and errors read in koa-buffer's messages, each wording written
 * once. They differ on purpose: each matches the messages it serves, which
 * tests and callers match word for word.
 */

/** The message of anything thrown, for a log line or a `%{error}` placeholder. */
export function errorText(error: unknown): string {
  if (error instanceof Error) return error.message;
  return String(error);
}

/** A received value by its kind, for "…, got …" (a corrupt cache entry): `a Buffer`, `the string "x"`, `number 5`. */
export function describeValue(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'object') return value.constructor?.name ? `a ${value.constructor.name}` : 'an object';
  if (typeof value === 'function') return 'a function';
  if (typeof value === 'string')
    return `the string ${JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value)}`;
  return `${typeof value} ${String(value)}`;
}

/** A received value as it would be written in code, for a `%{value}` placeholder: `"x"`, `5n`, `[object Object]`. */
export function valueLiteral(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'bigint') return `${value}n`;
  try {
    return String(value);
  } catch {
    // No usable toString (a null prototype, a throwing method): naming its kind is enough, and must not throw itself.
    try {
      return Object.prototype.toString.call(value);
    } catch {
      return 'a value that cannot be read'; // a proxy whose traps throw
    }
  }
}

/**
 * A received value as Node's argument errors word it ("received …"), word
 * for word as the native binding's `Describe` (native/binding/errors.h), so
 * one test suite checks both implementations.
 */
export function describeReceived(value: unknown): string {
  if (value === undefined) return 'undefined';
  if (value === null) return 'null';
  if (typeof value === 'string') return `the string '${value}'`;
  if (typeof value === 'number') return `the number ${String(value)}`;
  return `type ${typeof value === 'function' ? 'function' : typeof value}`;
}
