/**
 * `*` patterns, compiled by one function for every option that takes them:
 * the media types of `compressibleTypes` and `excludedTypes` (`'text/*'`,
 * `'*\/*+json'`) and the path patterns of `dictionaries` (`'/articles/*'`).
 * `*` stands for any run of characters, `/` included, as URLPattern's full
 * wildcard does (RFC 9842 match patterns are URLPatterns); everything else
 * stands for itself.
 */

/** Characters a RegExp gives a meaning. */
const special = /[.*+?^${}()|[\]\\]/g;

/**
 * The pattern as a RegExp over the whole text.
 *
 * @param pattern - literal text and `*`s
 * @example wildcardPattern('/assets/app.*.js').test('/assets/app.3f9a.js') // true
 */
export function wildcardPattern(pattern: string): RegExp {
  const parts = pattern.split('*').map((part) => part.replace(special, '\\$&'));
  return new RegExp(`^${parts.join('.*')}$`);
}
