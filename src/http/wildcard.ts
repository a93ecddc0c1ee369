/**
 * `*` patterns, compiled by one function for every option that takes them:
 * the media types of `compressibleTypes` and `excludedTypes` (`'text/*'`,
 * `'*\/*+json'`), the path patterns of `dictionaries` (`'/articles/*'`) and
 * the cookie names of `cacheIgnoreCookies` (`'_ga_*'`).
 * `*` stands for any run of characters, `/` included, as URLPattern's full
 * wildcard does (RFC 9842 match patterns are URLPatterns); everything else
 * stands for itself.
 *
 * One rule of URLPattern's pathname syntax is kept for path patterns: a
 * `*` right after the pathname's prefix character `/` takes that `/` with
 * it, and a `*` right after a wildcard is a modifier (zero or more) that
 * makes the wildcard and its `/` optional together: `/a/**` matches `/a`
 * as well as `/a/b/c`, where `/a/*` needs the `/`. A browser matches so, and
 * the server has to match what the browser does.
 * test/config/dictionary-match.test.ts holds the path patterns against
 * URLPattern.
 */

/** Characters a RegExp gives a meaning. */
const special = /[.*+?^${}()|[\]\\]/g;

const escaped = (text: string): string => text.replace(special, '\\$&');

/**
 * The pattern as a RegExp over the whole text.
 *
 * @param pattern - literal text and `*`s
 * @param prefix - for a path pattern, `/`: the character a repeated `*` makes optional along with it
 * @example wildcardPattern('/assets/app.*.js', '/').test('/assets/app.3f9a.js') // true
 */
export function wildcardPattern(pattern: string, prefix = ''): RegExp {
  return new RegExp(`^${wildcardSource(pattern, prefix)}$`);
}

/**
 * Several patterns as one RegExp over the whole text, matching what any of them matches.
 *
 * @example wildcardsPattern(['_ga', '_ga_*']).test('_ga_X1') // true
 */
export function wildcardsPattern(patterns: readonly string[]): RegExp {
  return new RegExp(`^(?:${patterns.map((pattern) => wildcardSource(pattern)).join('|')})$`);
}

/** The RegExp source of one pattern, unanchored. */
function wildcardSource(pattern: string, prefix = ''): string {
  let source = '';
  let at = 0;
  for (let star = pattern.indexOf('*'); star !== -1; star = pattern.indexOf('*', at)) {
    let end = star;
    while (pattern[end] === '*') end++;
    const literal = pattern.slice(at, star);
    if (end - star >= 2 && prefix !== '' && literal.endsWith(prefix)) {
      // The prefix and its wildcard, then zero or more of them: `(?:/.*)?`; one more `*`
      // after those is a wildcard of its own, which makes the prefix no matter.
      source += escaped(literal.slice(0, -prefix.length));
      source += end - star === 2 ? `(?:${escaped(prefix)}.*)?` : '.*';
    } else source += `${escaped(literal)}.*`;
    at = end;
  }
  return source + escaped(pattern.slice(at));
}
