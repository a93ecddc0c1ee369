/**
 * Stage: raw text (native/core/squash/raw_text.{h,cc}): where the content of
 * a raw-text element ends, as the HTML tokenizer finds it, script with its
 * <!-- … <script> escape states, plaintext at the end of input.
 */
import { ALPHA, BANG, BYTES, DASH, END_DELIM, GT, LT, SLASH, ascii, ieq } from './bytes.ts';
import { PLAINTEXT, RAW_NAMES, RAW_SHIFT, SCRIPT } from './html-tables.ts';
import type { SquashState } from './state.ts';

const RAW_NAME_BYTES = RAW_NAMES.map(ascii);
const SCRIPT_NAME = ascii('script');

// Script data states.
const S_DATA = 0;
const S_ESC = 1;
const S_ESC_DASH = 2;
const S_ESC_DASH_DASH = 3;
const S_DESC = 4;
const S_DESC_DASH = 5;
const S_DESC_DASH_DASH = 6;

/**
 * Past a word of letters at `from` in the escaped script states: where it (and
 * the delimiter after it) ends, and the state: `onScript` when the word is
 * "script" followed by a delimiter, else `otherwise`. Undefined when the
 * letters run to the end of the input. (Escaped script states are rare: the
 * pair allocated here costs a page nothing.)
 */
function pastWord(s: SquashState, from: number, onScript: number, otherwise: number): [number, number] | undefined {
  const word = scriptWord(s, from);
  const script = word < 0;
  const r = script ? ~word : word;
  if (r === s.len) return undefined;
  const delim = (BYTES[s.src[r]!]! & END_DELIM) !== 0;
  return [delim ? r + 1 : r, delim && script ? onScript : otherwise];
}

/** Where the content of the raw-text element of class `f`, starting at `q`, ends: at its end tag's '<', or the end. */
export function rawTextEnd(s: SquashState, q: number, f: number): number {
  if ((f & PLAINTEXT) !== 0) return s.len;
  if ((f & SCRIPT) !== 0) return scriptEnd(s, q);
  return rawEnd(s, q, RAW_NAME_BYTES[f >>> RAW_SHIFT]!);
}

/** The next "</name" followed by white space, '/' or '>', or the end. */
function rawEnd(s: SquashState, q: number, name: Uint8Array): number {
  const src = s.src;
  const len = s.len;
  const n = name.length;
  for (; ; q++) {
    q = s.findByte(q, LT);
    if (q === len) return len;
    if (
      q + 2 + n < len &&
      src[q + 1] === SLASH &&
      ieq(src, q + 2, name, n) &&
      (BYTES[src[q + 2 + n]!]! & END_DELIM) !== 0
    ) {
      return q;
    }
  }
}

function scriptCloseAt(s: SquashState, q: number): boolean {
  const src = s.src;
  return (
    q + 8 < s.len && src[q + 1] === SLASH && ieq(src, q + 2, SCRIPT_NAME, 6) && (BYTES[src[q + 8]!]! & END_DELIM) !== 0
  );
}

/** Letters from `from`: where they stop, negated when they spell "script" (~after). */
function scriptWord(s: SquashState, from: number): number {
  const src = s.src;
  let r = from;
  while (r < s.len && (BYTES[src[r]!]! & ALPHA) !== 0) r++;
  return r - from === 6 && ieq(src, from, SCRIPT_NAME, 6) ? ~r : r;
}

/**
 * The end of script content: the tokenizer's script data states, with the
 * "<!--" escape and the "<script>" double escape inside it, in which
 * "</script>" does not end the element.
 */
function scriptEnd(s: SquashState, q: number): number {
  const src = s.src;
  const len = s.len;
  let st = S_DATA;
  while (q < len) {
    if (st === S_DATA) {
      q = s.findByte(q, LT);
      if (q === len) return len;
      if (scriptCloseAt(s, q)) return q;
      if (q + 3 < len && src[q + 1] === BANG && src[q + 2] === DASH && src[q + 3] === DASH) {
        st = S_ESC_DASH_DASH;
        q += 4;
      } else {
        q++;
      }
      continue;
    }
    const b = src[q]!;
    if (b === LT) {
      const next = q + 1 < len;
      if (st <= S_ESC_DASH_DASH) {
        if (scriptCloseAt(s, q)) return q;
        if (next && src[q + 1] === SLASH) {
          st = S_ESC;
          q += 2;
        } else if (next && (BYTES[src[q + 1]!]! & ALPHA) !== 0) {
          const past = pastWord(s, q + 1, S_DESC, S_ESC);
          if (past === undefined) return len;
          [q, st] = past;
        } else {
          st = S_ESC;
          q++;
        }
      } else if (next && src[q + 1] === SLASH) {
        const past = pastWord(s, q + 2, S_ESC, S_DESC);
        if (past === undefined) return len;
        [q, st] = past;
      } else {
        st = S_DESC;
        q++;
      }
      continue;
    }
    switch (st) {
      case S_ESC:
        st = b === DASH ? S_ESC_DASH : S_ESC;
        break;
      case S_ESC_DASH:
        st = b === DASH ? S_ESC_DASH_DASH : S_ESC;
        break;
      case S_ESC_DASH_DASH:
        st = b === GT ? S_DATA : b === DASH ? S_ESC_DASH_DASH : S_ESC;
        break;
      case S_DESC:
        st = b === DASH ? S_DESC_DASH : S_DESC;
        break;
      case S_DESC_DASH:
        st = b === DASH ? S_DESC_DASH_DASH : S_DESC;
        break;
      default: // S_DESC_DASH_DASH
        st = b === GT ? S_DATA : b === DASH ? S_DESC_DASH_DASH : S_DESC;
        break;
    }
    q++;
  }
  return len;
}
