/**
 * A brotli stream that picks its quality from how its source behaves.
 *
 * A live stream is flushed whenever its source has nothing more ready
 * (pipeline/live-flush.ts), and each flush ends a meta-block: a streamed
 * page (a shell, then the rest a second later) costs a few bytes more than
 * koa-compress's unflushed stream at the same quality. Such a page is small,
 * and one quality step more costs it little time and saves far more than
 * the flush costs (a 15 KB React page: 3,751 B at quality 5 flushed, 4,072 B
 * at quality 4 unflushed). A generated report of megabytes is the opposite:
 * it is bound by the compressor's speed, and should keep the fixed quality.
 *
 * The encoder is made once the source shows which it is: input is held
 * (at most {@link bulkBytes}) until a flush is asked for or the source ends
 * (live: `liveQuality`), or more than that arrives without a pause (bulk:
 * `quality`). Nothing is delayed: a flush makes the encoder at once and
 * flushes it, and a bulk source fills the held bytes within one turn's reads.
 * docs/decisions/0052-live-brotli-quality.md.
 */
import { Duplex } from 'node:stream';
import zlib from 'node:zlib';

/** Written to ask for a flush, so it keeps its place among the writes (node:zlib does the same). */
const flushMarker = Buffer.alloc(0);

/** Bytes held before a source that has not paused is taken for a bulk stream. */
export const bulkBytes = 64 * 1024;

/** A brotli compressor whose quality is chosen by its source's first pause (see the module comment). */
export class LiveBrotli extends Duplex {
  #inner: zlib.BrotliCompress | undefined;
  #held: Buffer[] = [];
  #heldBytes = 0;
  #flushKind: number = zlib.constants.BROTLI_OPERATION_FLUSH;
  readonly #quality: number;
  readonly #liveQuality: number;
  /** The quality chosen, once it is: for tests and traces. */
  chosen: number | undefined;

  /**
   * @param quality - the fixed quality, for a source that writes on without pausing
   * @param liveQuality - the quality of a source that pauses (or ends) before {@link bulkBytes}
   */
  constructor(quality: number, liveQuality: number) {
    super();
    this.#quality = quality;
    this.#liveQuality = liveQuality;
  }

  /**
   * Flushes what was written before it, as `BrotliCompress#flush` does (in the
   * order of the writes: it goes through this stream's own queue). A first
   * flush chooses the live quality.
   */
  flush(kind: number = zlib.constants.BROTLI_OPERATION_FLUSH): void {
    if (this.destroyed || this.writableEnded) return;
    this.#flushKind = kind;
    this.write(flushMarker);
  }

  override _write(chunk: Buffer, _encoding: BufferEncoding, done: (error?: Error | null) => void): void {
    if (chunk === flushMarker) {
      this.#encoder(this.#liveQuality).flush(this.#flushKind);
      return done();
    }
    const inner = this.#inner;
    if (inner === undefined) {
      this.#held.push(chunk);
      this.#heldBytes += chunk.length;
      if (this.#heldBytes <= bulkBytes) return done();
      this.#encoder(this.#quality);
      return this.#afterWrite(done);
    }
    if (inner.write(chunk)) done();
    else this.#afterWrite(done);
  }

  override _final(done: (error?: Error | null) => void): void {
    const inner = this.#encoder(this.#liveQuality);
    inner.once('end', () => {
      this.push(null);
      done();
    });
    inner.end();
  }

  override _read(): void {
    this.#inner?.resume();
  }

  override _destroy(error: Error | null, done: (error?: Error | null) => void): void {
    this.#inner?.destroy();
    this.#held = [];
    done(error);
  }

  /** Calls `done` once the encoder has taken in what it was given (back-pressure from the client reaches the source). */
  #afterWrite(done: () => void): void {
    const inner = this.#inner!;
    if (!inner.writableNeedDrain) return done();
    inner.once('drain', () => done());
  }

  /** The encoder, made at `quality` and given what was held if there is none yet. */
  #encoder(quality: number): zlib.BrotliCompress {
    if (this.#inner !== undefined) return this.#inner;
    const inner = zlib.createBrotliCompress({ params: { [zlib.constants.BROTLI_PARAM_QUALITY]: quality } });
    this.chosen = quality;
    inner.on('data', (chunk: Buffer) => {
      // The client is behind: the encoder waits until this stream is read again.
      if (!this.push(chunk)) inner.pause();
    });
    inner.on('error', (error) => this.destroy(error));
    this.#inner = inner;
    for (const chunk of this.#held) inner.write(chunk);
    this.#held = [];
    this.#heldBytes = 0;
    return inner;
  }
}
