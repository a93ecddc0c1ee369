/**
 * The levels adaptive compression uses (docs/decisions.md, "Adaptive
 * compression by body temperature"), and the server preference between
 * codings for cold and hot bodies, from measurements rather than guesses.
 *
 * Measured by `node --import tsx bench/coding-table.bench.ts` on 2026-12-01
 * (2-core AMD EPYC shared with five other jobs, Node 20; medians of 201
 * synchronous calls, the levels interleaved call by call) on the 50 KiB
 * template page of bench/http.bench.ts after squashing (44,865 bytes). The
 * bound is what the common peer stack sends for that page: koa-compress's
 * default, br quality 4 through a zlib stream, of the unsquashed page:
 * 10,269 bytes.
 *
 * | coding  | level | µs      | bytes  | role                                    |
 * | ------- | ----- | ------- | ------ | --------------------------------------- |
 * | zstd    | 1     | 170     | 10,156 | cold: cheapest at or below the bound    |
 * | zstd    | 19    | 62,675  | 7,774  | hot                                     |
 * | br      | 1     | 167     | 10,298 | above the bound                         |
 * | br      | 2     | 297     | 10,128 | cold                                    |
 * | br      | 11    | 171,029 | 7,395  | hot: the smallest of all                |
 * | gzip    | 3     | 423     | 9,616  | at the bound, but no cheaper than 4     |
 * | gzip    | 4     | 406     | 9,583  | cold                                    |
 * | gzip    | 9     | 6,230   | 8,665  | hot                                     |
 * | deflate | 4     | 413     | 9,571  | cold                                    |
 * | deflate | 9     | 6,228   | 8,653  | hot                                     |
 *
 * Levels 1 and 2 of gzip and deflate (10,780 and 10,412 bytes) and br 0, 1
 * and 3 miss the bound. The hot levels are each coding's smallest setting;
 * their cost does not matter, since they run once per body off the request
 * path (see adaptive.ts).
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
  gzip: { cold: 4, hot: 9 },
  deflate: { cold: 4, hot: 9 },
};

/**
 * Server preference for a cold body: cheapest cold call first (zstd 170 µs,
 * br 297, gzip 406, deflate 413). The client's q-values still come first.
 */
export const coldOrder: readonly string[] = ['zstd', 'br', 'gzip', 'deflate'];

/**
 * Server preference for a hot body: fewest hot bytes first (br 7,395, zstd
 * 7,774, gzip 8,665). deflate's 12 bytes fewer than gzip do not make up for
 * the clients that still confuse its zlib and raw forms, so it stays last.
 */
export const hotOrder: readonly string[] = ['br', 'zstd', 'gzip', 'deflate'];
