/**
 * Durations as the options take them: a number of seconds, or a string such
 * as `'10 minutes'`, `'1.5 h'`, `'30s'`, `'2 days'` (CHI's duration words, as
 * the Perl original's cache_duration accepts).
 */

const unitSeconds: Record<string, number> = {
  ms: 0.001,
  millisecond: 0.001,
  milliseconds: 0.001,
  s: 1,
  sec: 1,
  secs: 1,
  second: 1,
  seconds: 1,
  m: 60,
  min: 60,
  mins: 60,
  minute: 60,
  minutes: 60,
  h: 3600,
  hr: 3600,
  hrs: 3600,
  hour: 3600,
  hours: 3600,
  d: 86_400,
  day: 86_400,
  days: 86_400,
  w: 604_800,
  week: 604_800,
  weeks: 604_800,
};

/**
 * Seconds in `value`, or `undefined` when it is not a finite, non-negative
 * duration. A bare numeric string counts as seconds.
 *
 * @example parseDuration('10 minutes') // 600
 */
export function parseDuration(value: unknown): number | undefined {
  if (typeof value === 'number') return Number.isFinite(value) && value >= 0 ? value : undefined;
  if (typeof value !== 'string') return undefined;
  const match = /^\s*(\d+(?:\.\d+)?|\.\d+)\s*([a-z]*)\s*$/i.exec(value);
  if (!match) return undefined;
  const amount = Number(match[1]);
  const unit = match[2]!.toLowerCase();
  const factor = unit === '' ? 1 : unitSeconds[unit];
  return factor === undefined ? undefined : amount * factor;
}

/** One week in seconds: a bare-number duration longer than this is taken for milliseconds. */
export const weekSeconds = 604_800;

/** A numeric string without a unit, which parseDuration reads as seconds as it reads a number. */
const bareNumber = /^\s*(?:\d+(?:\.\d+)?|\.\d+)\s*$/;

/**
 * The number of a duration given without a unit that reads like
 * milliseconds, or undefined. Durations are seconds, where koa-cash's maxAge
 * and most of JavaScript's timers are milliseconds, so `60000` meant as a
 * minute would keep a page for 16.7 hours without a word. A bare number (or
 * a numeric string without a unit) reads like milliseconds when it is over
 * a week, or a whole thousand from 10000 on (10 seconds and up written in
 * milliseconds): seconds that long are written with a unit (`'30 days'`),
 * and nobody means 16 hours 40 minutes by 60000 seconds. A string with a
 * unit never does, however long.
 *
 * @example readsAsMilliseconds(60000) // 60000
 * @example readsAsMilliseconds(86400) // undefined: a day, as seconds are written
 * @example readsAsMilliseconds('30 days') // undefined
 */
export function readsAsMilliseconds(value: unknown): number | undefined {
  if (typeof value === 'string' && !bareNumber.test(value)) return undefined;
  if (typeof value !== 'number' && typeof value !== 'string') return undefined;
  const seconds = parseDuration(value);
  if (seconds === undefined) return undefined;
  return seconds > weekSeconds || (seconds >= 10_000 && seconds % 1000 === 0) ? seconds : undefined;
}

/** A number as a duration string writes it: no grouping, a few decimals at most. */
const plain = new Intl.NumberFormat('en-US', { useGrouping: false, maximumFractionDigits: 6 });
const oneDecimal = new Intl.NumberFormat('en-US', { useGrouping: false, maximumFractionDigits: 1 });

/** Units a duration is read back in, largest first; a year is not one parseDuration takes, so it is only for reading. */
const readingUnits: ReadonlyArray<readonly [string, number]> = [
  ['year', 365 * 86_400],
  ['day', 86_400],
  ['hour', 3600],
  ['minute', 60],
  ['second', 1],
];

/** An amount and its unit; an absurd amount (1e300 seconds is a value, too) in a few digits, not three hundred. */
function counted(amount: number, unit: string, format: Intl.NumberFormat = plain): string {
  const text = amount < 1e15 ? format.format(amount) : amount.toPrecision(3);
  return `${text} ${text === '1' ? unit : `${unit}s`}`;
}

/** The unit `seconds` reads best in: hours up to two days (16.7 hours reads better than 0.7 days). */
function readingUnit(seconds: number): readonly [string, number] {
  if (seconds >= 365 * 86_400) return readingUnits[0]!;
  if (seconds >= 2 * 86_400) return readingUnits[1]!;
  if (seconds >= 3600) return readingUnits[2]!;
  if (seconds >= 60) return readingUnits[3]!;
  return readingUnits[4]!;
}

/**
 * Roughly how long `seconds` is, for a reader.
 *
 * @example roughDuration(60000) // '16.7 hours'
 */
export function roughDuration(seconds: number): string {
  const [unit, size] = readingUnit(seconds);
  return counted(seconds / size, unit, oneDecimal);
}

/**
 * `seconds` as a duration string in the largest unit that holds it whole,
 * which parseDuration reads back.
 *
 * @example exactDuration(60) // '1 minute'
 * @example exactDuration(700) // '700 seconds'
 */
export function exactDuration(seconds: number): string {
  for (const [unit, size] of readingUnits.slice(1, -1))
    if (seconds >= size && seconds % size === 0) return counted(seconds / size, unit);
  return counted(seconds, 'second');
}

/**
 * `seconds` rounded to a whole number of the unit {@link roughDuration}
 * reads it in (days for years), as a duration string parseDuration reads.
 *
 * @example roundedDuration(60000) // '17 hours'
 */
export function roundedDuration(seconds: number): string {
  const [unit, size] = seconds >= 365 * 86_400 ? readingUnits[1]! : readingUnit(seconds);
  return counted(Math.max(1, Math.round(seconds / size)), unit);
}
