/**
 * A static file compressed once (koa-static and koa-send hand over an
 * `fs.ReadStream`): its compressed bytes are kept in the representation memo
 * under the file's identity (device, inode, size and mtime, so an edited
 * or replaced file is another entry) and the coding, and sent whole to the
 * next client that accepts that coding, without reading or compressing the
 * file again. As for bodies, a file seen again is hot: it is recompressed
 * at its coding's smallest setting off the request path (encoding/upgrades.ts),
 * and later clients get those bytes. Files above the size the upgrades take
 * stream as before: a large download is not worth its memory. An HTML file
 * squashed as it flows is kept under its squash settings too (the link
 * rewriting of one host is not another's), and its hot bytes are made from
 * the file squashed whole, which gives the same bytes.
 */
import { readFile, stat } from 'node:fs/promises';
import { Transform } from 'node:stream';
import type { ResolvedOptions } from '../config/options.ts';
import { hotLevel } from '../encoding/adaptive.ts';
import { upgradeMaxSize } from '../encoding/upgrades.ts';
import type { Coding } from '../http/negotiate.ts';
import { squashHtml } from '../native/exports.ts';
import { squashHtmlOffLoop, squashOffLoopMin } from '../native/squash-off-loop.ts';
import type { SquashOptions } from '../native/types.ts';
import type { Shared } from './work.ts';

/** What the stream path needs of a memoised file. */
export interface FileMemo {
  /** The level a compression made now runs at. */
  readonly level: number;
  /** The file's bytes in the coding, when known (the hot ones first). */
  known(): Buffer | undefined;
  /** Passes the compressor's output on, keeping it to remember once it ends whole; what the body should be. */
  collect(compressor: Transform): Transform;
}

/** The file's identity, from the stream path's stat. */
interface File {
  readonly identity: string;
  readonly size: number;
  readonly path: string | Buffer;
}

/** A file's identity: device, inode, size and mtime (to the nanosecond the stat gives, as a double). */
export function fileIdentity(stats: { dev: number; ino: number; size: number; mtimeMs: number }): string {
  return `${stats.dev}:${stats.ino}:${stats.size}:${stats.mtimeMs}`;
}

/** The memo's key of a file: a prefix no MD5 hex can have, then its identity, and how it is squashed if it is. */
function keyOf(file: File, squash: SquashOptions | undefined): string {
  if (squash === undefined) return `file\0${file.identity}`;
  const links = squash.rewriteLinks ? `\0${squash.host ?? ''}\0${squash.path ?? ''}\0${squash.scheme ?? ''}` : '';
  return `file\0${file.identity}\0s${squash.level ?? 1}${links}`;
}

/**
 * The memo of one file in one coding; undefined when it is too large to keep.
 *
 * @param file - what the stat said
 * @param coding - the coding the client gets
 * @param squash - how an HTML file is squashed as it flows, when it is
 */
export function fileMemo(
  shared: Shared,
  file: File,
  coding: Coding,
  options: ResolvedOptions,
  squash?: SquashOptions,
): FileMemo | undefined {
  if (file.size > upgradeMaxSize) return undefined;
  const { memo, upgrades, log } = shared;
  const key = keyOf(file, squash);
  const cold = options.compressionLevels[coding];
  const hot = options.adaptiveCompression ? hotLevel(coding, options.compressionLevels) : cold;
  return {
    level: cold,
    known(): Buffer | undefined {
      const hotBytes = hot === cold ? undefined : memo.encoded(key, coding, hot);
      if (hotBytes) return hotBytes;
      const coldBytes = memo.encoded(key, coding, cold);
      if (!coldBytes) return undefined;
      // Seen before: hot. Its smallest encoding is made off the request path, from the file read again.
      if (hot !== cold && hotBytes === undefined && !upgrades.waits(key, coding, hot)) void upgrade(coldBytes.length);
      return coldBytes;
    },
    collect(compressor: Transform): Transform {
      const pieces: Buffer[] = [];
      let bytes = 0;
      const tee = new Transform({
        transform(chunk: Buffer, _encoding, done) {
          if (bytes <= upgradeMaxSize) pieces.push(chunk);
          bytes += chunk.length;
          done(null, chunk);
        },
        flush(done) {
          if (bytes <= upgradeMaxSize) memo.remember(key, coding, cold, Buffer.concat(pieces, bytes));
          done();
        },
      });
      compressor.on('error', (error) => tee.destroy(error));
      tee.on('close', () => {
        if (!compressor.destroyed) compressor.destroy();
      });
      compressor.pipe(tee);
      return tee;
    },
  };

  /** Reads the file again and asks for its hot bytes, unless it changed meanwhile (then it is another identity). */
  async function upgrade(coldSize: number): Promise<void> {
    try {
      const read = await readFile(file.path);
      if (fileIdentity(await stat(file.path)) !== file.identity) return;
      // Squashed whole: the bytes the stream gave, squashed as they flowed.
      const entity =
        squash === undefined
          ? read
          : read.length >= squashOffLoopMin
            ? await squashHtmlOffLoop(read, squash)
            : squashHtml(read, squash);
      upgrades.request(key, entity, coding, hot, coldSize);
    } catch (error) {
      log.debug('log_stream_failed', { error: (error as Error).message });
    }
  }
}
