/**
 * Stage: tags and attributes (native/core/squash/tags_attributes.h, where the
 * rules are explained): the tag name's class, the tokenizer's attribute
 * states, and what a tag does to the state (block edges, <head>, formatting
 * elements, pre/listing depth, the raw text that follows).
 */
import { BYTES, DQUOTE, EQUALS, GT, NAME_END, SLASH, SQUOTE, WS, ascii, ieq } from './bytes.ts';
import {
  ANCHOR,
  BASE,
  BLOCK,
  FORMATTING,
  HEAD,
  HEAD_OK,
  HTML,
  IMG,
  INLINE_STYLED,
  PRE_LIKE,
  RAW,
  TAGS,
  VOID,
} from './html-tables.ts';
import { namesLink, rewriteQuoted } from './link-rewriting.ts';
import { rawTextEnd } from './raw-text.ts';
import { K_BLOCK, K_CLOSE, K_NEUTRAL, K_OPEN, K_SIBLING, type SquashState } from './state.ts';
import { copyTagSpace, flush } from './text-whitespace.ts';

// ---------------------------------------------------------------------------
// Tag names: an open-addressed table keyed by a hash of the lowercased name,
// so that classifying a tag allocates no string.
// ---------------------------------------------------------------------------

const SLOTS = 512;
const slotName: Array<Uint8Array | undefined> = new Array<Uint8Array | undefined>(SLOTS).fill(undefined);
const slotFlags = new Int32Array(SLOTS);

// The slot of a name: a multiplicative hash of its bytes with the case bit
// set (so that A-Z and a-z hash alike), then its length.
const slotOf = (h: number, n: number): number => (h ^ Math.imul(n, 0x9e37)) & (SLOTS - 1);

function hashName(bytes: Uint8Array, from: number, n: number): number {
  let h = 0;
  for (let i = 0; i < n; i++) h = (Math.imul(h, 31) + (bytes[from + i]! | 0x20)) | 0;
  return slotOf(h, n);
}

for (const [name, flags] of TAGS) {
  const bytes = ascii(name);
  let slot = hashName(bytes, 0, bytes.length);
  while (slotName[slot] !== undefined) slot = (slot + 1) & (SLOTS - 1);
  slotName[slot] = bytes;
  slotFlags[slot] = flags;
}

/** The class of the tag name `src[from, from + n)` (any case) whose {@link hashName} chain is `h`; 0 for names not listed. */
function classifyTag(src: Uint8Array, from: number, n: number, h: number): number {
  if (n === 0 || n > 10) return 0;
  let slot = slotOf(h, n);
  for (;;) {
    const name = slotName[slot];
    if (name === undefined) return 0;
    if (name.length === n && ieq(src, from, name, n)) return slotFlags[slot]!;
    slot = (slot + 1) & (SLOTS - 1);
  }
}

// ---------------------------------------------------------------------------
// The tag
// ---------------------------------------------------------------------------

/** A tag whose name starts at the cursor + 1 (start tag) or + 2 (end tag). */
export function tag(s: SquashState, endTag: boolean): void {
  const src = s.src;
  const len = s.len;
  const n0 = s.p + (endTag ? 2 : 1);
  let n1 = n0;
  let h = 0;
  while (n1 < len) {
    const c = src[n1]!;
    if ((BYTES[c]! & NAME_END) !== 0) break;
    h = (Math.imul(h, 31) + (c | 0x20)) | 0;
    n1++;
  }
  const f = classifyTag(src, n0, n1 - n0, h);
  // Outside the block's box only: before a start tag, after an end tag. An
  // inline-styled element's outside is a sibling's edge; a block's start and
  // end tags are the edges of its content.
  const block = (f & BLOCK) !== 0;
  const styled = (f & INLINE_STYLED) !== 0;
  const outside = block && ((f & VOID) !== 0 || !endTag);
  const outsideAfter = block && ((f & VOID) !== 0 || endTag);
  const inner = block && (f & VOID) === 0;
  const verbatim = s.depth !== 0;
  flush(s, outside ? (styled ? K_SIBLING : K_BLOCK) : inner && endTag ? K_CLOSE : K_NEUTRAL);
  let closed: boolean;
  if (n1 < len && src[n1] === GT) {
    // No attributes: the tag in one copy.
    s.copyTo(n1 + 1);
    closed = true;
  } else {
    s.copyTo(n1);
    const link = !endTag && !verbatim && s.rewrite && (f & (ANCHOR | IMG)) !== 0;
    closed = tagBody(s, verbatim, link ? f : 0);
  }
  s.prev = outsideAfter ? (styled ? K_SIBLING : K_BLOCK) : inner && !endTag ? K_OPEN : K_NEUTRAL;
  if ((f & FORMATTING) !== 0) {
    if (!endTag) {
      s.formatting++;
    } else if (s.formatting !== 0) {
      s.formatting--;
    }
  }
  if (!verbatim) {
    s.docStart = false;
    if ((f & HEAD) !== 0) {
      s.inHead = !endTag && s.headAllowed;
    } else if ((f & HEAD_OK) === 0) {
      s.inHead = false;
    }
    if (endTag || (f & HTML) === 0) s.headAllowed = false;
    if (!endTag && (f & BASE) !== 0) s.rewrite = false;
  }
  s.prevInHead = s.inHead;
  if (!closed) return;
  if (endTag) {
    if ((f & PRE_LIKE) !== 0 && s.depth !== 0) s.depth--;
    return;
  }
  if ((f & PRE_LIKE) !== 0) s.depth++;
  if ((f & RAW) !== 0) s.copyTo(rawTextEnd(s, s.p, f));
}

// ---------------------------------------------------------------------------
// Attributes
// ---------------------------------------------------------------------------

// Tag-body states.
const BEFORE_NAME = 0;
const ATTR_NAME = 1;
const AFTER_NAME = 2;
const BEFORE_VALUE = 3;
const UNQUOTED = 4;
const AFTER_QUOTED = 5;
const SELF_CLOSING = 6;

/**
 * The tag body after the name: attributes and the closing '>', following the
 * tokenizer's attribute states. False when the input ends first. `link` is
 * the tag's class when its href/src may be rewritten, else 0.
 */
function tagBody(s: SquashState, verbatim: boolean, link: number): boolean {
  const src = s.src;
  const dst = s.dst;
  const len = s.len;
  let p = s.p;
  let o = s.o;
  let st = BEFORE_NAME;
  let an0 = 0;
  let an1 = 0;
  while (p < len) {
    const b = src[p]!;
    if ((BYTES[b]! & WS) !== 0) {
      if (st === ATTR_NAME) {
        an1 = p;
        st = AFTER_NAME;
      } else if (st === UNQUOTED || st === AFTER_QUOTED || st === SELF_CLOSING) {
        st = BEFORE_NAME;
      }
      if (verbatim) {
        dst[o++] = b;
        p++;
      } else {
        s.o = o;
        p = copyTagSpace(s, p);
        o = s.o;
      }
      continue;
    }
    if (b === GT) {
      dst[o++] = b;
      s.p = p + 1;
      s.o = o;
      return true;
    }
    if (st === BEFORE_VALUE) {
      if (b === DQUOTE || b === SQUOTE) {
        s.p = p;
        s.o = o;
        if (!quoted(s, b, link !== 0 && b === DQUOTE && namesLink(s, link, an0, an1))) return false;
        p = s.p;
        o = s.o;
        st = AFTER_QUOTED;
      } else {
        // An unquoted value runs to white space or '>'.
        while (p < len) {
          const c = src[p]!;
          if ((BYTES[c]! & WS) !== 0 || c === GT) break;
          dst[o++] = c;
          p++;
        }
        st = UNQUOTED;
      }
      continue;
    }
    if (b === SLASH && st !== ATTR_NAME && st !== UNQUOTED) {
      dst[o++] = b;
      p++;
      st = SELF_CLOSING;
      continue;
    }
    if (b === EQUALS && (st === AFTER_NAME || st === ATTR_NAME)) {
      if (st === ATTR_NAME) an1 = p;
      dst[o++] = b;
      p++;
      st = BEFORE_VALUE;
      continue;
    }
    if (st === ATTR_NAME) {
      // stopped on '/': the name ends, self-closing follows
      an1 = p;
      dst[o++] = b;
      p++;
      st = SELF_CLOSING;
      continue;
    }
    if (st === UNQUOTED) {
      dst[o++] = b;
      p++;
      continue;
    }
    // A new attribute name; its first byte may be '=' or a quote. It runs
    // to white space, '/', '>' or '='.
    an0 = p;
    dst[o++] = b;
    p++;
    while (p < len) {
      const c = src[p]!;
      if ((BYTES[c]! & NAME_END) !== 0 || c === EQUALS) break;
      dst[o++] = c;
      p++;
    }
    st = ATTR_NAME;
    // The usual name="value" straight through.
    if (p + 1 < len && src[p] === EQUALS) {
      an1 = p;
      const q = src[p + 1]!;
      if (q === DQUOTE || q === SQUOTE) {
        dst[o++] = EQUALS;
        s.p = p + 1;
        s.o = o;
        if (!quoted(s, q, link !== 0 && q === DQUOTE && namesLink(s, link, an0, an1))) return false;
        p = s.p;
        o = s.o;
        st = AFTER_QUOTED;
      }
    }
  }
  s.p = p;
  s.o = o;
  return false;
}

/** A quoted value at the cursor, through its closing quote (rewritten when a link); false when unterminated. */
function quoted(s: SquashState, quote: number, rewrite: boolean): boolean {
  if (rewrite) return rewriteQuoted(s, quote);
  const src = s.src;
  const len = s.len;
  // Most values are short: a plain loop beats indexOf's call for them.
  const dst = s.dst;
  let p = s.p + 1;
  let o = s.o;
  dst[o++] = quote;
  const stop = Math.min(len, p + 64);
  while (p < stop) {
    const c = src[p++]!;
    dst[o++] = c;
    if (c === quote) {
      s.p = p;
      s.o = o;
      return true;
    }
  }
  s.p = p;
  s.o = o;
  const close = s.findByte(p, quote);
  if (close === len) {
    s.copyTo(len);
    return false;
  }
  s.copyTo(close + 1);
  return true;
}
