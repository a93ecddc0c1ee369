/**
 * The value checks the option rows are made of: what `buffer()` accepts.
 * Each takes `unknown` and never throws on a plain value (a proxy may
 * still throw; the callers that face application values catch).
 */
import { parseDuration } from '../base/duration.ts';
import { levelRange } from '../http/codings.ts';
import { canonicalCoding, type Coding } from '../http/negotiate.ts';

/** A flag: booleans, or 0 and 1 as in the Perl original. */
export type Flag = boolean | 0 | 1;

/** A content coding name as the `encodings` option takes it. */
export type EncodingName = Coding | 'x-gzip';

export const isNil = (v: unknown): v is undefined | null => v === undefined || v === null;

export const isFlag = (v: unknown): boolean => isNil(v) || typeof v === 'boolean' || v === 0 || v === 1;

export const hasMethods = (v: unknown, ...names: string[]): boolean =>
  v !== null &&
  (typeof v === 'object' || typeof v === 'function') &&
  names.every((n) => typeof (v as Record<string, unknown>)[n] === 'function');

export const isNonNegativeInteger = (v: unknown): v is number =>
  typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;

// Node keeps a timer of at most 2^31 - 1 ms; a longer one fires after 1 ms,
// so a timeout beyond it would end every wait at once.
const maxTimerSeconds = 2_147_483;

export const isTimerSeconds = (v: unknown): boolean =>
  typeof v === 'number' && Number.isFinite(v) && v > 0 && v <= maxTimerSeconds;

export const isPositiveDuration = (v: unknown): boolean => {
  const seconds = parseDuration(v);
  return seconds !== undefined && seconds > 0;
};

/** A host name or IPv4 address, or an IPv6 address in brackets; no port. */
export const hostName = /^(?:[a-z0-9_](?:[a-z0-9_.-]*[a-z0-9_])?|\[[0-9a-f:.]+\])$/i;

/** `cookie:NAME`, NAME a cookie name (an RFC 6265 token). */
export const cookieEntry = /^cookie:[!#$%&'*+.^_`|~0-9a-z-]+$/i;

export const headerName = /^[!#$%&'*+.^_`|~0-9a-z-]+$/i;

/** A cacheIgnoreCookies name: a cookie name (an RFC 6265 token), or the start of one followed by `*`. */
export const ignoredCookieName = /^[!#$%&'+.^_`|~0-9a-z-]+\*?$/i;

export const isCacheUrl = (v: string): boolean => /^sqlite:.+$/.test(v) || /^rediss?:\/\/.+$/.test(v);

/** True for compressionLevels: levels by coding name (x-gzip counts as gzip), each whole and in its coding's range. */
export function isLevels(v: unknown): boolean {
  if (isNil(v)) return true;
  if (typeof v !== 'object' || Array.isArray(v)) return false;
  return Object.entries(v as Record<string, unknown>).every(([name, level]) => {
    const coding = canonicalCoding(name);
    if (!coding) return false;
    const [min, max] = levelRange[coding];
    return typeof level === 'number' && Number.isInteger(level) && level >= min && level <= max;
  });
}

/** True for a plain object literal (or one made with Object.create(null)). */
export function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return false;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}
