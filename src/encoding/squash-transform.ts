/**
 * HTML squashed as it flows: a Transform over the stream squasher
 * (`SquashStream`, native core or its twin), for a stream body on its way to
 * the compressor or the socket. The bytes that come out are those
 * `squashHtml` gives the whole body, however the body is cut
 * (docs/decisions/0049-squashing-streams.md).
 *
 * Each chunk is passed on as far as it decides: at the end of a chunk, the
 * transform holds back only what later bytes decide (a tag name that may go
 * on, a comment until its end, a link that may be shortened: at most
 * `SquashStream.maxHeld` bytes) and, as state, a white-space run whose fate
 * its right-hand neighbour decides. So when the source falls idle it has
 * nothing more it could send, and a flush of the compressor after its last
 * output sends the page as far as it can be known (pipeline/live-flush.ts).
 */
import { Transform } from 'node:stream';
import { SquashStream } from '../native/exports.ts';
import type { SquashOptions } from '../native/types.ts';

/**
 * Chunks larger than this are squashed a slice per turn of the event loop,
 * as the buffered path squashes a large page off it
 * (docs/decisions/0043-large-bodies-leave-the-event-loop.md).
 */
export const squashSlice = 256 * 1024;

const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** A Transform that squashes the HTML written to it with `options` (those of squashHtml). */
export function squashTransform(options: SquashOptions): Transform {
  const squasher = new SquashStream(options);
  return new Transform({
    transform(chunk: Buffer, _encoding, done) {
      if (chunk.length <= squashSlice) {
        let out: Buffer;
        try {
          out = squasher.feed(chunk);
        } catch (error) {
          done(error as Error);
          return;
        }
        done(null, out.length > 0 ? out : undefined);
        return;
      }
      void (async () => {
        for (let at = 0; at < chunk.length; at += squashSlice) {
          if (at > 0) await nextTurn();
          const out = squasher.feed(chunk.subarray(at, at + squashSlice));
          if (out.length > 0) this.push(out);
        }
      })().then(
        () => done(),
        (error: Error) => done(error),
      );
    },
    flush(done) {
      let out: Buffer;
      try {
        out = squasher.finish();
      } catch (error) {
        done(error as Error);
        return;
      }
      done(null, out.length > 0 ? out : undefined);
    },
  });
}
