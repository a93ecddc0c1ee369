/**
 * Conditional GET (docs/decisions/0003-etag-semantics.md): If-None-Match is
 * compared with the response's ETag by weak comparison (RFC 9110 8.8.3.2)
 * and, when present, alone decides; If-Modified-Since counts only when there
 * is no ETag or trustLastModified is on. Malformed headers are ignored.
 */

/** The parsed If-None-Match: `*`, or the opaque tags (without `W/`) it lists. */
export type IfNoneMatch = '*' | string[];

/**
 * Parses If-None-Match leniently: `*`, or a comma-separated list of
 * `"tag"` / `W/"tag"`; anything malformed between the commas is skipped. An
 * unquoted token is kept as written, as many clients echo unquoted tags.
 */
export function parseIfNoneMatch(header: string): IfNoneMatch {
  const tags: string[] = [];
  let i = 0;
  const n = header.length;
  while (i < n) {
    const c = header.charCodeAt(i);
    if (c === 0x20 || c === 0x09 || c === 0x2c) {
      i++;
      continue;
    } // space, tab, comma
    if (c === 0x2a) {
      // '*'
      const next = nextComma(header, i + 1);
      if (header.slice(i + 1, next).trim() === '') return '*';
      i = next;
      continue;
    }
    let start = i;
    if (header.startsWith('W/', i)) start = i + 2;
    if (header.charCodeAt(start) === 0x22) {
      // '"': an opaque tag, commas allowed inside
      const close = header.indexOf('"', start + 1);
      if (close === -1) break; // unterminated: the rest is garbage
      tags.push(header.slice(start, close + 1));
      i = close + 1;
      continue;
    }
    const next = nextComma(header, i);
    const bare = header.slice(start, next).trim();
    if (bare !== '' && !bare.includes('"')) tags.push(`"${bare}"`);
    i = next;
  }
  return tags;
}

function nextComma(s: string, from: number): number {
  const comma = s.indexOf(',', from);
  return comma === -1 ? s.length : comma;
}

/** The opaque part of an ETag, for weak comparison: `W/"x"` and `"x"` compare equal. */
function opaque(etag: string): string {
  const tag = etag.trim();
  const bare = tag.startsWith('W/') ? tag.slice(2) : tag;
  return bare.startsWith('"') ? bare : `"${bare}"`;
}

/** True when If-None-Match names the response's ETag (or is `*`). */
export function ifNoneMatchMatches(header: string, etag: string | undefined): boolean {
  const parsed = parseIfNoneMatch(header);
  // `*` matches whenever a current representation exists, which a 200 is.
  if (parsed === '*') return true;
  if (etag === undefined || etag === '') return false;
  const mine = opaque(etag);
  return parsed.includes(mine);
}

/** Seconds since the epoch of an HTTP date, or undefined when it does not parse. */
export function httpDateSeconds(value: string | undefined): number | undefined {
  if (value === undefined || value === '') return undefined;
  const ms = Date.parse(value);
  return Number.isNaN(ms) ? undefined : Math.floor(ms / 1000);
}

/** What decides a conditional GET. */
export interface ValidatorState {
  ifNoneMatch: string | undefined;
  ifModifiedSince: string | undefined;
  etag: string | undefined;
  lastModified: string | undefined;
  trustLastModified: boolean;
}

/**
 * The reason a 304 is due, or undefined when the full response must be sent.
 * The caller has already checked GET/HEAD, status 200 and generate304.
 */
export function notModifiedReason(v: ValidatorState): string | undefined {
  // RFC 9110 13.1.3: with If-None-Match present, If-Modified-Since is ignored.
  if (v.ifNoneMatch !== undefined) {
    return ifNoneMatchMatches(v.ifNoneMatch, v.etag) ? 'If-None-Match matches' : undefined;
  }
  // An ETag outranks a date that describes code, not data.
  const hasEtag = v.etag !== undefined && v.etag !== '';
  if (hasEtag && !v.trustLastModified) return undefined;
  const since = httpDateSeconds(v.ifModifiedSince);
  const modified = httpDateSeconds(v.lastModified);
  if (since === undefined || modified === undefined) return undefined;
  return modified <= since ? 'not modified since If-Modified-Since' : undefined;
}
