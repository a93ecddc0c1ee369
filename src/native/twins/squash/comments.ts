/**
 * Stage: comments (native/core/squash/comments.{h,cc}, where the rules are
 * explained): removed, except conditional comments and "<!--!…"; a removed
 * comment is transparent, and one that plain text touches on both sides is
 * kept.
 */
import { BANG, BYTES, DASH, GT, LT, WS, ascii } from './bytes.ts';
import { K_NEUTRAL, K_TEXT, type SquashState } from './state.ts';
import { flush } from './text-whitespace.ts';

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
  flush(s, K_NEUTRAL);
  s.copyTo(end);
  s.prev = K_NEUTRAL;
  s.prevInHead = s.inHead;
}

/**
 * Whether a comment ending at `end` may go, given what touches it: kept when
 * text touches it on both sides, and when nothing is written yet and U+FEFF
 * follows, which would become a byte order mark at byte 0.
 */
function removable(s: SquashState, end: number): boolean {
  const src = s.src;
  const len = s.len;
  const bomNext =
    s.o === 0 && !s.wsPending && end + 3 <= len && src[end] === 0xef && src[end + 1] === 0xbb && src[end + 2] === 0xbf;
  if (bomNext) return false;
  const after = end < len ? src[end]! : -1;
  return s.wsPending || s.prev !== K_TEXT || after < 0 || (BYTES[after]! & WS) !== 0 || after === LT;
}
