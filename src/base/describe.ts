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

/** Characters of a string, and of the whole text, {@link shownValue} shows before it cuts with `…`. */
const shownStringMax = 60;
const shownMax = 100;
/** Entries of a list or keys of an object {@link shownValue} shows. */
const shownEntriesMax = 5;
/** Keys whose values are not shown: what an options object may carry that must stay out of logs and errors. */
const secretKey = /pass|secret|token|auth|cred|private|apikey|api_key/i;
/** Query parameters whose values are not shown. */
const secretParameter = /pass|secret|token|auth|key/i;

const cut = (text: string, max: number): string => (text.length > max ? `${text.slice(0, max)}…` : text);

/**
 * `text` with the credentials a connection URL may carry hidden: the
 * password of `scheme://user:password@host` (the whole user part when it
 * has no colon, as some hosted Redis services put a token there), and the
 * value of a `password=`, `token=` or like query parameter. Linear in the
 * length of `text`, whatever it holds.
 *
 * @example maskSecrets('redis://:hunter2@cache:6379/0') // 'redis://:***@cache:6379/0'
 */
export function maskSecrets(text: string): string {
  let shown = text;
  const scheme = shown.indexOf('://');
  if (scheme !== -1) {
    const start = scheme + 3;
    let end = shown.length;
    for (const stop of ['/', '?', '#']) {
      const at = shown.indexOf(stop, start);
      if (at !== -1 && at < end) end = at;
    }
    // The last @ of the authority: a password may hold an unescaped @.
    const at = shown.lastIndexOf('@', end - 1);
    if (at >= start) {
      const colon = shown.indexOf(':', start);
      const user = colon !== -1 && colon < at ? `${shown.slice(start, colon)}:***` : '***';
      shown = `${shown.slice(0, start)}${user}${shown.slice(at)}`;
    }
  }
  // The name is matched apart from the secret words, so that no run of letters is scanned more than once.
  return shown.replace(/([?&;])([a-z_]*)=[^&#;]*/gi, (whole, mark: string, name: string) =>
    secretParameter.test(name) ? `${mark}${name}=***` : whole,
  );
}

/**
 * A key of an object as code would write it: bare when it is an
 * identifier, else quoted and cut, so that a name holding a line break
 * cannot forge a log line.
 */
export const shownKey = (key: string): string => (/^[A-Za-z_$][\w$]*$/.test(key) ? key : JSON.stringify(cut(key, 30)));

function shownPart(value: unknown, depth: number): string {
  if (typeof value === 'string') return JSON.stringify(cut(maskSecrets(value), shownStringMax));
  if (typeof value === 'bigint') return `${value}n`;
  if (typeof value === 'symbol') return cut(value.toString(), shownStringMax);
  if (typeof value === 'function') return 'a function';
  if (value === null || typeof value !== 'object') return String(value);
  if (Array.isArray(value)) {
    if (depth > 1) return 'an array';
    const length = value.length;
    const parts: string[] = [];
    for (let i = 0; i < Math.min(length, shownEntriesMax); i++) parts.push(shownPart(value[i], depth + 1));
    if (length > shownEntriesMax) parts.push('…');
    return `[${parts.join(', ')}]`;
  }
  if (value instanceof RegExp) return cut(String(value), shownStringMax);
  const proto: unknown = Object.getPrototypeOf(value);
  if (proto !== Object.prototype && proto !== null) {
    const name: unknown = (proto as { constructor?: { name?: unknown } }).constructor?.name;
    return typeof name === 'string' && name !== '' ? `a ${cut(name, 30)}` : 'an object';
  }
  if (depth > 1) return 'an object';
  const keys = Object.keys(value);
  const parts = keys.slice(0, shownEntriesMax).map((key) => {
    // A getter is not called: reading the value must not run the application's code.
    const own = Object.getOwnPropertyDescriptor(value, key);
    const shown = secretKey.test(key) ? '***' : own && 'value' in own ? shownPart(own.value, depth + 1) : 'a getter';
    return `${shownKey(key)}: ${shown}`;
  });
  if (keys.length > shownEntriesMax) parts.push('…');
  return parts.length === 0 ? '{}' : `{ ${parts.join(', ')} }`;
}

/**
 * A value an option was given, for the `%{value}` of an option error or a
 * refusal's log line: short (strings, lists and objects are cut, with `…`),
 * written as code would write it (`"10 minutes"`, `60000`, `["br", 5]`,
 * `{ br: 12 }`), an instance by its class (`a Map`), and never a secret: a
 * URL's password and the values of keys such as `password` or `token` are
 * shown as `***`. Calls no getter, and never throws (a proxy whose traps
 * throw is "a value that cannot be read").
 *
 * @example shownValue({ url: 'redis://:pw@h', password: 'pw' }) // '{ url: "redis://:***@h", password: *** }'
 */
export function shownValue(value: unknown): string {
  try {
    // A symbol's description or a class name may hold a line break: escaped, it cannot forge a log line.
    let shown = '';
    for (const c of shownPart(value, 0)) {
      const code = c.charCodeAt(0);
      const control = code < 0x20 || code === 0x7f || code === 0x2028 || code === 0x2029;
      shown += control ? `\\u${code.toString(16).padStart(4, '0')}` : c;
    }
    return cut(shown, shownMax);
  } catch {
    return 'a value that cannot be read';
  }
}
