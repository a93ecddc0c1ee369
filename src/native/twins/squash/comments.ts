/**
 * Stage: comments (native/core/squash/comments.{h,cc}, where the rules are
 * explained): removed, except conditional comments and "<!--!…"; a removed
 * comment is transparent, and one that plain text touches on both sides, or
 * that a form feed is next to across white space, is kept; one whose end
 * lies more than COMMENT_LOOKAHEAD bytes on is kept, as an unterminated one
 * is. A stream's window stops before a comment until its fate is known.
 */
import { BANG, BYTES, COLLAPSIBLE, DASH, FF, GT, LT, WS, ascii } from './bytes.ts';
import { AT_LONG_COMMENT, COMMENT_LOOKAHEAD, K_NEUTRAL, K_TEXT, type SquashState, type WrittenTail } from './state.ts';
import { flush, opaque } from './text-whitespace.ts';

const IF = ascii('[if');
const ENDIF = ascii('[endif]');

function startsWith(src: Buffer, from: number, n: number, lit: Uint8Array): boolean {
  if (n < lit.length) return false;
  for (let i = 0; i < lit.length; i++) if (src[from + i] !== lit[i]) return false;
  return true;
}

/** Where the first "-->" or "--!>" that starts at or after `from` starts, or -1; one cut by the end is not found. */
function commentClose(s: SquashState, from: number): number {
  const src = s.src;
  const len = s.len;
  for (let i = from; ; i++) {
    i = s.findByte(i, DASH);
    if (i + 2 >= len) return -1;
    if (src[i + 1] !== DASH) continue;
    if (src[i + 2] === GT || (src[i + 2] === BANG && i + 3 < len && src[i + 3] === GT)) return i;
  }
}

/** Just after the "-->" or "--!>" that {@link commentClose} found at `i`. */
const afterClose = (s: SquashState, i: number): number => (s.src[i + 2] === GT ? i + 3 : i + 4);

/**
 * "<!--" at the cursor. Finds the end as the tokenizer does ("<!-->",
 * "<!--->", else the first "-->" or "--!>"; unterminated runs to the end of
 * input), then drops the comment or copies it. Returns true when a stream's
 * window stops: before the comment (the cursor unchanged) until its end and
 * what follows it are known (the run after it is then kept as one byte), or
 * inside one kept for its length.
 */
export function comment(s: SquashState): boolean {
  const src = s.src;
  const len = s.len;
  const at = s.p;
  const c0 = at + 4;
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
    // The first bytes of a window may be known to start no end (SquashState.clearIn).
    const i = commentClose(s, Math.max(c0, at === 0 ? s.clearIn : 0));
    if (i >= 0) {
      c1 = i;
      end = afterClose(s, i);
      closed = true;
    }
  }
  const hold = (): boolean => {
    s.clearOut = closed ? c1 - at : Math.max(0, len - at - 3);
    return true;
  };
  if (!s.final && !closed && len - at < COMMENT_LOOKAHEAD) return hold();
  if (!closed) {
    // Kept: its end is too far to wait for (or there is none).
    flush(s, K_NEUTRAL);
    s.copyTo(c0);
    return longCommentRest(s);
  }
  const n = c1 - c0;
  const keep =
    end - at > COMMENT_LOOKAHEAD ||
    startsWith(src, c0, n, IF) ||
    (n >= 1 && src[c0] === BANG) ||
    startsWith(src, c1 - ENDIF.length, n, ENDIF);
  if (keep || s.depth !== 0) {
    opaque(s, end, K_NEUTRAL);
    return false;
  }
  if (!s.final && end === len) return hold();
  let r = end;
  while (r < len && (BYTES[src[r]!]! & COLLAPSIBLE) !== 0) r++;
  if (!s.final && r === len) {
    s.compactFrom = end;
    return hold();
  }
  // Nothing written yet: U+FEFF next would become a byte order mark at byte 0 (the decoder drops it).
  const first = !s.wroteBefore && s.o === 0 && !s.wsPending;
  if (!s.final && first && src[end] === 0xef && end + 3 > len) return hold();
  const bomNext = first && end + 3 <= len && src[end] === 0xef && src[end + 1] === 0xbb && src[end + 2] === 0xbf;
  if (!bomNext && removable(s, end < len ? src[end]! : -1, r < len && src[r] === FF)) {
    s.p = end; // transparent: a pending run stays pending and merges with what follows
    return false;
  }
  opaque(s, end, K_NEUTRAL);
  return false;
}

/**
 * The rest of a comment kept for its length, from the cursor, to its end. A stream's window keeps its last three
 * bytes, which may begin "-->" or "--!>".
 */
export function longCommentRest(s: SquashState): boolean {
  const close = commentClose(s, s.p);
  if (close >= 0) {
    s.copyTo(afterClose(s, close));
  } else if (s.final) {
    s.copyTo(s.len);
  } else {
    if (s.len - s.p > 3) s.copyTo(s.len - 3);
    s.progress.at = AT_LONG_COMMENT;
    return true;
  }
  s.prev = K_NEUTRAL;
  s.prevInHead = s.inHead;
  return false;
}

/**
 * Whether the text written since the last token holds a form feed and
 * nothing but white space, looking back from the cursor and then over what a
 * stream wrote before (comments.h, form_feed_before, says why a comment next
 * to such text stays).
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
  ff ||= s.before.ff;
  return s.before.last < 0 ? ff : ff && s.before.last === GT;
}

/** `tail` updated with the bytes written after it (comments.h, tail_after). */
export function tailAfter(tail: WrittenTail, out: Uint8Array): WrittenTail {
  let ff = false;
  for (let n = out.length; n > 0;) {
    const b = out[--n]!;
    if (b === FF) {
      ff = true;
    } else if ((BYTES[b]! & COLLAPSIBLE) === 0) {
      return { ff, last: b };
    }
  }
  return { ff: ff || tail.ff, last: tail.last };
}

/**
 * Whether a comment may go, given what touches it: `after`, the byte just after it (-1: the end); `ffAfter`,
 * whether the first byte past the run that follows it is a form feed. Kept when text touches it on both sides,
 * and when the text on either side is white space with a form feed.
 */
function removable(s: SquashState, after: number, ffAfter: boolean): boolean {
  const touching = s.wsPending || s.prev !== K_TEXT || after < 0 || (BYTES[after]! & WS) !== 0 || after === LT;
  return touching && !(s.prev === K_TEXT && formFeedBefore(s)) && !ffAfter;
}
