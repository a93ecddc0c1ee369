/**
 * Stage: tags and attributes (native/core/squash/tags_attributes.h, where the
 * rules are explained): the tag name's class, the tokenizer's attribute
 * states, and what a tag does to the state (block edges, <head>, formatting
 * elements, pre/listing depth, the raw text that follows).
 */
import { BYTES, COLLAPSIBLE, DQUOTE, EQUALS, GT, NAME_END, SLASH, SQUOTE, WS, ascii, ieq } from './bytes.ts';
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
import { LINK_CLOSED, LINK_HELD, LINK_PLAIN, namesLink, rewriteQuoted } from './link-rewriting.ts';
import { S_DATA, rawTextScan } from './raw-text.ts';
import {
  AFTER_NAME,
  AFTER_QUOTED,
  AT_RAW_TEXT,
  AT_TAG_BODY,
  AT_TAG_NAME,
  ATTR_NAME,
  BEFORE_NAME,
  BEFORE_VALUE,
  K_BLOCK,
  K_CLOSE,
  K_NEUTRAL,
  K_OPEN,
  K_SIBLING,
  SELF_CLOSING,
  type SquashState,
  UNQUOTED,
} from './state.ts';
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

/**
 * A tag whose name starts at the cursor + 1 (start tag) or + 2 (end tag).
 * Returns true when a stream's window stopped: before the tag (the cursor
 * unchanged) when its name may go on in the next window, which would change
 * its class; else inside it (s.progress says where).
 */
export function tag(s: SquashState, endTag: boolean): boolean {
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
  if (!s.final && n1 === len && n1 - n0 <= 10) return true; // the name may go on
  const f = classifyTag(src, n0, n1 - n0, h);
  // Outside the block's box only: before a start tag, after an end tag. An
  // inline-styled element's outside is a sibling's edge; a block's start and
  // end tags are the edges of its content.
  const block = (f & BLOCK) !== 0;
  const styled = (f & INLINE_STYLED) !== 0;
  const outside = block && ((f & VOID) !== 0 || !endTag);
  const inner = block && (f & VOID) === 0;
  flush(s, outside ? (styled ? K_SIBLING : K_BLOCK) : inner && endTag ? K_CLOSE : K_NEUTRAL);
  return tagRest(s, n1, f, endTag);
}

/**
 * The rest of a tag whose name (of class `f`) ends at `n1`, once the white
 * space before it is decided: the name, the body, what the tag does.
 */
export function tagRest(s: SquashState, n1: number, f: number, endTag: boolean): boolean {
  const verbatim = s.depth !== 0;
  let closed: boolean;
  if (n1 < s.len && s.src[n1] === GT) {
    // No attributes: the tag in one copy.
    s.copyTo(n1 + 1);
    closed = true;
  } else {
    s.copyTo(n1);
    if (!s.final && n1 === s.len) {
      // A name longer than any listed one goes on.
      s.progress.at = AT_TAG_NAME;
      s.progress.flags = f;
      s.progress.endTag = endTag;
      return true;
    }
    const link = !endTag && !verbatim && s.rewrite && (f & (ANCHOR | IMG)) !== 0;
    s.progress.tagState = BEFORE_NAME;
    s.progress.linkName = false;
    s.progress.quote = 0;
    const body = tagBody(s, verbatim, link ? f : 0);
    if (body === BODY_STOPPED) {
      s.progress.at = AT_TAG_BODY;
      s.progress.flags = f;
      s.progress.endTag = endTag;
      return true;
    }
    closed = body === BODY_CLOSED;
  }
  return tagEnd(s, f, endTag, verbatim, closed);
}

/**
 * What a tag of class `f` does to the state once it has ended (`closed`), or
 * the input has: block edges for the white space around it, <head>,
 * formatting elements, pre/listing depth, and the raw text that follows.
 * Returns true when a stream's window stopped in that raw text.
 */
export function tagEnd(s: SquashState, f: number, endTag: boolean, verbatim: boolean, closed: boolean): boolean {
  const block = (f & BLOCK) !== 0;
  const styled = (f & INLINE_STYLED) !== 0;
  const outsideAfter = block && ((f & VOID) !== 0 || endTag);
  const inner = block && (f & VOID) === 0;
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
  if (!closed) return false;
  if (endTag) {
    if ((f & PRE_LIKE) !== 0 && s.depth !== 0) s.depth--;
    return false;
  }
  if ((f & PRE_LIKE) !== 0) s.depth++;
  if ((f & RAW) !== 0) return rawText(s, f, S_DATA);
  return false;
}

/** The content of a raw-text element from the cursor, in script state `script`. */
export function rawText(s: SquashState, f: number, script: number): boolean {
  const scan = rawTextScan(s, s.p, f, script);
  s.copyTo(scan.pos);
  if (s.final || scan.found) return false;
  s.progress.at = AT_RAW_TEXT;
  s.progress.flags = f;
  s.progress.script = scan.script;
  return true;
}

// ---------------------------------------------------------------------------
// Attributes
// ---------------------------------------------------------------------------

// How a tag body ended: at its '>', at the end of the input (the browser drops such a tag), or at the end of a
// stream's window (s.progress says where in it).
export const BODY_CLOSED = 0;
export const BODY_OPEN = 1;
export const BODY_STOPPED = 2;

// What became of a quoted value: copied through its closing quote; copied to the end of the input or window; or,
// a link whose closing quote may be in the next window, not written yet.
const VALUE_CLOSED = 0;
const VALUE_OPEN = 1;
const VALUE_HELD = 2;

/**
 * The tag body after the name: attributes and the closing '>', following the
 * tokenizer's attribute states, from those in s.progress (a stream resumes a
 * tag a window cut). `link` is the tag's class when its href/src may be
 * rewritten, else 0. Where a window ends, the tag's bytes so far are written,
 * except a white-space run (kept as one byte for the next window) and an
 * attribute name of up to four bytes in a tag whose link may be rewritten
 * (it may be "href" or "src": kept whole).
 */
export function tagBody(s: SquashState, verbatim: boolean, link: number): number {
  const src = s.src;
  const dst = s.dst;
  const len = s.len;
  const pr = s.progress;
  let p = s.p;
  let o = s.o;
  let st = pr.tagState;
  // The current attribute name; -1: named in an earlier window (pr.linkName says whether it is the link).
  let an0 = 0;
  let an1 = 0;
  /** Whether a value quoted with `q` is the tag's link, to be rewritten. */
  const linkValue = (q: number): boolean =>
    link !== 0 && q === DQUOTE && (an0 < 0 ? pr.linkName : namesLink(s, link, an0, an1));
  const stop = (at: number, quote: number): number => {
    pr.linkName = (at === AFTER_NAME || at === BEFORE_VALUE) && linkValue(DQUOTE);
    pr.tagState = at;
    pr.quote = quote;
    s.p = p;
    s.o = o;
    return BODY_STOPPED;
  };
  /** A quoted value at `p`: closed, open, or (a link) held. */
  const value = (q: number): number => {
    s.p = p;
    s.o = o;
    const v = quoted(s, q, linkValue(q));
    p = s.p;
    o = s.o;
    return v;
  };
  if (pr.quote !== 0) {
    // A quoted value an earlier window cut.
    s.p = p;
    s.o = o;
    const closed = quotedRest(s, pr.quote);
    p = s.p;
    o = s.o;
    if (!closed) return s.final ? BODY_OPEN : stop(AFTER_QUOTED, pr.quote);
    st = AFTER_QUOTED;
  } else if (st === ATTR_NAME) {
    // An attribute name an earlier window cut: long, so not the link.
    an0 = -1;
    pr.linkName = false;
    while (p < len) {
      const c = src[p]!;
      if ((BYTES[c]! & NAME_END) !== 0 || c === EQUALS) break;
      dst[o++] = c;
      p++;
    }
  } else if (st === AFTER_NAME || st === BEFORE_VALUE) {
    an0 = -1;
  }
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
        continue;
      }
      const run = p;
      s.o = o;
      p = copyTagSpace(s, p);
      o = s.o;
      if (!s.final && p === len && (BYTES[b]! & COLLAPSIBLE) !== 0) {
        // The run may go on with a line break: kept as one byte for the next window.
        o--;
        p = run;
        s.compactFrom = run;
        return stop(st, 0);
      }
      continue;
    }
    if (b === GT) {
      dst[o++] = b;
      s.p = p + 1;
      s.o = o;
      return BODY_CLOSED;
    }
    if (st === BEFORE_VALUE) {
      if (b === DQUOTE || b === SQUOTE) {
        const v = value(b);
        if (v === VALUE_HELD) return stop(BEFORE_VALUE, 0);
        if (v === VALUE_OPEN) return s.final ? BODY_OPEN : stop(AFTER_QUOTED, b);
        st = AFTER_QUOTED;
      } else {
        p = unquoted(src, dst, len, p, o);
        o = s.o;
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
      // A value an earlier window cut: it runs on to white space or '>'.
      p = unquoted(src, dst, len, p, o);
      o = s.o;
      continue;
    }
    // A new attribute name; its first byte may be '=' or a quote. It runs
    // to white space, '/', '>' or '='.
    const before = st;
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
    if (!s.final && p === len) {
      if (link === 0 || p - an0 > 4) {
        an0 = -1;
        pr.linkName = false;
        return stop(ATTR_NAME, 0);
      }
      // "href" or "src" perhaps: kept whole for the next window.
      o -= p - an0;
      p = an0;
      return stop(before, 0);
    }
    // The usual name="value" straight through.
    if (p + 1 < len && src[p] === EQUALS) {
      an1 = p;
      const q = src[p + 1]!;
      if (q === DQUOTE || q === SQUOTE) {
        dst[o++] = EQUALS;
        p++;
        const v = value(q);
        if (v === VALUE_HELD) return stop(BEFORE_VALUE, 0);
        if (v === VALUE_OPEN) return s.final ? BODY_OPEN : stop(AFTER_QUOTED, q);
        st = AFTER_QUOTED;
      }
    }
  }
  s.p = p;
  s.o = o;
  return s.final ? BODY_OPEN : stop(st, 0);

  /** An unquoted value from `at`: it runs to white space or '>'. Returns the cursor after it and sets s.o. */
  function unquoted(src: Buffer, dst: Buffer, len: number, at: number, out: number): number {
    while (at < len) {
      const c = src[at]!;
      if ((BYTES[c]! & WS) !== 0 || c === GT) break;
      dst[out++] = c;
      at++;
    }
    s.o = out;
    return at;
  }
}

/**
 * A quoted value at the cursor, through its closing quote (rewritten when it
 * is the tag's link). Its first bytes in a window may be known to hold no
 * closing quote (SquashState.clearIn).
 */
function quoted(s: SquashState, quote: number, link: boolean): number {
  if (link) {
    const at = s.p;
    const outcome = rewriteQuoted(s, at === 0 ? s.clearIn : 0);
    if (outcome === LINK_HELD) s.clearOut = s.len - at; // no closing quote in what the window had
    if (outcome !== LINK_PLAIN)
      return outcome === LINK_CLOSED ? VALUE_CLOSED : outcome === LINK_HELD ? VALUE_HELD : VALUE_OPEN;
  }
  s.dst[s.o++] = quote;
  s.p++;
  return quotedRest(s, quote) ? VALUE_CLOSED : VALUE_OPEN;
}

/** A quoted value after its opening quote, through its closing quote; false when the input (or window) ends first. */
function quotedRest(s: SquashState, quote: number): boolean {
  const src = s.src;
  const len = s.len;
  // Most values are short: a plain loop beats indexOf's call for them.
  const dst = s.dst;
  let p = s.p;
  let o = s.o;
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
