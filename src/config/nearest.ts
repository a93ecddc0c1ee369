/**
 * The option a mistyped name most likely meant: `cacheDurration` →
 * `cacheDuration`, `optimizeContent` → `optimiseContent`. Only a name close
 * enough to be a slip of the keyboard gets one; a name that merely shares a
 * word with an option (`cacheTTL`, `maxAge`) gets none, as a wrong guess
 * would send the reader to the wrong page.
 */

/** Option names are at most this long; a longer given name is no typo of one, and is not compared. */
const comparedMax = 64;

/** Edits a name of `length` characters may be away from the one it meant: one per four characters, 1 to 3. */
const allowedEdits = (length: number): number => Math.max(1, Math.min(3, Math.floor(length / 4)));

/**
 * Edits (insertions, deletions, substitutions, and swaps of two neighbours)
 * from `a` to `b`, or `limit + 1` as soon as that many are certain.
 */
function editDistance(a: string, b: string, limit: number): number {
  if (Math.abs(a.length - b.length) > limit) return limit + 1;
  // Three rows of the optimal-string-alignment table: the one before last, the last, and this one.
  let before = new Array<number>(b.length + 1).fill(0);
  let last = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const row = [i];
    let smallest = i;
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let d = Math.min(last[j]! + 1, row[j - 1]! + 1, last[j - 1]! + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d = Math.min(d, before[j - 2]! + 1);
      row.push(d);
      smallest = Math.min(smallest, d);
    }
    if (smallest > limit) return limit + 1;
    before = last;
    last = row;
  }
  return last[b.length]!;
}

/**
 * The name among `known` that `name` most likely meant, compared without
 * regard to case; undefined when none is close enough. Of two equally
 * close, the first in ASCII order.
 *
 * @example nearestName('cacheDurration', ['cache', 'cacheDuration']) // 'cacheDuration'
 */
export function nearestName(name: string, known: Iterable<string>): string | undefined {
  if (name.length > comparedMax) return undefined;
  const given = name.toLowerCase();
  const limit = allowedEdits(name.length);
  let best: string | undefined;
  let bestDistance = limit + 1;
  for (const candidate of [...known].sort()) {
    if (candidate === name) continue;
    const distance = editDistance(given, candidate.toLowerCase(), limit);
    if (distance < bestDistance) {
      best = candidate;
      bestDistance = distance;
    }
  }
  return best;
}
