/**
 * The entity tag koa-buffer gives a 200 response (the generateEtag option): the
 * MD5 hex of the uncompressed (optimised) body, suffixed by the content
 * coding, so each representation of one page has its own strong tag; hot
 * bytes (adaptive compression) also name their level, since they differ
 * from the cold bytes of the same coding
 * (docs/decisions/0023-adaptive-compression-by-body-temperature.md).
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

/** A strong entity tag as RFC 9110 8.8.3 writes it: DQUOTE *etagc DQUOTE. */
const strongTag = /^"[\x21\x23-\x7e\x80-\xff]*"$/;

/**
 * The ETag an action set, made honest for the coding sent: a strong tag
 * names exact bytes (RFC 9110 8.8.3), so a compressed representation gets
 * the coding inside the quotes, as generated tags do; a weak tag, or one
 * that is not well-formed, stays as it is.
 *
 * @param tag - the ETag header the action set
 * @param coding - the content coding sent, `identity` for none
 * @returns the tag to send (`tag` itself when nothing changes)
 * @example codedTag('"v1"', 'br') // '"v1-br"'
 */
export function codedTag(tag: string, coding: string): string {
  if (coding === 'identity' || !strongTag.test(tag)) return tag;
  return `${tag.slice(0, -1)}-${coding}"`;
}
