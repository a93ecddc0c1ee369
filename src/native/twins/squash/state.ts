/**
 * The twin's squasher state between tokens, shared by its stages
 * (native/core/squash/state.h): the cursors, what the last token was, the
 * head, pre/listing depth and open formatting elements.
 */
import { findByte } from './bytes.ts';

// What a white-space run touches on each side.
export const K_BOF = 0;
export const K_TEXT = 1;
export const K_NEUTRAL = 2;
export const K_BLOCK = 3;
export const K_EOF = 4;
/** Before the start tag of an inline-styled element (INLINE_STYLED), or after its end tag. */
export const K_SIBLING = 5;
/** After a block start tag: the start of the block's content. */
export const K_OPEN = 6;
/** Before a block end tag: the end of the block's content. */
export const K_CLOSE = 7;

/** The request's scheme as link rewriting reads it: 0 unknown, 1 http, 2 https. */
export const SCHEME_UNKNOWN = 0;
export const SCHEME_HTTP = 1;
export const SCHEME_HTTPS = 2;

export class SquashState {
  p = 0;
  o = 0;
  /** A white-space run waits for its right-hand neighbour … */
  wsPending = false;
  /** … and it held a line break. */
  wsLf = false;
  /** The token before the run (K_*). */
  prev = K_BOF;
  /** After the token before the run we were inside <head>. */
  prevInHead = false;
  /** After <head>, until something that closes it. */
  inHead = false;
  /** Nothing yet makes a browser ignore a <head> tag. */
  headAllowed = true;
  /** No tag or text yet: a doctype here is block-like. */
  docStart = true;
  /** Open pre/listing elements: their content is verbatim. */
  depth = 0;
  /** Formatting start tags not yet matched by end tags. */
  formatting = 0;
  /** Rewrite links: option on, a host, no <base> seen. */
  rewrite: boolean;

  constructor(
    readonly src: Buffer,
    readonly len: number,
    readonly dst: Buffer,
    readonly host: Uint8Array,
    readonly path: Uint8Array,
    readonly scheme: number,
    rewriteLinks: boolean,
  ) {
    this.rewrite = rewriteLinks && host.length > 0;
  }

  findByte(from: number, c: number): number {
    return findByte(this.src, this.len, from, c);
  }

  /** Copies the input from the cursor up to `end`. */
  copyTo(end: number): void {
    const n = end - this.p;
    if (n > 48) {
      this.src.copy(this.dst, this.o, this.p, end);
    } else {
      const src = this.src;
      const dst = this.dst;
      let o = this.o;
      for (let i = this.p; i < end; i++) dst[o++] = src[i]!;
    }
    this.o += n;
    this.p = end;
  }

  /** Writes `n` input bytes from `from` at the output cursor. */
  emit(from: number, n: number): void {
    const src = this.src;
    const dst = this.dst;
    let o = this.o;
    for (let i = from; i < from + n; i++) dst[o++] = src[i]!;
    this.o = o;
  }

  sawText(): void {
    this.prev = K_TEXT;
    this.inHead = false;
    this.headAllowed = false;
    this.docStart = false;
  }
}
