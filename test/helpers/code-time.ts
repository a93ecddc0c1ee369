/**
 * A `created` time for an entry a test writes into a store: `msAgo` before
 * now, but never before the newest mtime of the code the cache checks
 * entries against (the script node runs: under ava, its worker script in
 * node_modules). An entry older than that code is thrown away as a deploy
 * would throw it away, so on a fresh clone, where `npm ci` has just written
 * node_modules, an entry dated ten minutes back would be a miss.
 */
import { statSync } from 'node:fs';

export function createdAfterTheCode(msAgo: number, now = Date.now()): number {
  const script = process.argv[1];
  const code = script === undefined ? 0 : Math.ceil(statSync(script).mtimeMs) + 1;
  return Math.min(now, Math.max(now - msAgo, code));
}
