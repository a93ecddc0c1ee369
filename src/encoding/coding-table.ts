/**
 * The levels adaptive compression uses
 * (docs/decisions/0023-adaptive-compression-by-body-temperature.md), and the
 * server preference between codings for cold and hot bodies, from
 * measurements rather than guesses (`bench/coding-table.bench.ts` on the
 * squashed 50 KiB page of bench/http.bench.ts; the table of times and bytes
 * is in that record).
 *
 * The bound of each coding is what the common peer stack (koa-compress with
 * its defaults) sends the clients that get that coding from koa-buffer: br
 * quality 4 to a br client and to a zstd one (Chrome, Edge and Firefox also
 * accept br); zlib's default level 6 to a gzip-only or deflate-only client
 * (docs/decisions/0030-cold-gzip-at-level-6.md). A coding's cold level is
 * its cheapest level whose bytes stay at or below that bound; gzip and
 * deflate have none cheaper than 6, so a gzip-only client gets what the peer
 * stack sends it. The hot levels are each coding's smallest setting; their
 * cost does not matter, since they run once per body off the request path
 * (see adaptive.ts).
 */

/** Cold and hot level of one coding. */
export interface CodingLevels {
  /** The cheapest level whose bytes are at or below the peer stack's. */
  readonly cold: number;
  /** The smallest setting, for bodies seen again. */
  readonly hot: number;
}

/**
 * Per coding, by name, so a coding this table does not know (one added
 * later) falls back to the `compressionLevels` default for both.
 */
export const codingTable: Readonly<Record<string, CodingLevels>> = {
  zstd: { cold: 1, hot: 19 },
  br: { cold: 2, hot: 11 },
  gzip: { cold: 6, hot: 9 },
  deflate: { cold: 6, hot: 9 },
};

/**
 * Server preference for a cold body: cheapest cold call first (gzip before
 * deflate, as everywhere). The client's q-values still come first.
 */
export const coldOrder: readonly string[] = ['zstd', 'br', 'gzip', 'deflate'];

/**
 * Server preference for a hot body: fewest hot bytes first. deflate's few
 * bytes fewer than gzip do not make up for the clients that still confuse
 * its zlib and raw forms, so it stays last.
 */
export const hotOrder: readonly string[] = ['br', 'zstd', 'gzip', 'deflate'];
