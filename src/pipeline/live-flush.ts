/**
 * A live stream's compressor flushed whenever its source has nothing more
 * ready, so every byte the application wrote (a page's shell before a slow
 * part renders, one server-sent event) can be decoded by the client at once
 * instead of waiting in the compressor's window until it fills or the
 * stream ends: gzip and deflate with a sync flush, brotli with its flush
 * operation, zstd with an end-of-block flush. The writes of one turn of the
 * event loop share one flush, so a burst costs one flush, not one per chunk,
 * and a source held back by its compressor (a fast generator) is not idle:
 * it is flushed when the compressor has caught up and nothing more came.
 * A plain file keeps the non-flushing path (file-feed.ts): it is read as
 * fast as it compresses, and a flush would only cost it bytes.
 */
import type { Duplex, Readable, Transform } from 'node:stream';
import zlib from 'node:zlib';
import type { Coding } from '../http/negotiate.ts';

/** Flushes what `compressor` holds, as its coding flushes without ending. */
function flush(compressor: Duplex, coding: Coding): void {
  if (coding === 'br')
    (compressor as Duplex & { flush(kind: number): void }).flush(zlib.constants.BROTLI_OPERATION_FLUSH);
  else if (coding === 'zstd') (compressor as Duplex & { flush(): void }).flush();
  else (compressor as zlib.Gzip).flush(zlib.constants.Z_SYNC_FLUSH);
}

/**
 * After each chunk `source` hands to `compressor` (through a pipe set up
 * before this is called, so this listener changes no flowing state), a
 * flush is queued for the end of the turn when nothing more is buffered in
 * the source. Between them, a `squasher` (an HTML stream squashed as it
 * flows, encoding/squash-transform.ts) passes on at once all that a chunk
 * decides, so the flush follows each output of the squasher instead: what
 * it holds back waits for bytes the source has not written, and a flush
 * could not send it. One that still has chunks to pass on (held up by a slow
 * client) is flushed after its next output.
 */
export function flushWhenIdle(source: Readable, compressor: Duplex, coding: Coding, squasher?: Transform): void {
  let queued = false;
  let draining = false;
  const drained = (): void => {
    draining = false;
    queue();
  };
  const queue = (): void => {
    if (queued) return;
    queued = true;
    setImmediate(run);
  };
  const run = (): void => {
    queued = false;
    if (squasher && (squasher.writableLength > 0 || squasher.readableLength > 0)) return;
    if (compressor.writableEnded || compressor.destroyed) return;
    // A compressor still behind on its input holds the source back (the pipe waits for its drain): the source
    // is not idle but fast, and a flush per chunk would cost a fast generator bytes and speed. Asked again once
    // it has drained; by then a fast source has written its next chunk, and an idle one gets its flush.
    if (!compressor.writableNeedDrain) flush(compressor, coding);
    else if (!draining) {
      draining = true;
      compressor.once('drain', drained);
    }
  };
  (squasher ?? source).on('data', () => {
    if (source.readableLength > 0) return;
    queue();
  });
}
