/**
 * Stage: comments (native/core/squash/comments.{h,cc}, where the rules are
 * explained): removed, except conditional comments and "<!--!…"; a removed
 * comment is transparent, and one that plain text touches on both sides, or
 * that ends a text node of white space and form feeds, is kept.
 */
import { BANG, BYTES, COLLAPSIBLE, DASH, FF, GT, LT, WS, ascii } from './bytes.ts';
import { K_NEUTRAL, K_TEXT, type SquashState } from './state.ts';
import { opaque } from './text-whitespace.ts';

const IF = ascii('[if');
const ENDIF = ascii('[endif]');

function startsWith(src: Buffer, from: number, n: number, lit: Uint8Array): boolean {
  if (n < lit.length) return false;
  for (let i = 0; i < lit.length; i++) if (src[from + i] !== lit[i]) return false;
  return true;
}

/**
 * "<!--" at the cursor. Finds the end as the tokenizer does ("<!-->",
 * "<!--->", else the first "-->" or "--!>"; unterminated runs to the end of
 * input), then drops the comment or copies it.
 */
export function comment(s: SquashState): void {
  const src = s.src;
  const len = s.len;
  const c0 = s.p + 4;
  let c1 = len;
  let end = len;
  let closed = false;
  if (c0 < len && src[c0] === GT) {
    c1 = c0;
    end = c0 + 1;
    closed = true;
  } else if (c0 + 1 < len && src[c0] === DASH && src[c0 + 1] === GT) {
    c1 = c0;
    end = c0 + 2;
    closed = true;
  } else {
    for (let i = c0; ; i++) {
      i = s.findByte(i, DASH);
      if (i + 2 >= len) break;
      if (src[i + 1] !== DASH) continue;
      if (src[i + 2] === GT) {
        c1 = i;
        end = i + 3;
        closed = true;
        break;
      }
      if (src[i + 2] === BANG && i + 3 < len && src[i + 3] === GT) {
        c1 = i;
        end = i + 4;
        closed = true;
        break;
      }
    }
  }
  const n = c1 - c0;
  const keep =
    !closed ||
    startsWith(src, c0, n, IF) ||
    (n >= 1 && src[c0] === BANG) ||
    startsWith(src, c1 - ENDIF.length, n, ENDIF);
  if (!keep && s.depth === 0 && removable(s, end)) {
    s.p = end; // transparent: a pending run stays pending and merges with what follows
    return;
  }
  opaque(s, end, K_NEUTRAL);
}

/**
 * Whether the text written since the last token holds a form feed and
 * nothing but white space (comments.h, form_feed_before, says why a comment
 * next to such text stays).
 */
function formFeedBefore(s: SquashState): boolean {
  const dst = s.dst;
  let ff = false;
  for (let o = s.o; o > 0;) {
    const b = dst[--o]!;
    if (b === FF) {
      ff = true;
    } else if ((BYTES[b]! & COLLAPSIBLE) === 0) {
      return ff && b === GT;
    }
  }
  return ff;
}

/** Whether the input from `q` up to the next '<' (or the end) holds a form feed and nothing but white space. */
function formFeedAfter(s: SquashState, q: number): boolean {
  const src = s.src;
  let ff = false;
  for (; q < s.len; q++) {
    const b = src[q]!;
    if (b === FF) {
      ff = true;
    } else if ((BYTES[b]! & COLLAPSIBLE) === 0) {
      return ff && b === LT;
    }
  }
  return ff;
}

/**
 * Whether a comment ending at `end` may go, given what touches it: kept when
 * text touches it on both sides, when nothing is written yet and U+FEFF
 * follows (it would become a byte order mark at byte 0), and when the text on
 * either side is white space with a form feed.
 */
function removable(s: SquashState, end: number): boolean {
  const src = s.src;
  const len = s.len;
  const bomNext =
    s.o === 0 && !s.wsPending && end + 3 <= len && src[end] === 0xef && src[end + 1] === 0xbb && src[end + 2] === 0xbf;
  if (bomNext) return false;
  const after = end < len ? src[end]! : -1;
  const touching = s.wsPending || s.prev !== K_TEXT || after < 0 || (BYTES[after]! & WS) !== 0 || after === LT;
  return touching && !(s.prev === K_TEXT && formFeedBefore(s)) && !formFeedAfter(s, end);
}
