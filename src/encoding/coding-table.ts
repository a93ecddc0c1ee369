/**
 * The levels adaptive compression uses
 * (docs/decisions/0023-adaptive-compression-by-body-temperature.md), and the server preference between
 * codings for cold and hot bodies, from measurements rather than guesses.
 *
 * Measured by `node --import tsx bench/coding-table.bench.ts` on 2026-12-01
 * (2-core AMD EPYC shared with four other jobs, Node 20; medians of 201
 * synchronous calls, the levels interleaved call by call) on the 50 KiB
 * template page of bench/http.bench.ts after squashing (44,865 bytes). The
 * bound of each coding is what the common peer stack (koa-compress with its
 * defaults, through a zlib stream, of the unsquashed page) sends the
 * clients that get that coding from koa-buffer: br quality 4 to a br client
 * and to a zstd one (Chrome, Edge and Firefox also accept br), 10,269
 * bytes; zlib's default level 6 to a gzip-only client, 8,932 bytes, and to
 * a deflate-only one, 8,920.
 *
 * | coding  | level | µs     | bytes  | role                                    |
 * | ------- | ----- | ------ | ------ | --------------------------------------- |
 * | zstd    | 1     | 147    | 10,156 | cold: cheapest at or below br 4's       |
 * | zstd    | 19    | 15,105 | 7,774  | hot                                     |
 * | br      | 1     | 160    | 10,298 | 29 bytes above br 4's                   |
 * | br      | 2     | 343    | 10,128 | cold                                    |
 * | br      | 11    | 48,025 | 7,395  | hot: the smallest of all                |
 * | gzip    | 5     | 642    | 9,047  | above gzip 6's                          |
 * | gzip    | 6     | 1,215  | 8,731  | cold                                    |
 * | gzip    | 9     | 2,293  | 8,665  | hot                                     |
 * | deflate | 6     | 1,133  | 8,719  | cold                                    |
 * | deflate | 9     | 2,260  | 8,653  | hot                                     |
 *
 * gzip and deflate have no cheaper level under their bound: a gzip-only
 * client gets gzip 6 cold, as from the peer stack, whose 8,932 bytes are
 * 13 % fewer than br 4's (levels 1 to 5 give 10,780 down to 9,047). br 0,
 * 1 and 3 miss the bound. The hot levels are each coding's smallest
 * setting; their cost does not matter, since they run once per body off
 * the request path (see adaptive.ts).
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
 * Server preference for a cold body: cheapest cold call first (zstd 147 µs,
 * br 343, deflate 1,133, gzip 1,215; gzip before deflate, as everywhere).
 * The client's q-values still come first.
 */
export const coldOrder: readonly string[] = ['zstd', 'br', 'gzip', 'deflate'];

/**
 * Server preference for a hot body: fewest hot bytes first (br 7,395, zstd
 * 7,774, gzip 8,665). deflate's 12 bytes fewer than gzip do not make up for
 * the clients that still confuse its zlib and raw forms, so it stays last.
 */
export const hotOrder: readonly string[] = ['br', 'zstd', 'gzip', 'deflate'];
