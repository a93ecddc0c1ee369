/**
 * Feeding a compressor from a file stream through two buffers used over and
 * over, instead of letting the stream allocate a new 64 KiB Buffer for every
 * read.
 *
 * Why: every Buffer an `fs.ReadStream` reads into is memory V8 counts
 * against its heap limit, so a large file sent compressed made as many
 * bytes of short-lived Buffers, and with them full garbage collections that
 * pause the event loop. Two buffers, each reused only once the compressor
 * has consumed it, take that away; what remains is the compressor's own
 * output (the figures: docs/decisions/0022-stream-bodies-and-the-peers-switches.md).
 *
 * The stream the app made keeps its file descriptor, its range (`start`,
 * `end`) and its life cycle: it is read here with positioned reads on its
 * descriptor and destroyed when the compressor is done, has failed, or was
 * destroyed by Koa because the client went away.
 */
import fs, { type ReadStream } from 'node:fs';
import type { Transform } from 'node:stream';

/** Bytes per read: what an `fs.ReadStream` reads by default. */
const chunkSize = 64 * 1024;

/** True for a stream this module can read itself: an `fs.ReadStream` not yet read from, in binary mode. */
export function isPlainFileStream(stream: unknown): stream is ReadStream {
  if (!(stream instanceof fs.ReadStream)) return false;
  const state = stream.readableLength === 0 && stream.bytesRead === 0 && !stream.readableFlowing;
  return state && stream.readableEncoding === null && !stream.destroyed;
}

/** What {@link holdOpen} gives: the one decision whether the held file is opened. */
export interface HeldOpen {
  /** Opens the file (true) or settles the stream without it (false, before it is destroyed); the first call decides. */
  release(open: boolean): void;
}

/** A file stream as its construction sees it: `_construct` opens the file. */
type Constructing = ReadStream & { _construct?: (callback: (error?: Error | null) => void) => void };

/**
 * Holds the opening of `stream`'s file until the caller knows whether the
 * file will be read, so a response answered without it (from the memo, or
 * 304) neither opens nor closes a descriptor.
 *
 * Why: koa-send makes the stream before the middleware sees it, and the
 * stream opens its file by itself; each open and close was a thread-pool
 * round trip, and a 100 KB stylesheet the memo answers took half as much
 * server CPU again with them (bench/streams.bench.ts against the code
 * before, docs/performance.md). A stream constructs itself from
 * `process.nextTick`; koa-send makes it in a promise continuation (after
 * its own stat), and the continuations that carry the response back up to
 * the middleware run before any tick, so on the stream path its
 * `_construct` has not run yet: this wraps it, for this stream only, to
 * wait for the decision. A stream made synchronously by the last
 * middleware has started to open already; the wrapper is then never called
 * and the stream behaves as it always did.
 */
export function holdOpen(stream: ReadStream): HeldOpen {
  const own = stream as Constructing;
  const construct = own._construct;
  if (typeof construct !== 'function' || Object.hasOwn(own, '_construct')) return { release: () => undefined };
  let decision: boolean | undefined;
  let waiting: ((error?: Error | null) => void) | undefined;
  own._construct = (callback) => {
    if (decision === undefined) waiting = callback;
    else if (decision) construct.call(stream, callback);
    else callback();
  };
  return {
    release(open) {
      if (decision !== undefined) return;
      decision = open;
      // The wrapper stays: a stream not yet constructed calls it later, and it must keep the decision then.
      const callback = waiting;
      waiting = undefined;
      if (callback === undefined) return;
      if (open) construct.call(stream, callback);
      else callback();
    },
  };
}

/** The stream's descriptor, once it has opened its file (rejects if the open fails). */
export function fileDescriptor(stream: ReadStream): Promise<number> {
  const fd = (stream as ReadStream & { fd: number | null }).fd;
  if (typeof fd === 'number') return Promise.resolve(fd);
  if (stream.destroyed) return Promise.reject(stream.errored ?? new Error('the file stream was destroyed'));
  return new Promise((resolve, reject) => {
    const ready = (): void => {
      stream.off('error', failed);
      resolve((stream as ReadStream & { fd: number }).fd);
    };
    const failed = (error: Error): void => {
      stream.off('ready', ready);
      reject(error);
    };
    stream.once('ready', ready);
    stream.once('error', failed);
  });
}

function read(fd: number, buffer: Buffer, length: number, position: number): Promise<number> {
  return new Promise((resolve, reject) =>
    fs.read(fd, buffer, 0, length, position, (error, bytesRead) => (error ? reject(error) : resolve(bytesRead))),
  );
}

/** Resolves once `compressor` has consumed `chunk` (its write callback), rejects if it fails or closes first. */
function write(compressor: Transform, chunk: Buffer): Promise<void> {
  return new Promise((resolve, reject) => {
    if (compressor.destroyed) {
      reject(new Error('the compressor was destroyed'));
      return;
    }
    const closed = (): void => reject(new Error('the compressor was destroyed'));
    compressor.once('close', closed);
    compressor.write(chunk, (error) => {
      compressor.off('close', closed);
      if (error) reject(error);
      else resolve();
    });
  });
}

/**
 * Reads the file of `stream` into `compressor` and ends it; never throws. A
 * read error destroys the compressor with that error; the stream is
 * destroyed (its descriptor closed) in every case.
 *
 * @param onError - told of a read or write failure (not of a client that went away)
 */
export async function feedFile(
  stream: ReadStream,
  compressor: Transform,
  onError: (error: Error) => void,
): Promise<void> {
  const range = stream as ReadStream & { start?: number; end?: number };
  let position = range.start ?? 0;
  const last = range.end ?? Infinity; // inclusive, as createReadStream's end
  const buffers = [Buffer.allocUnsafeSlow(chunkSize), Buffer.allocUnsafeSlow(chunkSize)];
  // The write of one buffer may still be running while the other is filled: a buffer is reused once its write is done.
  const writing: Array<Promise<void> | undefined> = [undefined, undefined];
  try {
    const fd = await fileDescriptor(stream);
    for (let turn = 0; position <= last; turn ^= 1) {
      await writing[turn];
      const buffer = buffers[turn]!;
      const length = Math.min(chunkSize, last - position + 1);
      const bytesRead = await read(fd, buffer, length, position);
      if (bytesRead === 0) break;
      position += bytesRead;
      writing[turn] = write(compressor, buffer.subarray(0, bytesRead));
      // Surface a failed write now; the other buffer's write is awaited before it is reused.
      writing[turn]!.catch(() => undefined);
    }
    await writing[0];
    await writing[1];
    if (!compressor.destroyed) compressor.end();
  } catch (error) {
    if (!compressor.destroyed) {
      onError(error as Error);
      compressor.destroy(error as Error);
    }
  } finally {
    stream.destroy();
  }
}
