/**
 * Squashing a large page without holding the event loop: the native squash
 * runs on libuv's thread pool (`squashHtmlAsync` in native/binding/squash.cc),
 * the TypeScript twin in slices with a turn of the event loop between them.
 * Both give the bytes `squashHtml` gives.
 *
 * Why: one synchronous call on a large page is time every other request
 * waits for (docs/decisions/0043-large-bodies-leave-the-event-loop.md).
 * Below {@link squashOffLoopMin} the synchronous call is kept: it is under a
 * millisecond, less than what the hop to the pool and back adds to the
 * page's own latency.
 */
import { addon } from './binding.ts';
import { squashHtmlSliced } from './twins/squash-html.ts';
import type { SquashOptions } from './types.ts';

/** Pages of at least this many bytes are squashed off the event loop; below it the hop costs more than it saves. */
export const squashOffLoopMin = 256 * 1024;

type SquashAsync = (input: NodeJS.ArrayBufferView, options?: SquashOptions) => Promise<Buffer>;

/** The native pool squash, when the addon loaded and has one (a build older than it does not). */
const nativeAsync: SquashAsync | undefined =
  typeof (addon as { squashHtmlAsync?: unknown } | undefined)?.squashHtmlAsync === 'function'
    ? (addon as unknown as { squashHtmlAsync: SquashAsync }).squashHtmlAsync
    : undefined;

/** How {@link squashHtmlOffLoop} runs in this process: on the thread pool (native) or in slices (twin). */
export const squashOffLoopKind: 'threadpool' | 'sliced' = nativeAsync ? 'threadpool' : 'sliced';

/**
 * The bytes `squashHtml(input, options)` gives, made off the event loop.
 * The input's bytes are read while the promise is pending: the caller must
 * neither change them nor transfer their ArrayBuffer until it settles.
 *
 * @param input - the page's bytes (a string must be converted first, in slices for a large one)
 * @returns a promise rejected with the TypeError squashHtml throws for bad arguments
 */
export async function squashHtmlOffLoop(input: NodeJS.ArrayBufferView, options?: SquashOptions): Promise<Buffer> {
  return nativeAsync ? nativeAsync(input, options) : squashHtmlSliced(input, options);
}

/** The native allocator of large bodies, when the addon has one. */
const nativeLarge = (addon as { largeBuffer?: (size: number) => Buffer } | undefined)?.largeBuffer;

/**
 * An uninitialised Buffer of `size` bytes for a large body made in slices.
 * From the addon, its memory is given back to the system on a thread of its
 * own when it is collected, since freeing a large block on the event loop
 * holds it (docs/decisions/0043-large-bodies-leave-the-event-loop.md).
 * Without the addon, `Buffer.allocUnsafeSlow`.
 */
export function largeBuffer(size: number): Buffer {
  return nativeLarge && size > 0 ? nativeLarge(size) : Buffer.allocUnsafeSlow(size);
}
