/**
 * The entity tag koa-buffer gives a 200 response (SPEC 3, generateEtag): the
 * MD5 hex of the uncompressed (optimised) body, suffixed by the content
 * coding, so each representation of one page has its own strong tag; hot
 * bytes (adaptive compression) also name their level, since they differ
 * from the cold bytes of the same coding (docs/decisions.md).
 */

/**
 * The quoted ETag of a representation.
 *
 * @param md5 - lowercase hex MD5 of the uncompressed body
 * @param coding - the content coding sent, `identity` for none
 * @param hotLevel - the level of hot bytes; undefined for cold or fixed-level bytes
 * @example entityTag('5d41…', 'br') // '"5d41…-br"'
 * @example entityTag('5d41…', 'br', 11) // '"5d41…-br11"'
 */
export function entityTag(md5: string, coding: string, hotLevel?: number): string {
  if (coding === 'identity') return `"${md5}"`;
  return hotLevel === undefined ? `"${md5}-${coding}"` : `"${md5}-${coding}${hotLevel}"`;
}
