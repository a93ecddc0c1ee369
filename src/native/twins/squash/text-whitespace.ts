/**
 * Stage: text and white space (native/core/squash/text_whitespace.h, where
 * the rules are explained): a collapsible run (\t \n \r space) becomes one
 * byte, a line feed if it held LF or CR, else a space; form feed is text and
 * copied as it is; a run between two tags goes when it lies outside a block
 * box or in <head> and no formatting element is open; beside an
 * inline-styled element's tag only when its other side is a line edge.
 */
import { BYTES, COLLAPSIBLE, CR, FF, LF, LT, SPACE } from './bytes.ts';
import { K_BLOCK, K_CLOSE, K_EOF, K_OPEN, K_SIBLING, K_TEXT, type SquashState } from './state.ts';

// The text scanner's view of a byte: 0 copy, 1 a space or LF (copied when
// alone), 2 stop ('<', tab, carriage return). Form feed is copied.
const TEXT = new Uint8Array(256);
TEXT[0x20] = TEXT[0x0a] = 1;
TEXT[0x3c] = TEXT[0x09] = TEXT[0x0d] = 2;

/** Skips a collapsible run at the cursor, leaving it pending. */
export function scanWs(s: SquashState): void {
  s.wsPending = true;
  const src = s.src;
  const len = s.len;
  let p = s.p;
  let lf = false;
  while (p < len) {
    const b = src[p]!;
    if ((BYTES[b]! & COLLAPSIBLE) === 0) break;
    if (b === LF || b === CR) lf = true;
    p++;
  }
  if (lf) s.wsLf = true;
  s.p = p;
}

/**
 * Copies text from the cursor: bytes as they are, and a lone space or line
 * feed between two text bytes. Stops before '<', before any other run, or at
 * the end of input.
 */
export function text(s: SquashState): void {
  const src = s.src;
  const dst = s.dst;
  const len = s.len;
  let p = s.p;
  let o = s.o;
  while (p < len) {
    const b = src[p]!;
    const t = TEXT[b]!;
    if (t !== 0) {
      if (t === 2 || p + 1 >= len) break;
      const next = src[p + 1]!;
      if ((BYTES[next]! & COLLAPSIBLE) !== 0 || next === LT) break;
    }
    dst[o++] = b;
    p++;
  }
  s.p = p;
  s.o = o;
}

/**
 * White space inside a tag, outside quoted values, at `p` (tokenizer white
 * space): a collapsible run becomes one byte as in text; a form feed is
 * copied as it is. Returns the input cursor after it; writes at `s.o`.
 */
export function copyTagSpace(s: SquashState, p: number): number {
  const src = s.src;
  const len = s.len;
  const b = src[p]!;
  if (b === FF) {
    s.dst[s.o++] = b;
    return p + 1;
  }
  let lf = b === LF || b === CR;
  p++;
  while (p < len) {
    const c = src[p]!;
    if ((BYTES[c]! & COLLAPSIBLE) === 0) break;
    if (c === LF || c === CR) lf = true;
    p++;
  }
  s.dst[s.o++] = lf ? LF : SPACE;
  return p;
}

/** Decides the pending run now that its right-hand neighbour (K_*) is known. */
export function flush(s: SquashState, next: number): void {
  if (!s.wsPending) return;
  s.wsPending = false;
  const lf = s.wsLf;
  s.wsLf = false;
  const prev = s.prev;
  if (
    prev !== K_TEXT &&
    next !== K_TEXT &&
    s.formatting === 0 &&
    (prev === K_BLOCK ||
      next === K_BLOCK ||
      s.prevInHead ||
      (prev === K_SIBLING && (next === K_CLOSE || next === K_EOF)) ||
      ((prev === K_OPEN || s.docStart) && next === K_SIBLING))
  ) {
    return;
  }
  s.dst[s.o++] = lf ? LF : SPACE;
}

/** A token copied as it is (a doctype, a kept comment, a bogus comment, "</>"), then taken as of kind `k`. */
export function opaque(s: SquashState, end: number, k: number): void {
  flush(s, k);
  s.copyTo(end);
  s.prev = k;
  s.prevInHead = s.inHead;
}
