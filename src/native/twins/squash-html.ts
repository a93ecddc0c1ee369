/**
 * The TypeScript twin of the native HTML squasher (native/core/squash.cc and
 * native/binding/squash.cc): same signature, same argument checks, codes and
 * messages, and the same output bytes for every input (test/native/squash/*.test.ts
 * checks that on a corpus and on generated input, scripts/fuzz.mjs on what a
 * fuzzer finds).
 *
 * This file is the driver and the arguments; each rule lives in the file of
 * its stage under ./squash/, named as its C++ counterpart under
 * native/core/squash/ (text-whitespace.ts = text_whitespace.h, and so on), so
 * a change in one maps file to file onto the other; only the speed tricks
 * differ. The tag-name table (./squash/html-tables.ts) is generated with
 * native/core/html_tables.h from native/html-elements.json.
 */
import { isDataView } from 'node:util/types';
import { describe, withCode } from './errors.ts';
import type { BinaryLike, HtmlSquashStream, SquashOptions } from '../types.ts';
import {
  ALPHA,
  BANG,
  BYTES,
  COLLAPSIBLE,
  CR,
  DASH,
  GT,
  LF,
  LT,
  NAME_END,
  QUESTION,
  SLASH,
  SPACE,
  ascii,
  ieq,
} from './squash/bytes.ts';
import { comment, longCommentRest, tailAfter } from './squash/comments.ts';
import { ANCHOR, IMG } from './squash/html-tables.ts';
import {
  AT_LONG_COMMENT,
  AT_NONE,
  AT_OPAQUE,
  AT_RAW_TEXT,
  AT_TAG_BODY,
  AT_TAG_NAME,
  HOLD_MAX,
  K_BLOCK,
  K_EOF,
  K_NEUTRAL,
  K_TEXT,
  SCHEME_HTTP,
  SCHEME_HTTPS,
  SCHEME_UNKNOWN,
  SquashState,
} from './squash/state.ts';
import { BODY_CLOSED, BODY_STOPPED, rawText, tag, tagBody, tagEnd, tagRest } from './squash/tags-attributes.ts';
import { flush, opaque, scanWs, text } from './squash/text-whitespace.ts';

const DOCTYPE = ascii('doctype');
const EMPTY = new Uint8Array(0);

// ---------------------------------------------------------------------------
// The driver (native/core/squash.cc)
// ---------------------------------------------------------------------------

/**
 * Squashes a whole body from the cursor to the end, or only until the cursor
 * passes `until` (a token is never cut: all the state lives in `s`, so the
 * next call carries on as if nothing had stopped); -1 while input is left.
 */
function squashDocument(s: SquashState, until: number = s.len): number {
  const src = s.src;
  // A UTF-8 byte order mark is not text: the decoder drops it before parsing.
  if (s.p === 0 && s.len >= 3 && src[0] === 0xef && src[1] === 0xbb && src[2] === 0xbf) s.copyTo(3);
  tokens(s, until);
  if (s.p < s.len) return -1;
  flush(s, K_EOF);
  return s.o;
}

/**
 * Tokens from the cursor to the end of the window, or until the cursor passes
 * `until`. True when a stream's window stopped early (s.progress and the
 * cursor say where).
 */
function tokens(s: SquashState, until: number): boolean {
  const src = s.src;
  const len = s.len;
  while (s.p < len) {
    if (s.p >= until) return false;
    const b = src[s.p]!;
    if (s.depth !== 0) {
      if (b === LT) {
        if (markup(s)) return true;
      } else {
        s.copyTo(s.findByte(s.p, LT));
        s.prev = K_TEXT;
      }
    } else if ((BYTES[b]! & COLLAPSIBLE) !== 0) {
      scanWs(s);
    } else if (b === LT) {
      if (markup(s)) return true;
    } else {
      flush(s, K_TEXT);
      s.sawText();
      text(s);
    }
  }
  return false;
}

/** A '<' that opens nothing: plain text. */
function textLt(s: SquashState): boolean {
  flush(s, K_TEXT);
  s.dst[s.o++] = LT;
  s.p++;
  s.sawText();
  return false;
}

/**
 * A '<' at the cursor: tag, comment, doctype, bogus comment, "</>", or text.
 * Returns true when a stream's window stopped (before the token when what it
 * is depends on bytes the window does not have).
 */
function markup(s: SquashState): boolean {
  const src = s.src;
  const len = s.len;
  const at = s.p;
  if (!s.final && (at + 1 >= len || (src[at + 1] === SLASH && at + 2 >= len))) return true;
  if (at + 1 >= len) return textLt(s);
  const c = src[at + 1]!;
  if ((BYTES[c]! & ALPHA) !== 0) return tag(s, false);
  if (c === SLASH) {
    if (at + 2 >= len) return textLt(s); // "</" at the end is text
    const c2 = src[at + 2]!;
    if ((BYTES[c2]! & ALPHA) !== 0) return tag(s, true);
    // "</>" is dropped by the parser; "</" + other is a bogus comment.
    if (c2 !== GT) return opaqueToGt(s, at + 2, K_NEUTRAL);
    opaque(s, at + 3, K_NEUTRAL);
    return false;
  }
  if (c === BANG) {
    if (!s.final && at + 9 > len) return true; // "<!--" or "<!doctype" may follow
    if (at + 3 < len && src[at + 2] === DASH && src[at + 3] === DASH) return comment(s);
    const doctype = at + 9 <= len && ieq(src, at + 2, DOCTYPE, 7);
    // Before any tag or text, white space around a doctype is ignored by the parser.
    return opaqueToGt(s, at + 2, doctype && s.docStart ? K_BLOCK : K_NEUTRAL);
  }
  if (c === QUESTION) return opaqueToGt(s, at + 2, K_NEUTRAL);
  return textLt(s);
}

/** A token from the cursor that runs to the next '>' after `from` (a doctype, a bogus comment), taken as of kind `k`. */
function opaqueToGt(s: SquashState, from: number, k: number): boolean {
  flush(s, k);
  s.copyTo(from);
  return opaqueRest(s, k);
}

/** The rest of a token that runs to the next '>'. A stream's window that ends first stops inside it. */
function opaqueRest(s: SquashState, k: number): boolean {
  const gt = s.findByte(s.p, GT);
  s.copyTo(gt === s.len ? s.len : gt + 1);
  if (!s.final && gt === s.len) {
    s.progress.at = AT_OPAQUE;
    s.progress.kind = k;
    return true;
  }
  s.prev = k;
  s.prevInHead = s.inHead;
  return false;
}

/** The token an earlier window of a stream stopped inside, from the cursor. */
function resumeToken(s: SquashState): boolean {
  const pr = s.progress;
  const at = pr.at;
  pr.at = AT_NONE;
  switch (at) {
    case AT_TAG_NAME: {
      let n1 = s.p;
      while (n1 < s.len && (BYTES[s.src[n1]!]! & NAME_END) === 0) n1++;
      return tagRest(s, n1, pr.flags, pr.endTag);
    }
    case AT_TAG_BODY: {
      const f = pr.flags;
      const endTag = pr.endTag;
      const verbatim = s.depth !== 0;
      const link = !endTag && !verbatim && s.rewrite && (f & (ANCHOR | IMG)) !== 0;
      const body = tagBody(s, verbatim, link ? f : 0);
      if (body === BODY_STOPPED) {
        pr.at = AT_TAG_BODY;
        return true;
      }
      return tagEnd(s, f, endTag, verbatim, body === BODY_CLOSED);
    }
    case AT_RAW_TEXT:
      return rawText(s, pr.flags, pr.script);
    case AT_OPAQUE:
      return opaqueRest(s, pr.kind);
    case AT_LONG_COMMENT:
      return longCommentRest(s);
    default:
      return false;
  }
}

/**
 * One window of a stream (s.src, s.len): the byte order mark at the start of
 * the body, the token an earlier window stopped in, the tokens, and in the
 * last window the run left pending at the end. Returns where it stopped.
 */
function squashWindow(s: SquashState): number {
  const src = s.src;
  const len = s.len;
  s.p = 0;
  s.o = 0;
  if (!s.started) {
    // A UTF-8 byte order mark is not text: the decoder drops it before parsing.
    const bom = len >= 1 && src[0] === 0xef && (len < 2 || src[1] === 0xbb) && (len < 3 || src[2] === 0xbf);
    if (!s.final && len < 3 && (len === 0 || bom)) return 0;
    if (len >= 3 && bom) s.copyTo(3);
    s.started = true;
  }
  if (!resumeToken(s)) tokens(s, len);
  if (s.final) flush(s, K_EOF);
  return s.p;
}

/** The bytes a window leaves for the next, a white-space run from `compactFrom` on as one byte (state.h says why). */
function kept(window: Buffer, p: number, compactFrom: number): Buffer {
  const end = Math.min(compactFrom, window.length);
  const run = end < window.length;
  const bytes = Buffer.allocUnsafe(end - p + (run ? 1 : 0));
  window.copy(bytes, 0, p, end);
  if (run) {
    let lf = false;
    for (let i = end; i < window.length; i++) lf ||= window[i] === LF || window[i] === CR;
    bytes[end - p] = lf ? LF : SPACE;
  }
  return bytes;
}

// ---------------------------------------------------------------------------
// Arguments (native/binding/squash.cc)
// ---------------------------------------------------------------------------

const INPUT_EXPECTED = 'a string, Buffer, TypedArray or DataView';

const SCHEME_EXPECTED = "'http', 'https' or undefined";

/** TypeError ERR_INVALID_ARG_TYPE (or RangeError ERR_OUT_OF_RANGE, or TypeError ERR_INVALID_ARG_VALUE) naming `options.<name>`. */
function optionError(
  name: string,
  expected: string,
  received: unknown,
  code: 'ERR_INVALID_ARG_TYPE' | 'ERR_OUT_OF_RANGE' | 'ERR_INVALID_ARG_VALUE' = 'ERR_INVALID_ARG_TYPE',
): Error {
  const message = `The "options.${name}" property must be ${expected} (received ${describe(received)})`;
  return withCode(code === 'ERR_OUT_OF_RANGE' ? new RangeError(message) : new TypeError(message), code);
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
 * Squashes the white space of an HTML document
 * (docs/decisions/0005-squasher-white-space-rules.md), bytes in,
 * bytes out; the TypeScript twin of the native `squashHtml`.
 *
 * @param input - The page: a Buffer, any TypedArray or DataView (its viewed bytes), or a string, taken as UTF-8.
 * @param options - `level` 0 copies, 1 or 2 squash (2's CSS/JS minification lives in the middleware);
 *   `rewriteLinks` with `host` (and `path`) shortens links to this site in `<a href="…">` and `<img src="…">`,
 *   keeping their scheme: `http://` links only when `scheme` is 'http', `https://` only when 'https', `//` always.
 * @returns A new Buffer, never longer than the input's bytes; squashing it again returns the same bytes.
 * @throws TypeError with code `ERR_INVALID_ARG_TYPE` when `input` is not bytes or a string, `options` is not an
 *   object, `level` is not a number, `rewriteLinks` not a boolean, `host`/`path`/`scheme` not strings;
 *   with code `ERR_INVALID_ARG_VALUE` when `scheme` is a string other than 'http' or 'https'.
 * @throws RangeError with code `ERR_OUT_OF_RANGE` when `level` is a number other than 0, 1 or 2.
 * @example
 * squashHtml('<ul>\n  <li>a</li>\n  <li>b</li>\n</ul>').toString(); // '<ul><li>a</li><li>b</li></ul>'
 */
export function squashHtml(input: Buffer | NodeJS.ArrayBufferView | string, options?: SquashOptions): Buffer {
  const { src, len, level, host, path, scheme, rewriteLinks } = squashArguments(input, options);
  if (level === 0 || len === 0) return Buffer.from(src);
  let dst = scratch;
  if (dst.length < len) {
    dst = Buffer.allocUnsafeSlow(Math.max(len, dst.length * 2));
    if (dst.length <= SCRATCH_KEEP) scratch = dst;
  }
  const n = squashDocument(new SquashState(src, len, dst, host, path, scheme, rewriteLinks));
  const out = Buffer.allocUnsafe(n);
  dst.copy(out, 0, 0, n);
  return out;
}

/**
 * Input bytes per turn of the event loop in {@link squashHtmlSliced}: a short
 * turn of the twin's work (docs/decisions/0043-large-bodies-leave-the-event-loop.md).
 */
export const twinSlice = 128 * 1024;

const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/**
 * The twin of the binding's `squashHtmlAsync`: the same bytes as
 * {@link squashHtml}, made {@link twinSlice} input bytes at a time with a turn
 * of the event loop between slices, so a large page does not hold the loop
 * for the whole squash. The input's bytes are read across turns: the caller
 * leaves them alone until the promise settles.
 *
 * @throws TypeError as {@link squashHtml} does, and for a string (its UTF-8 would be made in one call)
 */
export async function squashHtmlSliced(
  input: Buffer | NodeJS.ArrayBufferView,
  options?: SquashOptions,
  slice: number = twinSlice,
): Promise<Buffer> {
  if (typeof input === 'string') {
    throw withCode(
      new TypeError(`The "input" argument must be a Buffer, TypedArray or DataView (received ${describe(input)})`),
      'ERR_INVALID_ARG_TYPE',
    );
  }
  const { src, len, level, host, path, scheme, rewriteLinks } = squashArguments(input, options);
  // Each call has its own output: squashes in progress at the same time must not share the scratch buffer.
  const dst = Buffer.allocUnsafeSlow(len);
  if (level === 0) {
    for (let offset = 0; offset < len; offset += slice) {
      if (offset > 0) await nextTurn();
      src.copy(dst, offset, offset, Math.min(len, offset + slice));
    }
    return dst;
  }
  const state = new SquashState(src, len, dst, host, path, scheme, rewriteLinks);
  let n = -1;
  for (let until = slice; n < 0; until += slice) {
    n = squashDocument(state, until);
    if (n < 0) await nextTurn();
  }
  return dst.subarray(0, n);
}

interface SquashSettings {
  level: number;
  host: Uint8Array;
  path: Uint8Array;
  scheme: number;
  rewriteLinks: boolean;
}

interface SquashArguments extends SquashSettings {
  src: Buffer;
  len: number;
}

/** Checks and reads the arguments of {@link squashHtml}, in the binding's order. */
function squashArguments(
  input: Buffer | NodeJS.ArrayBufferView | string,
  options: SquashOptions | undefined,
): SquashArguments {
  if (typeof input !== 'string' && !ArrayBuffer.isView(input)) {
    throw withCode(
      new TypeError(`The "input" argument must be ${INPUT_EXPECTED} (received ${describe(input)})`),
      'ERR_INVALID_ARG_TYPE',
    );
  }
  const settings = squashSettings(options);
  const src = bytesOf(input);
  return { src, len: src.length, ...settings };
}

/** Checks and reads level, rewriteLinks, host, path and scheme, in that order, once each (as the binding does). */
function squashSettings(options: SquashOptions | undefined): SquashSettings {
  let level = 1;
  let rewriteLinks = false;
  let host = EMPTY;
  let path = EMPTY;
  let scheme = SCHEME_UNKNOWN;
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
      if (lv !== 0 && lv !== 1 && lv !== 2) throw optionError('level', '0, 1 or 2', lv, 'ERR_OUT_OF_RANGE');
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
    const sc: unknown = options.scheme;
    if (sc !== undefined) {
      if (typeof sc !== 'string') throw optionError('scheme', SCHEME_EXPECTED, sc);
      if (sc !== 'http' && sc !== 'https') throw optionError('scheme', SCHEME_EXPECTED, sc, 'ERR_INVALID_ARG_VALUE');
      scheme = sc === 'http' ? SCHEME_HTTP : SCHEME_HTTPS;
    }
  }
  return { level, host, path, scheme, rewriteLinks };
}

// ---------------------------------------------------------------------------
// Streams (native/core/squash_stream.h, native/binding/squash.cc)
// ---------------------------------------------------------------------------

const NO_BYTES = Buffer.alloc(0);

/**
 * The squasher over a body that comes in pieces, the twin of the binding's
 * `SquashStream` (native/core/squash_stream.h): feeding it the body in any
 * number of chunks, cut anywhere, gives the bytes {@link squashHtml} gives
 * the whole body. What the bytes so far decide comes back at once; bytes
 * whose fate the next ones decide (a tag name that may go on, a possible
 * comment, a link that may be shortened) are held back, at most
 * {@link SquashStream.maxHeld}, and a white-space run pending at the end of a
 * chunk is held as state, not bytes.
 *
 * Each window here is what was held back followed by the whole chunk; the
 * native one reads the chunk in place. The engine gives the same bytes for
 * any cut, so the two agree.
 *
 * @example
 * const stream = new SquashStream();
 * Buffer.concat([stream.feed('<p>  a'), stream.feed('  </p>\n'), stream.finish()]).toString(); // '<p> a </p>'
 */
export class SquashStream implements HtmlSquashStream {
  /** The most bytes held back between calls: a comment is decided within 32 KiB of its start. */
  static readonly maxHeld = HOLD_MAX;

  /** Undefined at level 0, which copies. */
  readonly #state: SquashState | undefined;
  #carry: Buffer = NO_BYTES;
  #finished = false;

  /**
   * @param options - as {@link squashHtml}'s: `level`, `rewriteLinks` with `host`, `path` and `scheme`
   * @throws TypeError or RangeError for a bad option, as {@link squashHtml} does
   */
  constructor(options?: SquashOptions) {
    const { level, host, path, scheme, rewriteLinks } = squashSettings(options);
    if (level === 0) return;
    const state = new SquashState(NO_BYTES, 0, NO_BYTES, host, path, scheme, rewriteLinks);
    state.started = false;
    this.#state = state;
  }

  // The twin of the binding's type tag: a method borrowed onto another object fails clearly.
  static #of(self: unknown, method: string): SquashStream {
    if (typeof self === 'object' && self !== null && #carry in self) return self as SquashStream;
    throw withCode(
      new TypeError(`SquashStream.prototype.${method} called on an object that is not a SquashStream`),
      'ERR_INVALID_THIS',
    );
  }

  static #finishedError(method: string): Error {
    return withCode(
      new Error(`SquashStream.${method}() called after finish(): a SquashStream squashes one body; create a new one`),
      'KB_SQUASH_STREAM_FINISHED',
    );
  }

  /**
   * Squashes the next piece of the body.
   *
   * @param chunk - bytes (a Buffer, any TypedArray or DataView) or a string, taken as UTF-8
   * @returns the bytes this piece decides, possibly none
   * @throws Error with code `KB_SQUASH_STREAM_FINISHED` after {@link SquashStream.finish}
   * @throws TypeError with code `ERR_INVALID_ARG_TYPE` when `chunk` is neither bytes nor a string
   */
  feed(chunk: BinaryLike): Buffer {
    const self = SquashStream.#of(this, 'feed');
    if (self.#finished) throw SquashStream.#finishedError('feed');
    if (typeof chunk !== 'string' && !ArrayBuffer.isView(chunk)) {
      throw withCode(
        new TypeError(`The "chunk" argument must be ${INPUT_EXPECTED} (received ${describe(chunk)})`),
        'ERR_INVALID_ARG_TYPE',
      );
    }
    const bytes = bytesOf(chunk);
    if (self.#state === undefined || bytes.length === 0) return Buffer.from(bytes);
    return self.#window(self.#carry.length === 0 ? bytes : Buffer.concat([self.#carry, bytes]), false);
  }

  /**
   * The body ends.
   *
   * @returns the bytes held back, decided now
   * @throws Error with code `KB_SQUASH_STREAM_FINISHED` when called a second time
   */
  finish(): Buffer {
    const self = SquashStream.#of(this, 'finish');
    if (self.#finished) throw SquashStream.#finishedError('finish');
    self.#finished = true;
    if (self.#state === undefined) return Buffer.alloc(0);
    return self.#window(self.#carry, true);
  }

  /** Bytes held back now, at most {@link SquashStream.maxHeld}. */
  get held(): number {
    return SquashStream.#of(this, 'held').#carry.length;
  }

  /** Squashes one window; keeps what it stopped before for the next. */
  #window(window: Buffer, final: boolean): Buffer {
    const s = this.#state!;
    s.src = window;
    s.len = window.length;
    // A window writes at most its bytes and the run pending before it.
    s.dst = Buffer.allocUnsafe(window.length + 1);
    s.final = final;
    s.compactFrom = window.length;
    s.clearOut = 0;
    const p = squashWindow(s);
    const out = s.dst.subarray(0, s.o);
    s.before = tailAfter(s.before, out);
    s.wroteBefore ||= s.o > 0;
    s.clearIn = p < window.length ? s.clearOut : 0;
    this.#carry = final ? NO_BYTES : kept(window, p, s.compactFrom);
    return out;
  }
}
