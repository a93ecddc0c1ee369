/**
 * Sizes as the options take them: a number of bytes, or a string such as
 * `'1kb'`, `'1.5 MB'` or `'512b'`, parsed by the `bytes` package that
 * koa-compress uses for its `threshold`, so the same strings mean the same
 * sizes after a migration (1kb = 1024 bytes).
 */
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const bytes = require('bytes') as { parse(value: string | number): number | null };

const sizeString = /^\s*\d+(?:\.\d+)?\s*(?:b|kb|mb|gb|tb|pb)?\s*$/i;

/**
 * Bytes in `value`, or `undefined` when it is not a non-negative size.
 * Fractions of a byte are rounded down.
 *
 * @example parseSize('1kb') // 1024
 */
export function parseSize(value: unknown): number | undefined {
  if (typeof value === 'number') return Number.isSafeInteger(value) && value >= 0 ? value : undefined;
  // bytes would read '1e3' as 1 (parseInt); only a plain number with an optional unit is a size here
  if (typeof value !== 'string' || !sizeString.test(value)) return undefined;
  const parsed = bytes.parse(value);
  if (parsed === null || !Number.isFinite(parsed) || parsed < 0) return undefined;
  return Math.floor(parsed);
}
