/**
 * Stage: raw text (native/core/squash/raw_text.{h,cc}): where the content of
 * a raw-text element ends, as the HTML tokenizer finds it, script with its
 * <!-- … <script> escape states, plaintext at the end of input. A stream's
 * window that is not the last stops before a '<' the window cuts that might
 * begin the end tag (or change the script state).
 */
import { ALPHA, BANG, BYTES, DASH, END_DELIM, GT, LT, SLASH, ascii, ieq, lower } from './bytes.ts';
import { PLAINTEXT, RAW_NAMES, RAW_SHIFT, SCRIPT } from './html-tables.ts';
import type { SquashState } from './state.ts';

const END_TAGS = RAW_NAMES.map((name) => ascii(`</${name}`));
const SCRIPT_END = ascii('</script');
const SCRIPT_NAME = ascii('script');
const COMMENT_OPEN = ascii('<!--');

// Script data states.
export const S_DATA = 0;
const S_ESC = 1;
const S_ESC_DASH = 2;
const S_ESC_DASH_DASH = 3;
const S_DESC = 4;
const S_DESC_DASH = 5;
const S_DESC_DASH_DASH = 6;

/** Where a scan stopped: the end tag's '<' when found, else where the content is known to go on to. */
export interface RawScan {
  pos: number;
  found: boolean;
  /** The script state at `pos`. */
  script: number;
}

/** Whether the bytes from `q` to the end (fewer than the literal's) begin the lowercase literal, ignoring case. */
function couldBe(s: SquashState, q: number, lit: Uint8Array): boolean {
  for (let i = 0; i < lit.length && q + i < s.len; i++) if (lower(s.src[q + i]!) !== lit[i]) return false;
  return true;
}

/** The end tag `tag` ("</name") followed by white space, '/' or '>' at the '<' at `q`. */
function endTagAt(s: SquashState, q: number, tag: Uint8Array): boolean {
  const n = tag.length;
  return q + n < s.len && ieq(s.src, q, tag, n) && (BYTES[s.src[q + n]!]! & END_DELIM) !== 0;
}

/** Scans the content of the raw-text element of class `f` from `q`, in script state `script`. */
export function rawTextScan(s: SquashState, q: number, f: number, script: number): RawScan {
  if ((f & PLAINTEXT) !== 0) return { pos: s.len, found: false, script: S_DATA };
  if ((f & SCRIPT) !== 0) return scriptEnd(s, q, script);
  return rawEnd(s, q, END_TAGS[f >>> RAW_SHIFT]!);
}

/** The next "</name" followed by white space, '/' or '>'. */
function rawEnd(s: SquashState, q: number, tag: Uint8Array): RawScan {
  for (; ; q++) {
    q = s.findByte(q, LT);
    if (q === s.len) return { pos: s.len, found: false, script: S_DATA };
    if (endTagAt(s, q, tag)) return { pos: q, found: true, script: S_DATA };
    if (!s.final && q + tag.length >= s.len && couldBe(s, q, tag)) return { pos: q, found: false, script: S_DATA };
  }
}

/** Whether a window that is not the last cuts "</script" + delimiter at `q`. */
function closeCut(s: SquashState, q: number): boolean {
  return !s.final && q + 8 >= s.len && couldBe(s, q, SCRIPT_END);
}

/**
 * Past a word of letters at `from` in the escaped script states: where it (and the delimiter after it) ends, and
 * the state: `onScript` when the word is "script" followed by a delimiter, else `otherwise`. When the letters run
 * to the end of the window: in a final one, undefined (the content runs to the end); in another, 'cut' for a word
 * of up to six letters, which may still become "script", and for a longer one, which is not it, the end and
 * `otherwise`. (Escaped script states are rare: the pair allocated here costs a page nothing.)
 */
function pastWord(
  s: SquashState,
  from: number,
  onScript: number,
  otherwise: number,
): [number, number] | 'cut' | undefined {
  const src = s.src;
  let r = from;
  while (r < s.len && (BYTES[src[r]!]! & ALPHA) !== 0) r++;
  if (r === s.len) {
    if (s.final) return undefined;
    return r - from <= 6 ? 'cut' : [s.len, otherwise];
  }
  const script = r - from === 6 && ieq(src, from, SCRIPT_NAME, 6);
  const delim = (BYTES[src[r]!]! & END_DELIM) !== 0;
  return [delim ? r + 1 : r, delim && script ? onScript : otherwise];
}

/**
 * The end of script content: the tokenizer's script data states, with the
 * "<!--" escape and the "<script>" double escape inside it, in which
 * "</script>" does not end the element.
 */
function scriptEnd(s: SquashState, q: number, st: number): RawScan {
  const src = s.src;
  const len = s.len;
  while (q < len) {
    if (st === S_DATA) {
      q = s.findByte(q, LT);
      if (q === len) return { pos: len, found: false, script: st };
      if (endTagAt(s, q, SCRIPT_END)) return { pos: q, found: true, script: st };
      if (closeCut(s, q) || (!s.final && q + 3 >= len && couldBe(s, q, COMMENT_OPEN))) {
        return { pos: q, found: false, script: st };
      }
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
      if (!s.final && q + 1 >= len) return { pos: q, found: false, script: st };
      const next = q + 1 < len;
      let past: [number, number] | 'cut' | undefined;
      if (st <= S_ESC_DASH_DASH) {
        if (endTagAt(s, q, SCRIPT_END)) return { pos: q, found: true, script: st };
        if (closeCut(s, q)) return { pos: q, found: false, script: st };
        if (next && src[q + 1] === SLASH) {
          st = S_ESC;
          q += 2;
          continue;
        }
        if (!next || (BYTES[src[q + 1]!]! & ALPHA) === 0) {
          st = S_ESC;
          q++;
          continue;
        }
        past = pastWord(s, q + 1, S_DESC, S_ESC);
      } else {
        if (!next || src[q + 1] !== SLASH) {
          st = S_DESC;
          q++;
          continue;
        }
        past = pastWord(s, q + 2, S_ESC, S_DESC);
      }
      if (past === undefined) return { pos: len, found: false, script: st };
      if (past === 'cut') return { pos: q, found: false, script: st };
      [q, st] = past;
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
  return { pos: len, found: false, script: st };
}
