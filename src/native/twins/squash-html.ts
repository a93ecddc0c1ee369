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
import type { SquashOptions } from '../types.ts';
import { ALPHA, BANG, BYTES, COLLAPSIBLE, DASH, GT, LT, QUESTION, SLASH, afterGt, ascii, ieq } from './squash/bytes.ts';
import { comment } from './squash/comments.ts';
import {
  K_BLOCK,
  K_EOF,
  K_NEUTRAL,
  K_TEXT,
  SCHEME_HTTP,
  SCHEME_HTTPS,
  SCHEME_UNKNOWN,
  SquashState,
} from './squash/state.ts';
import { tag } from './squash/tags-attributes.ts';
import { flush, opaque, scanWs, text } from './squash/text-whitespace.ts';

const DOCTYPE = ascii('doctype');
const EMPTY = new Uint8Array(0);

// ---------------------------------------------------------------------------
// The driver (native/core/squash.cc)
// ---------------------------------------------------------------------------

/**
 * Squashes from the cursor to the end, or only until the cursor passes
 * `until` (a token is never cut: all the state lives in `s`, so the next call
 * carries on as if nothing had stopped); -1 while input is left.
 */
function squashDocument(s: SquashState, until: number = s.len): number {
  const src = s.src;
  const len = s.len;
  // A UTF-8 byte order mark is not text: the decoder drops it before parsing.
  if (s.p === 0 && len >= 3 && src[0] === 0xef && src[1] === 0xbb && src[2] === 0xbf) s.copyTo(3);
  while (s.p < len) {
    if (s.p >= until) return -1;
    const b = src[s.p]!;
    if (s.depth !== 0) {
      if (b === LT) {
        markup(s);
      } else {
        s.copyTo(s.findByte(s.p, LT));
        s.prev = K_TEXT;
      }
    } else if ((BYTES[b]! & COLLAPSIBLE) !== 0) {
      scanWs(s);
    } else if (b === LT) {
      markup(s);
    } else {
      flush(s, K_TEXT);
      s.sawText();
      text(s);
    }
  }
  flush(s, K_EOF);
  return s.o;
}

/** A '<' that opens nothing: plain text. */
function textLt(s: SquashState): void {
  flush(s, K_TEXT);
  s.dst[s.o++] = LT;
  s.p++;
  s.sawText();
}

/** A '<' at the cursor: tag, comment, doctype, bogus comment, "</>", or text. */
function markup(s: SquashState): void {
  const src = s.src;
  const len = s.len;
  const at = s.p;
  if (at + 1 >= len) return textLt(s);
  const c = src[at + 1]!;
  if ((BYTES[c]! & ALPHA) !== 0) return tag(s, false);
  if (c === SLASH) {
    if (at + 2 >= len) return textLt(s); // "</" at the end is text
    const c2 = src[at + 2]!;
    if ((BYTES[c2]! & ALPHA) !== 0) return tag(s, true);
    // "</>" is dropped by the parser; "</" + other is a bogus comment.
    return opaque(s, c2 === GT ? at + 3 : afterGt(src, len, at + 2), K_NEUTRAL);
  }
  if (c === BANG) {
    if (at + 3 < len && src[at + 2] === DASH && src[at + 3] === DASH) return comment(s);
    const doctype = at + 9 <= len && ieq(src, at + 2, DOCTYPE, 7);
    // Before any tag or text, white space around a doctype is ignored by the parser.
    return opaque(s, afterGt(src, len, at + 2), doctype && s.docStart ? K_BLOCK : K_NEUTRAL);
  }
  if (c === QUESTION) return opaque(s, afterGt(src, len, at + 2), K_NEUTRAL);
  textLt(s);
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

interface SquashArguments {
  src: Buffer;
  len: number;
  level: number;
  host: Uint8Array;
  path: Uint8Array;
  scheme: number;
  rewriteLinks: boolean;
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

  const src = bytesOf(input);
  return { src, len: src.length, level, host, path, scheme, rewriteLinks };
}
