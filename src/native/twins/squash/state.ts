/**
 * The twin's squasher state between tokens, shared by its stages
 * (native/core/squash/state.h): the cursors, what the last token was, the
 * head, pre/listing depth and open formatting elements; and, for a stream,
 * the window being squashed and where it stopped.
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

/** A comment decides its fate within this many bytes from its "<!--": one whose end comes later is kept. */
export const COMMENT_LOOKAHEAD = 32 * 1024;
/** A link value (between its quotes) longer than this is copied as it is, never shortened. */
export const LINK_LOOKAHEAD = 4 * 1024;
/** The most bytes a stream holds back: a comment within its look-ahead, and three bytes after it. */
export const HOLD_MAX = COMMENT_LOOKAHEAD + 4;

// Which token a stream's window stopped inside (state.h, `resume`).
export const AT_NONE = 0;
export const AT_TAG_NAME = 1;
export const AT_TAG_BODY = 2;
export const AT_RAW_TEXT = 3;
export const AT_OPAQUE = 4;
export const AT_LONG_COMMENT = 5;

// The tokenizer's states inside a tag, after its name (tags-attributes.ts).
export const BEFORE_NAME = 0;
export const ATTR_NAME = 1;
export const AFTER_NAME = 2;
export const BEFORE_VALUE = 3;
export const UNQUOTED = 4;
export const AFTER_QUOTED = 5;
export const SELF_CLOSING = 6;

/** Where a window of a stream stopped inside a token (state.h, `progress`). */
export class Progress {
  at = AT_NONE;
  /** opaque: what the token counts as once it ends. */
  kind = K_NEUTRAL;
  /** tag_name, tag_body, raw_text: the tag's class. */
  flags = 0;
  endTag = false;
  /** tag_body: the tokenizer's state; in ATTR_NAME the name began in an earlier window, so is not the link. */
  tagState = BEFORE_NAME;
  /** tag_body: the attribute named last is the tag's link. */
  linkName = false;
  /** tag_body: inside a value quoted with this byte (0: not). */
  quote = 0;
  /** raw_text: the script data state (raw-text.ts). */
  script = 0;
}

/**
 * What comments look back over in the output written before a window: whether its trailing white space holds a
 * form feed, and the byte before that white space (-1: none).
 */
export interface WrittenTail {
  ff: boolean;
  last: number;
}

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

  // A stream is squashed a window at a time (native/core/squash/state.h explains how).
  /** The window ends where the input does: nothing is held back, and a run pending at its end is decided. */
  final = true;
  /** Past the check for a byte order mark at the start of the body. */
  started = true;
  /** Where the window stopped inside a token. */
  progress = new Progress();
  /** Where the bytes kept for the next window end in a white-space run, kept as one byte; `len` when none. */
  compactFrom = 0;
  /** Bytes at the start of the window known to hold no end for the comment or link value there. */
  clearIn = 0;
  /** … what this window reports for the next one, when it stops before a comment or a link value. */
  clearOut = 0;
  /** The output written before this window's, as comments look back over it. */
  before: WrittenTail = { ff: false, last: -1 };
  /** … and whether there was any. */
  wroteBefore = false;

  constructor(
    public src: Buffer,
    public len: number,
    public dst: Buffer,
    readonly host: Uint8Array,
    readonly path: Uint8Array,
    readonly scheme: number,
    rewriteLinks: boolean,
  ) {
    this.rewrite = rewriteLinks && host.length > 0;
    this.compactFrom = len;
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
