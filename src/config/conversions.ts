/**
 * The conversions several option rows share: from a value `buffer()` or
 * `ctx.state.buffer` accepted to the value the pipeline reads.
 */
import { parseDuration } from '../base/duration.ts';
import { codingAvailable, defaultEncodings } from '../http/codings.ts';
import { analyticsCookies } from '../http/cookies.ts';
import { wildcardsPattern } from '../http/wildcard.ts';
import { allCodings, canonicalCoding, type Coding } from '../http/negotiate.ts';
import { cookieEntry, isNil } from './checks.ts';
import type { ResolveFrom } from './row.ts';

/** A flag given as undefined means off ("undef in options" in the Perl original); one not given keeps its default. */
export const resolveFlag = (value: unknown, { given, default: fallback }: ResolveFrom<boolean>): boolean =>
  given ? Boolean(value) : fallback;

/** Seconds from a number or a duration string; undefined and null keep the default. */
export const resolveDuration = (value: unknown, { default: fallback }: ResolveFrom<number>): number =>
  isNil(value) ? fallback : parseDuration(value)!;

/** Seconds per response; what does not parse (undefined included) is the default. */
export const perResponseDuration = (value: unknown, fallback: number): number => parseDuration(value) ?? fallback;

/** Lowercased host names; the non-strings of a list the check never saw are dropped. */
export const hostSet = (hosts: readonly unknown[]): ReadonlySet<string> =>
  new Set(hosts.filter((h): h is string => typeof h === 'string').map((h) => h.toLowerCase()));

/** A varyBy entry as the key uses it: a header name lowercased; in `cookie:NAME` only `cookie` (cookie names are case-sensitive). */
export const varyEntry = (h: string): string => (cookieEntry.test(h) ? `cookie:${h.slice(7)}` : h.toLowerCase());

/** The names of cacheIgnoreCookies ('analytics' for the preset) as one RegExp; undefined for none. */
export const ignoredCookies = (value: readonly string[] | 'analytics' | undefined | null): RegExp | undefined => {
  const names = value === 'analytics' ? analyticsCookies : (value ?? []);
  return names.length === 0 ? undefined : wildcardsPattern(names);
};

/** Levels keyed by canonical coding (x-gzip counts as gzip); non-numbers are dropped. */
export function canonicalLevels(levels: unknown): Partial<Record<Coding, number>> {
  const out: Partial<Record<Coding, number>> = {};
  if (levels === null || typeof levels !== 'object') return out;
  for (const [name, level] of Object.entries(levels)) {
    const coding = canonicalCoding(name);
    if (coding && typeof level === 'number' && Number.isFinite(level)) out[coding] = level;
  }
  return out;
}

/**
 * The codings offered: those asked for (all of them when none were), canonical,
 * each once, less those this process cannot make, each of which is logged.
 */
export function resolveEncodings(
  value: unknown,
  { given, logger, messages }: ResolveFrom<readonly Coding[]>,
): readonly Coding[] {
  const requested = given ? (value as string[]).map((e) => canonicalCoding(e)!) : [...allCodings];
  let encodings: readonly Coding[] = [];
  for (const coding of requested) {
    if (encodings.includes(coding)) continue;
    if (codingAvailable(coding)) encodings = [...encodings, coding];
    else logger.warn(messages.text('log_encoding_unavailable', { name: coding }));
  }
  // The one default array: adaptive compression orders it by temperature, a user's list keeps its order.
  return given ? encodings : defaultEncodings;
}

/** Per response the codings are not filtered by what is installed: the compress step logs a coding it cannot make. */
export const perResponseEncodings = (value: unknown): readonly Coding[] =>
  Array.isArray(value)
    ? [
        ...new Set(
          value.map((e) => (typeof e === 'string' ? canonicalCoding(e) : undefined)).filter((c) => c !== undefined),
        ),
      ]
    : [];
