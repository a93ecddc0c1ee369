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
