/**
 * The entity tag koa-buffer gives a 200 response (the generateEtag option): the
 * MD5 hex of the uncompressed (optimised) body, suffixed by the content
 * coding, so each representation of one page has its own strong tag.
 */

/**
 * The quoted ETag of a representation.
 *
 * @param md5 - lowercase hex MD5 of the uncompressed body
 * @param coding - the content coding sent, `identity` for none
 * @example entityTag('5d41…', 'br') // '"5d41…-br"'
 */
export function entityTag(md5: string, coding: string): string {
  return coding === 'identity' ? `"${md5}"` : `"${md5}-${coding}"`;
}
