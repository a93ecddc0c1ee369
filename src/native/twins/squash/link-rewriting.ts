/**
 * Stage: link rewriting (native/core/squash/link_rewriting.{h,cc}, where the
 * rules are explained): a double-quoted <a href> or <img src> to this site
 * becomes root-relative, or "?query" for the request path, only when its
 * scheme is the request's or absent ("//"), and when its value is at most LINK_LOOKAHEAD bytes long.
 */
import { BACKSLASH, CR, DQUOTE, HASH, LF, QUESTION, SLASH, TAB, ascii, ieq, lower } from './bytes.ts';
import { ANCHOR } from './html-tables.ts';
import { LINK_LOOKAHEAD, SCHEME_HTTP, SCHEME_HTTPS, type SquashState } from './state.ts';

const HTTP = ascii('http://');
const HTTPS = ascii('https://');
const HREF = ascii('href');
const SRC = ascii('src');

/** Whether the attribute name `src[an0, an1)` is the link of a tag of class `link`: href of <a>, src of <img>. */
export function namesLink(s: SquashState, link: number, an0: number, an1: number): boolean {
  const n = an1 - an0;
  if ((link & ANCHOR) !== 0) return n === 4 && ieq(s.src, an0, HREF, 4);
  return n === 3 && ieq(s.src, an0, SRC, 3);
}

/** Where the authority of the link at `v` (n bytes) starts when its scheme is the request's or absent; else 0. */
function authorityStart(s: SquashState, v: number, n: number): number {
  if (n >= 7 && ieq(s.src, v, HTTP, 7)) return s.scheme === SCHEME_HTTP ? 7 : 0;
  if (n >= 8 && ieq(s.src, v, HTTPS, 8)) return s.scheme === SCHEME_HTTPS ? 8 : 0;
  if (n >= 2 && s.src[v] === SLASH && s.src[v + 1] === SLASH) return 2;
  return 0;
}

// What became of a double-quoted link value (link_rewriting.h, `link_outcome`).
/** Written through its closing quote, shortened when it points at this site. */
export const LINK_CLOSED = 0;
/** Unterminated: copied to the end of the input (a final window only). */
export const LINK_OPEN = 1;
/** Its closing quote may be in the next window: nothing written. */
export const LINK_HELD = 2;
/** Longer than LINK_LOOKAHEAD: never shortened; nothing written. */
export const LINK_PLAIN = 3;

/**
 * A double-quoted link value at the cursor (on its opening quote), rewritten. Its closing quote is looked for
 * within LINK_LOOKAHEAD bytes (a stream must decide a link before it writes it), past the first `clear` bytes,
 * which are known to hold none.
 */
export function rewriteQuoted(s: SquashState, clear: number): number {
  const p = s.p;
  const v0 = p + 1;
  const longEnough = s.len - v0 > LINK_LOOKAHEAD;
  const limit = longEnough ? v0 + LINK_LOOKAHEAD + 1 : s.len;
  const from = Math.min(Math.max(p + clear, v0), limit);
  let v1 = s.src.indexOf(DQUOTE, from);
  if (v1 < 0 || v1 >= limit) v1 = limit;
  if (v1 === limit) {
    if (longEnough) return LINK_PLAIN;
    if (!s.final) return LINK_HELD;
    s.copyTo(s.len);
    return LINK_OPEN;
  }
  s.dst[s.o++] = DQUOTE;
  rewriteUrl(s, v0, v1 - v0);
  s.dst[s.o++] = DQUOTE;
  s.p = v1 + 1;
  return LINK_CLOSED;
}

function rewriteUrl(s: SquashState, v: number, n: number): void {
  const src = s.src;
  const host = s.host;
  const path = s.path;
  const a = authorityStart(s, v, n);
  if (a === 0) return s.emit(v, n);
  let j = a;
  while (j < n) {
    const b = src[v + j];
    if (b === SLASH || b === QUESTION || b === HASH) break;
    j++;
  }
  if (j - a !== host.length) return s.emit(v, n);
  for (let i = 0; i < host.length; i++) if (lower(src[v + a + i]!) !== lower(host[i]!)) return s.emit(v, n);
  let k = j;
  while (k < n && src[v + k] !== QUESTION && src[v + k] !== HASH) k++;
  if (k < n && src[v + k] === QUESTION && path.length !== 0) {
    let same: boolean;
    if (k === j) {
      same = path.length === 1 && path[0] === SLASH;
    } else {
      same = k - j === path.length;
      for (let i = 0; same && i < path.length; i++) same = src[v + j + i] === path[i];
    }
    if (same) return s.emit(v + k, n - k);
  }
  if (j === k) {
    s.dst[s.o++] = SLASH;
  } else {
    // A path that alone would read as another host ("//x", "/\x", "/<tab>/x") stays whole.
    let q = j + 1;
    while (q < n && (src[v + q] === TAB || src[v + q] === LF || src[v + q] === CR)) q++;
    if (q < n && (src[v + q] === SLASH || src[v + q] === BACKSLASH)) return s.emit(v, n);
  }
  s.emit(v + j, n - j);
}
