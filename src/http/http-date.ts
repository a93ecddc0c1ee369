/**
 * HTTP dates (RFC 9110 5.6.7) as a cache must read them in `Expires` and
 * `Date`: the preferred IMF-fixdate and the two obsolete forms a recipient
 * still accepts (RFC 850 and asctime), always in GMT. `Date.parse` is not
 * used: it reads asctime in the server's own time zone, accepts ISO
 * strings, bare years and numbers no HTTP date can be, and an `Expires` it
 * misread would keep a page the origin said was stale.
 */

const months = ['jan', 'feb', 'mar', 'apr', 'may', 'jun', 'jul', 'aug', 'sep', 'oct', 'nov', 'dec'];

// Sun, 06 Nov 1994 08:49:37 GMT
const imfFixdate = /^[a-z]{3}, (\d{2}) ([a-z]{3}) (\d{4}) (\d{2}):(\d{2}):(\d{2}) gmt$/;
// Sunday, 06-Nov-94 08:49:37 GMT
const rfc850 = /^[a-z]{6,9}, (\d{2})-([a-z]{3})-(\d{2}) (\d{2}):(\d{2}):(\d{2}) gmt$/;
// Sun Nov  6 08:49:37 1994
const asctime = /^[a-z]{3} ([a-z]{3}) ([ \d]\d) (\d{2}):(\d{2}):(\d{2}) (\d{4})$/;

/**
 * Milliseconds since the epoch of an HTTP date, or undefined when `value`
 * is none of the three forms (or names a day that does not exist).
 *
 * @param value - a header value; surrounding white space is ignored, case is not significant
 * @example
 * httpDateMs('Sun, 06 Nov 1994 08:49:37 GMT') // 784111777000
 * httpDateMs('0') // undefined: an invalid Expires, which RFC 9111 5.3 reads as "already expired"
 */
export function httpDateMs(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const text = value.trim().toLowerCase();
  let m = imfFixdate.exec(text);
  if (m !== null) return utc(+m[3]!, m[2]!, +m[1]!, +m[4]!, +m[5]!, +m[6]!);
  m = rfc850.exec(text);
  if (m !== null) return utc(twoDigitYear(+m[3]!), m[2]!, +m[1]!, +m[4]!, +m[5]!, +m[6]!);
  m = asctime.exec(text);
  if (m !== null) return utc(+m[6]!, m[1]!, +m[2]!.trim(), +m[3]!, +m[4]!, +m[5]!);
  return undefined;
}

/**
 * RFC 9110 5.6.7: a two-digit year more than 50 years in the future is
 * read as the most recent past year with those digits.
 */
function twoDigitYear(yy: number): number {
  const now = new Date().getUTCFullYear();
  let year = Math.floor(now / 100) * 100 + yy;
  if (year > now + 50) year -= 100;
  return year;
}

function utc(
  year: number,
  month: string,
  day: number,
  hour: number,
  minute: number,
  second: number,
): number | undefined {
  const index = months.indexOf(month);
  if (index < 0 || hour > 23 || minute > 59 || second > 60) return undefined;
  const ms = Date.UTC(year, index, day, hour, minute, Math.min(second, 59));
  // 31 Feb rolls over into March: not a date.
  return new Date(ms).getUTCDate() === day ? ms : undefined;
}
