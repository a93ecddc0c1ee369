/**
 * The TypeScript twin of the native HTML squasher (native/core/squash.cc and
 * native/binding/squash.cc): same signature, same argument checks, codes and
 * messages, and the same output bytes for every input (test/squash/*.test.ts
 * checks that on a corpus and on generated input).
 *
 * The rules are described once, at the top of squash.cc; this file follows
 * the same steps under the same names (markup, tag, tagBody, flush, comment,
 * scriptEnd, rewriteUrl, …) so a change in one is easy to mirror in the
 * other; only the speed tricks differ. The tag-name table mirrors
 * native/core/html_tables.h.
 */
import { isDataView } from 'node:util/types';
import { describe, withCode } from './errors.ts';
import type { SquashOptions } from '../types.ts';

// ---------------------------------------------------------------------------
// Byte and tag-name classes (native/core/html_tables.h)
// ---------------------------------------------------------------------------

const WS = 1;
const ALPHA = 2;
const NAME_END = 4;
const END_DELIM = 8;

const BYTES = new Uint8Array(256);
for (const c of [0x09, 0x0a, 0x0c, 0x0d, 0x20]) BYTES[c] = WS | NAME_END | END_DELIM;
for (let c = 0x41; c <= 0x5a; c++) {
  BYTES[c] = ALPHA;
  BYTES[c + 0x20] = ALPHA;
}
BYTES[0x2f] = NAME_END | END_DELIM; // '/'
BYTES[0x3e] = NAME_END | END_DELIM; // '>'

// The text scanner's view of a byte: 0 copy, 1 a space or LF (copied when
// alone), 2 stop ('<', tab, form feed, carriage return).
const TEXT = new Uint8Array(256);
TEXT[0x20] = TEXT[0x0a] = 1;
TEXT[0x3c] = TEXT[0x09] = TEXT[0x0c] = TEXT[0x0d] = 2;

const LT = 0x3c;
const GT = 0x3e;
const SLASH = 0x2f;
const BANG = 0x21;
const DASH = 0x2d;
const QUESTION = 0x3f;
const EQUALS = 0x3d;
const DQUOTE = 0x22;
const SQUOTE = 0x27;
const LF = 0x0a;
const CR = 0x0d;
const SPACE = 0x20;

const BLOCK = 1 << 0;
const HEAD = 1 << 1;
const HEAD_OK = 1 << 2;
const RAW = 1 << 3;
const SCRIPT = 1 << 4;
const PLAINTEXT = 1 << 5;
const PRE_LIKE = 1 << 6;
const BASE = 1 << 7;
const ANCHOR = 1 << 8;
const IMG = 1 << 9;
const VOID = 1 << 10;
const FORMATTING = 1 << 11;
const HTML = 1 << 12;
const RAW_SHIFT = 16;

const RAW_NAMES = [
  '',
  'script',
  'style',
  'textarea',
  'title',
  'xmp',
  'iframe',
  'noembed',
  'noframes',
  'noscript',
  'plaintext',
];
const raw = (name: string): number => RAW | (RAW_NAMES.indexOf(name) << RAW_SHIFT);

const BLOCK_NAMES =
  'p dd dl dt h1 h2 h3 h4 h5 h6 li ol td th tr ul dir div nav body form main menu aside table ' +
  'tbody tfoot thead center figure footer header hgroup legend option address article caption details section ' +
  'summary colgroup fieldset frameset optgroup blockquote figcaption';

const TAG_FLAGS: Array<[string, number]> = [
  ...BLOCK_NAMES.split(' ').map((name): [string, number] => [name, BLOCK]),
  ...['br', 'hr', 'col', 'frame'].map((name): [string, number] => [name, BLOCK | VOID]),
  ...'b i s u em tt big code font nobr small strike strong'
    .split(' ')
    .map((name): [string, number] => [name, FORMATTING]),
  ['a', ANCHOR | FORMATTING],
  ['img', IMG],
  ['html', BLOCK | HTML],
  ['pre', BLOCK | PRE_LIKE],
  ['listing', BLOCK | PRE_LIKE],
  ['xmp', BLOCK | raw('xmp')],
  ['plaintext', BLOCK | PLAINTEXT | raw('plaintext')],
  ['head', BLOCK | HEAD | HEAD_OK],
  ['base', HEAD_OK | BASE],
  ['link', HEAD_OK],
  ['meta', HEAD_OK],
  ['bgsound', HEAD_OK],
  ['basefont', HEAD_OK],
  ['template', HEAD_OK],
  ['script', HEAD_OK | SCRIPT | raw('script')],
  ['style', HEAD_OK | raw('style')],
  ['title', HEAD_OK | raw('title')],
  ['noscript', HEAD_OK | raw('noscript')],
  ['textarea', raw('textarea')],
  ['iframe', raw('iframe')],
  ['noembed', raw('noembed')],
  ['noframes', raw('noframes')],
];

const ascii = (s: string): Uint8Array => Uint8Array.from(s, (ch) => ch.charCodeAt(0));
const RAW_NAME_BYTES = RAW_NAMES.map(ascii);

// An open-addressed table keyed by a hash of the lowercased name, so that
// classifying a tag allocates no string.
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

for (const [name, flags] of TAG_FLAGS) {
  const bytes = ascii(name);
  let slot = hashName(bytes, 0, bytes.length);
  while (slotName[slot] !== undefined) slot = (slot + 1) & (SLOTS - 1);
  slotName[slot] = bytes;
  slotFlags[slot] = flags;
}

const lower = (b: number): number => (b >= 0x41 && b <= 0x5a ? b | 0x20 : b);

/** ASCII case-insensitive: `n` bytes of `src` at `at` against lowercase `lit`. */
function ieq(src: Uint8Array, at: number, lit: Uint8Array, n: number): boolean {
  for (let i = 0; i < n; i++) if (lower(src[at + i]!) !== lit[i]) return false;
  return true;
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

const DOCTYPE = ascii('doctype');
const HTTP = ascii('http://');
const HTTPS = ascii('https://');
const HREF = ascii('href');
const SRC = ascii('src');
const SCRIPT_NAME = ascii('script');
const IF = ascii('[if');
const ENDIF = ascii('[endif]');

// ---------------------------------------------------------------------------
// The squasher (native/core/squash.cc, class squasher)
// ---------------------------------------------------------------------------

// What a white-space run touches on each side.
const K_BOF = 0;
const K_TEXT = 1;
const K_NEUTRAL = 2;
const K_BLOCK = 3;
const K_EOF = 4;

// Tag-body states.
const BEFORE_NAME = 0;
const ATTR_NAME = 1;
const AFTER_NAME = 2;
const BEFORE_VALUE = 3;
const UNQUOTED = 4;
const AFTER_QUOTED = 5;
const SELF_CLOSING = 6;

// Script data states.
const S_DATA = 0;
const S_ESC = 1;
const S_ESC_DASH = 2;
const S_ESC_DASH_DASH = 3;
const S_DESC = 4;
const S_DESC_DASH = 5;
const S_DESC_DASH_DASH = 6;

const EMPTY = new Uint8Array(0);

class Squasher {
  p = 0;
  o = 0;
  wsPending = false;
  wsLf = false;
  prev = K_BOF;
  prevInHead = false;
  inHead = false;
  headAllowed = true;
  docStart = true;
  depth = 0;
  formatting = 0;
  rewrite: boolean;

  constructor(
    readonly src: Buffer,
    readonly len: number,
    readonly dst: Buffer,
    readonly host: Uint8Array,
    readonly path: Uint8Array,
    rewriteLinks: boolean,
  ) {
    this.rewrite = rewriteLinks && host.length > 0;
  }

  run(): number {
    const src = this.src;
    const len = this.len;
    if (len >= 3 && src[0] === 0xef && src[1] === 0xbb && src[2] === 0xbf) this.copyTo(3);
    while (this.p < len) {
      const b = src[this.p]!;
      if (this.depth !== 0) {
        if (b === LT) {
          this.markup();
        } else {
          this.copyTo(this.findByte(this.p, LT));
          this.prev = K_TEXT;
        }
      } else if ((BYTES[b]! & WS) !== 0) {
        this.scanWs();
      } else if (b === LT) {
        this.markup();
      } else {
        this.flush(K_TEXT);
        this.sawText();
        this.text();
      }
    }
    this.flush(K_EOF);
    return this.o;
  }

  findByte(from: number, c: number): number {
    if (from >= this.len) return this.len;
    const at = this.src.indexOf(c, from);
    return at < 0 || at >= this.len ? this.len : at;
  }

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

  flush(next: number): void {
    if (!this.wsPending) return;
    this.wsPending = false;
    const lf = this.wsLf;
    this.wsLf = false;
    const prev = this.prev;
    if (
      prev !== K_TEXT &&
      next !== K_TEXT &&
      this.formatting === 0 &&
      (prev === K_BLOCK || next === K_BLOCK || this.prevInHead)
    ) {
      return;
    }
    this.dst[this.o++] = lf ? LF : SPACE;
  }

  scanWs(): void {
    this.wsPending = true;
    const src = this.src;
    const len = this.len;
    let p = this.p;
    let lf = false;
    // A CR counts as a line feed: the parser turns it into one (squash.cc, skip_ws).
    while (p < len) {
      const b = src[p]!;
      if ((BYTES[b]! & WS) === 0) break;
      if (b === LF || b === CR) lf = true;
      p++;
    }
    if (lf) this.wsLf = true;
    this.p = p;
  }

  text(): void {
    const src = this.src;
    const dst = this.dst;
    const len = this.len;
    let p = this.p;
    let o = this.o;
    while (p < len) {
      const b = src[p]!;
      const t = TEXT[b]!;
      if (t !== 0) {
        if (t === 2 || p + 1 >= len) break;
        const next = src[p + 1]!;
        if ((BYTES[next]! & WS) !== 0 || next === LT) break;
      }
      dst[o++] = b;
      p++;
    }
    this.p = p;
    this.o = o;
  }

  textLt(): void {
    this.flush(K_TEXT);
    this.dst[this.o++] = LT;
    this.p++;
    this.sawText();
  }

  opaque(end: number, k: number): void {
    this.flush(k);
    this.copyTo(end);
    this.prev = k;
    this.prevInHead = this.inHead;
  }

  afterGt(from: number): number {
    const gt = this.findByte(from, GT);
    return gt === this.len ? this.len : gt + 1;
  }

  markup(): void {
    const src = this.src;
    const len = this.len;
    const s = this.p;
    if (s + 1 >= len) return this.textLt();
    const c = src[s + 1]!;
    if ((BYTES[c]! & ALPHA) !== 0) return this.tag(false);
    if (c === SLASH) {
      if (s + 2 >= len) return this.textLt();
      const c2 = src[s + 2]!;
      if ((BYTES[c2]! & ALPHA) !== 0) return this.tag(true);
      return this.opaque(c2 === GT ? s + 3 : this.afterGt(s + 2), K_NEUTRAL);
    }
    if (c === BANG) {
      if (s + 3 < len && src[s + 2] === DASH && src[s + 3] === DASH) return this.comment();
      const doctype = s + 9 <= len && ieq(src, s + 2, DOCTYPE, 7);
      return this.opaque(this.afterGt(s + 2), doctype && this.docStart ? K_BLOCK : K_NEUTRAL);
    }
    if (c === QUESTION) return this.opaque(this.afterGt(s + 2), K_NEUTRAL);
    this.textLt();
  }

  startsWith(from: number, n: number, lit: Uint8Array): boolean {
    if (n < lit.length) return false;
    for (let i = 0; i < lit.length; i++) if (this.src[from + i] !== lit[i]) return false;
    return true;
  }

  comment(): void {
    const src = this.src;
    const len = this.len;
    const c0 = this.p + 4;
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
        i = this.findByte(i, DASH);
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
      this.depth !== 0 ||
      this.startsWith(c0, n, IF) ||
      (n >= 1 && src[c0] === BANG) ||
      this.startsWith(c1 - ENDIF.length, n, ENDIF);
    // Nothing written yet and U+FEFF next: removing the comment would make it
    // a byte order mark at byte 0, which the decoder drops (squash.cc, other_markup).
    const bomNext =
      this.o === 0 &&
      !this.wsPending &&
      end + 3 <= len &&
      src[end] === 0xef &&
      src[end + 1] === 0xbb &&
      src[end + 2] === 0xbf;
    if (!keep && !bomNext) {
      const after = end < len ? src[end]! : -1;
      if (this.wsPending || this.prev !== K_TEXT || after < 0 || (BYTES[after]! & WS) !== 0 || after === LT) {
        this.p = end;
        return;
      }
    }
    this.opaque(end, K_NEUTRAL);
  }

  tag(endTag: boolean): void {
    const src = this.src;
    const len = this.len;
    const n0 = this.p + (endTag ? 2 : 1);
    let n1 = n0;
    let h = 0;
    while (n1 < len) {
      const c = src[n1]!;
      if ((BYTES[c]! & NAME_END) !== 0) break;
      h = (Math.imul(h, 31) + (c | 0x20)) | 0;
      n1++;
    }
    const f = classifyTag(src, n0, n1 - n0, h);
    // Outside the block's box only: before a start tag, after an end tag (squash.cc says why).
    const block = (f & BLOCK) !== 0;
    const outside = block && ((f & VOID) !== 0 || !endTag);
    const outsideAfter = block && ((f & VOID) !== 0 || endTag);
    const verbatim = this.depth !== 0;
    this.flush(outside ? K_BLOCK : K_NEUTRAL);
    let closed: boolean;
    if (n1 < len && src[n1] === GT) {
      // No attributes: the tag in one copy.
      this.copyTo(n1 + 1);
      closed = true;
    } else {
      this.copyTo(n1);
      const link = !endTag && !verbatim && this.rewrite && (f & (ANCHOR | IMG)) !== 0;
      closed = this.tagBody(verbatim, link ? f : 0);
    }
    this.prev = outsideAfter ? K_BLOCK : K_NEUTRAL;
    if ((f & FORMATTING) !== 0) {
      if (!endTag) {
        this.formatting++;
      } else if (this.formatting !== 0) {
        this.formatting--;
      }
    }
    if (!verbatim) {
      this.docStart = false;
      if ((f & HEAD) !== 0) {
        this.inHead = !endTag && this.headAllowed;
      } else if ((f & HEAD_OK) === 0) {
        this.inHead = false;
      }
      if (endTag || (f & HTML) === 0) this.headAllowed = false;
      if (!endTag && (f & BASE) !== 0) this.rewrite = false;
    }
    this.prevInHead = this.inHead;
    if (!closed) return;
    if (endTag) {
      if ((f & PRE_LIKE) !== 0 && this.depth !== 0) this.depth--;
      return;
    }
    if ((f & PRE_LIKE) !== 0) this.depth++;
    if ((f & RAW) !== 0) this.rawText(f);
  }

  tagBody(verbatim: boolean, link: number): boolean {
    const src = this.src;
    const dst = this.dst;
    const len = this.len;
    let p = this.p;
    let o = this.o;
    let s = BEFORE_NAME;
    let an0 = 0;
    let an1 = 0;
    while (p < len) {
      const b = src[p]!;
      if ((BYTES[b]! & WS) !== 0) {
        if (s === ATTR_NAME) {
          an1 = p;
          s = AFTER_NAME;
        } else if (s === UNQUOTED || s === AFTER_QUOTED || s === SELF_CLOSING) {
          s = BEFORE_NAME;
        }
        if (verbatim) {
          dst[o++] = b;
          p++;
        } else {
          let lf = b === LF || b === CR;
          p++;
          while (p < len) {
            const c = src[p]!;
            if ((BYTES[c]! & WS) === 0) break;
            if (c === LF || c === CR) lf = true;
            p++;
          }
          dst[o++] = lf ? LF : SPACE;
        }
        continue;
      }
      if (b === GT) {
        dst[o++] = b;
        this.p = p + 1;
        this.o = o;
        return true;
      }
      if (s === BEFORE_VALUE) {
        if (b === DQUOTE || b === SQUOTE) {
          this.p = p;
          this.o = o;
          if (!this.quoted(b, link !== 0 && b === DQUOTE && this.namesLink(link, an0, an1))) return false;
          p = this.p;
          o = this.o;
          s = AFTER_QUOTED;
        } else {
          // An unquoted value runs to white space or '>'.
          while (p < len) {
            const c = src[p]!;
            if ((BYTES[c]! & WS) !== 0 || c === GT) break;
            dst[o++] = c;
            p++;
          }
          s = UNQUOTED;
        }
        continue;
      }
      if (b === SLASH && s !== ATTR_NAME && s !== UNQUOTED) {
        dst[o++] = b;
        p++;
        s = SELF_CLOSING;
        continue;
      }
      if (b === EQUALS && (s === AFTER_NAME || s === ATTR_NAME)) {
        if (s === ATTR_NAME) an1 = p;
        dst[o++] = b;
        p++;
        s = BEFORE_VALUE;
        continue;
      }
      if (s === ATTR_NAME) {
        // stopped on '/': the name ends, self-closing follows
        an1 = p;
        dst[o++] = b;
        p++;
        s = SELF_CLOSING;
        continue;
      }
      if (s === UNQUOTED) {
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
      s = ATTR_NAME;
      // The usual name="value" straight through.
      if (p + 1 < len && src[p] === EQUALS) {
        an1 = p;
        const q = src[p + 1]!;
        if (q === DQUOTE || q === SQUOTE) {
          dst[o++] = EQUALS;
          this.p = p + 1;
          this.o = o;
          if (!this.quoted(q, link !== 0 && q === DQUOTE && this.namesLink(link, an0, an1))) return false;
          p = this.p;
          o = this.o;
          s = AFTER_QUOTED;
        }
      }
    }
    this.p = p;
    this.o = o;
    return false;
  }

  namesLink(link: number, an0: number, an1: number): boolean {
    const n = an1 - an0;
    if ((link & ANCHOR) !== 0) return n === 4 && ieq(this.src, an0, HREF, 4);
    return n === 3 && ieq(this.src, an0, SRC, 3);
  }

  quoted(quote: number, rewrite: boolean): boolean {
    const src = this.src;
    const len = this.len;
    if (!rewrite) {
      // Most values are short: a plain loop beats indexOf's call for them.
      const dst = this.dst;
      let p = this.p + 1;
      let o = this.o;
      dst[o++] = quote;
      const stop = Math.min(len, p + 64);
      while (p < stop) {
        const c = src[p++]!;
        dst[o++] = c;
        if (c === quote) {
          this.p = p;
          this.o = o;
          return true;
        }
      }
      this.p = p;
      this.o = o;
      const close = this.findByte(p, quote);
      if (close === len) {
        this.copyTo(len);
        return false;
      }
      this.copyTo(close + 1);
      return true;
    }
    const v0 = this.p + 1;
    const v1 = this.findByte(v0, quote);
    if (v1 === len) {
      this.copyTo(len);
      return false;
    }
    this.dst[this.o++] = quote;
    this.rewriteUrl(v0, v1 - v0);
    this.dst[this.o++] = quote;
    this.p = v1 + 1;
    return true;
  }

  rewriteUrl(v: number, n: number): void {
    const src = this.src;
    const host = this.host;
    const path = this.path;
    let a: number;
    if (n >= 7 && ieq(src, v, HTTP, 7)) {
      a = 7;
    } else if (n >= 8 && ieq(src, v, HTTPS, 8)) {
      a = 8;
    } else if (n >= 2 && src[v] === SLASH && src[v + 1] === SLASH) {
      a = 2;
    } else {
      return this.emit(v, n);
    }
    let j = a;
    while (j < n) {
      const b = src[v + j];
      if (b === SLASH || b === QUESTION || b === 0x23) break;
      j++;
    }
    if (j - a !== host.length) return this.emit(v, n);
    for (let i = 0; i < host.length; i++) if (lower(src[v + a + i]!) !== lower(host[i]!)) return this.emit(v, n);
    let k = j;
    while (k < n && src[v + k] !== QUESTION && src[v + k] !== 0x23) k++;
    if (k < n && src[v + k] === QUESTION && path.length !== 0) {
      let same: boolean;
      if (k === j) {
        same = path.length === 1 && path[0] === SLASH;
      } else {
        same = k - j === path.length;
        for (let i = 0; same && i < path.length; i++) same = src[v + j + i] === path[i];
      }
      if (same) return this.emit(v + k, n - k);
    }
    if (j === k) {
      this.dst[this.o++] = SLASH;
    } else {
      // A path that alone would read as another host ("//x", "/\x", "/<tab>/x") stays whole (squash.cc, rewrite_url).
      let q = j + 1;
      while (q < n && (src[v + q] === 0x09 || src[v + q] === LF || src[v + q] === CR)) q++;
      if (q < n && (src[v + q] === SLASH || src[v + q] === 0x5c)) return this.emit(v, n);
    }
    this.emit(v + j, n - j);
  }

  rawText(f: number): void {
    let end: number;
    if ((f & PLAINTEXT) !== 0) {
      end = this.len;
    } else if ((f & SCRIPT) !== 0) {
      end = this.scriptEnd(this.p);
    } else {
      end = this.rawEnd(this.p, RAW_NAME_BYTES[f >>> RAW_SHIFT]!);
    }
    this.copyTo(end);
  }

  rawEnd(q: number, name: Uint8Array): number {
    const src = this.src;
    const len = this.len;
    const n = name.length;
    for (; ; q++) {
      q = this.findByte(q, LT);
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

  scriptCloseAt(q: number): boolean {
    const src = this.src;
    return (
      q + 8 < this.len &&
      src[q + 1] === SLASH &&
      ieq(src, q + 2, SCRIPT_NAME, 6) &&
      (BYTES[src[q + 8]!]! & END_DELIM) !== 0
    );
  }

  /** Letters from `from`: where they stop, negated when they spell "script" (~after). */
  scriptWord(from: number): number {
    const src = this.src;
    let r = from;
    while (r < this.len && (BYTES[src[r]!]! & ALPHA) !== 0) r++;
    return r - from === 6 && ieq(src, from, SCRIPT_NAME, 6) ? ~r : r;
  }

  scriptEnd(q: number): number {
    const src = this.src;
    const len = this.len;
    let s = S_DATA;
    while (q < len) {
      if (s === S_DATA) {
        q = this.findByte(q, LT);
        if (q === len) return len;
        if (this.scriptCloseAt(q)) return q;
        if (q + 3 < len && src[q + 1] === BANG && src[q + 2] === DASH && src[q + 3] === DASH) {
          s = S_ESC_DASH_DASH;
          q += 4;
        } else {
          q++;
        }
        continue;
      }
      const b = src[q]!;
      if (b === LT) {
        const next = q + 1 < len;
        if (s <= S_ESC_DASH_DASH) {
          if (this.scriptCloseAt(q)) return q;
          if (next && src[q + 1] === SLASH) {
            s = S_ESC;
            q += 2;
          } else if (next && (BYTES[src[q + 1]!]! & ALPHA) !== 0) {
            const word = this.scriptWord(q + 1);
            const script = word < 0;
            const r = script ? ~word : word;
            if (r === len) return len;
            const delim = (BYTES[src[r]!]! & END_DELIM) !== 0;
            s = delim && script ? S_DESC : S_ESC;
            q = delim ? r + 1 : r;
          } else {
            s = S_ESC;
            q++;
          }
        } else if (next && src[q + 1] === SLASH) {
          const word = this.scriptWord(q + 2);
          const script = word < 0;
          const r = script ? ~word : word;
          if (r === len) return len;
          const delim = (BYTES[src[r]!]! & END_DELIM) !== 0;
          s = delim && script ? S_ESC : S_DESC;
          q = delim ? r + 1 : r;
        } else {
          s = S_DESC;
          q++;
        }
        continue;
      }
      switch (s) {
        case S_ESC:
          s = b === DASH ? S_ESC_DASH : S_ESC;
          break;
        case S_ESC_DASH:
          s = b === DASH ? S_ESC_DASH_DASH : S_ESC;
          break;
        case S_ESC_DASH_DASH:
          s = b === GT ? S_DATA : b === DASH ? S_ESC_DASH_DASH : S_ESC;
          break;
        case S_DESC:
          s = b === DASH ? S_DESC_DASH : S_DESC;
          break;
        case S_DESC_DASH:
          s = b === DASH ? S_DESC_DASH_DASH : S_DESC;
          break;
        default: // S_DESC_DASH_DASH
          s = b === GT ? S_DATA : b === DASH ? S_DESC_DASH_DASH : S_DESC;
          break;
      }
      q++;
    }
    return len;
  }
}

// ---------------------------------------------------------------------------
// Arguments (native/binding/squash.cc)
// ---------------------------------------------------------------------------

const INPUT_EXPECTED = 'a string, Buffer, TypedArray or DataView';

function optionError(name: string, expected: string, received: unknown, range = false): Error {
  const message = `The "options.${name}" property must be ${expected} (received ${describe(received)})`;
  return range
    ? withCode(new RangeError(message), 'ERR_OUT_OF_RANGE')
    : withCode(new TypeError(message), 'ERR_INVALID_ARG_TYPE');
}

// The intrinsic accessors, so a view whose `buffer` or `byteLength` was
// redefined on the instance is read as the binding reads it (internal slots).
const typedArrayProto = Object.getPrototypeOf(Uint8Array.prototype) as object;
const getter = (proto: object, name: string): ((this: unknown) => unknown) =>
  Object.getOwnPropertyDescriptor(proto, name)!.get as (this: unknown) => unknown;
const TA_BUFFER = getter(typedArrayProto, 'buffer');
const TA_OFFSET = getter(typedArrayProto, 'byteOffset');
const TA_LENGTH = getter(typedArrayProto, 'byteLength');
const DV_BUFFER = getter(DataView.prototype, 'buffer');
const DV_OFFSET = getter(DataView.prototype, 'byteOffset');
const DV_LENGTH = getter(DataView.prototype, 'byteLength');

function bytesOf(input: string | NodeJS.ArrayBufferView): Buffer {
  if (typeof input === 'string') return Buffer.from(input, 'utf8');
  const [bufferOf, offsetOf, lengthOf] = isDataView(input)
    ? [DV_BUFFER, DV_OFFSET, DV_LENGTH]
    : [TA_BUFFER, TA_OFFSET, TA_LENGTH];
  return Buffer.from(
    bufferOf.call(input) as ArrayBuffer,
    offsetOf.call(input) as number,
    lengthOf.call(input) as number,
  );
}

// One scratch buffer, reused: the result is then copied into a Buffer of the
// exact size, as the native binding's result carries no slack either.
const SCRATCH_KEEP = 8 * 1024 * 1024;
let scratch = Buffer.allocUnsafeSlow(64 * 1024);

/**
 * Squashes the white space of an HTML document (docs/architecture.md, "The squasher"), bytes in,
 * bytes out; the TypeScript twin of the native `squashHtml`.
 *
 * @param input - The page: a Buffer, any TypedArray or DataView (its viewed bytes), or a string, taken as UTF-8.
 * @param options - `level` 0 copies, 1 or 2 squash (2's CSS/JS minification lives in the middleware);
 *   `rewriteLinks` with `host` (and `path`) shortens links to this site in `<a href="…">` and `<img src="…">`.
 * @returns A new Buffer, never longer than the input's bytes; squashing it again returns the same bytes.
 * @throws TypeError with code `ERR_INVALID_ARG_TYPE` when `input` is not bytes or a string, `options` is not an
 *   object, `level` is not a number, `rewriteLinks` not a boolean, or `host`/`path` not strings.
 * @throws RangeError with code `ERR_OUT_OF_RANGE` when `level` is a number other than 0, 1 or 2.
 * @example
 * squashHtml('<ul>\n  <li>a</li>\n  <li>b</li>\n</ul>').toString(); // '<ul><li>a</li><li>b</li></ul>'
 */
export function squashHtml(input: Buffer | NodeJS.ArrayBufferView | string, options?: SquashOptions): Buffer {
  if (typeof input !== 'string' && !ArrayBuffer.isView(input)) {
    throw withCode(
      new TypeError(`The "input" argument must be ${INPUT_EXPECTED} (received ${describe(input)})`),
      'ERR_INVALID_ARG_TYPE',
    );
  }
  let level = 1;
  let rewriteLinks = false;
  let host = EMPTY;
  let path = EMPTY;
  if (options !== undefined) {
    if (typeof options !== 'object' || options === null) {
      throw withCode(
        new TypeError(`The "options" argument must be an object or undefined (received ${describe(options)})`),
        'ERR_INVALID_ARG_TYPE',
      );
    }
    const lv: unknown = options.level;
    if (lv !== undefined) {
      if (typeof lv !== 'number') throw optionError('level', '0, 1 or 2', lv);
      if (lv !== 0 && lv !== 1 && lv !== 2) throw optionError('level', '0, 1 or 2', lv, true);
      level = lv;
    }
    const rw: unknown = options.rewriteLinks;
    if (rw !== undefined) {
      if (typeof rw !== 'boolean') throw optionError('rewriteLinks', 'a boolean or undefined', rw);
      rewriteLinks = rw;
    }
    const h: unknown = options.host;
    if (h !== undefined) {
      if (typeof h !== 'string') throw optionError('host', 'a string or undefined', h);
      host = Buffer.from(h, 'utf8');
    }
    const pt: unknown = options.path;
    if (pt !== undefined) {
      if (typeof pt !== 'string') throw optionError('path', 'a string or undefined', pt);
      path = Buffer.from(pt, 'utf8');
    }
  }

  const src = bytesOf(input);
  const len = src.length;
  if (level === 0 || len === 0) return Buffer.from(src);
  let dst = scratch;
  if (dst.length < len) {
    dst = Buffer.allocUnsafeSlow(Math.max(len, dst.length * 2));
    if (dst.length <= SCRATCH_KEEP) scratch = dst;
  }
  const n = new Squasher(src, len, dst, host, path, rewriteLinks).run();
  const out = Buffer.allocUnsafe(n);
  dst.copy(out, 0, 0, n);
  return out;
}
