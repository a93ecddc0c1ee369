/**
 * Bytes for every stage of the HTML squasher's twin: byte classes, case
 * folding and searching (native/core/squash/bytes.h).
 */

/** The HTML tokenizer's white space (\t \n \f \r and space, not \v): it ends tag names and separates attributes. */
export const WS = 1;
/**
 * White space the squasher collapses: \t \n \r and space. Form feed is tokenizer white space but not CSS
 * white space (a browser draws it as a glyph that does not collapse), so it is never touched.
 */
export const COLLAPSIBLE = 2;
/** A-Z a-z: what may follow '<' or '</' to open a tag. */
export const ALPHA = 4;
/** Ends a tag name: white space, '/' or '>'. */
export const NAME_END = 8;
/** May follow "</name" in an end tag: white space, '/' or '>'. */
export const END_DELIM = 16;

export const BYTES = new Uint8Array(256);
for (const c of [0x09, 0x0a, 0x0c, 0x0d, 0x20]) BYTES[c] = WS | NAME_END | END_DELIM | (c === 0x0c ? 0 : COLLAPSIBLE);
for (let c = 0x41; c <= 0x5a; c++) {
  BYTES[c] = ALPHA;
  BYTES[c + 0x20] = ALPHA;
}
BYTES[0x2f] = NAME_END | END_DELIM; // '/'
BYTES[0x3e] = NAME_END | END_DELIM; // '>'

export const LT = 0x3c;
export const GT = 0x3e;
export const SLASH = 0x2f;
export const BANG = 0x21;
export const DASH = 0x2d;
export const QUESTION = 0x3f;
export const EQUALS = 0x3d;
export const DQUOTE = 0x22;
export const SQUOTE = 0x27;
export const HASH = 0x23;
export const BACKSLASH = 0x5c;
export const TAB = 0x09;
export const LF = 0x0a;
export const FF = 0x0c;
export const CR = 0x0d;
export const SPACE = 0x20;

export const ascii = (s: string): Uint8Array => Uint8Array.from(s, (ch) => ch.charCodeAt(0));

export const lower = (b: number): number => (b >= 0x41 && b <= 0x5a ? b | 0x20 : b);

/** ASCII case-insensitive: `n` bytes of `src` at `at` against lowercase `lit`. */
export function ieq(src: Uint8Array, at: number, lit: Uint8Array, n: number): boolean {
  for (let i = 0; i < n; i++) if (lower(src[at + i]!) !== lit[i]) return false;
  return true;
}

/** The first `c` in `src[from, len)`, or `len`. */
export function findByte(src: Buffer, len: number, from: number, c: number): number {
  if (from >= len) return len;
  const at = src.indexOf(c, from);
  return at < 0 || at >= len ? len : at;
}

/** Where a token running to the next '>' ends (after it), or `len`. */
export function afterGt(src: Buffer, len: number, from: number): number {
  const gt = findByte(src, len, from, GT);
  return gt === len ? len : gt + 1;
}
