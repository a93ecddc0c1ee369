/**
 * What a request says about dictionaries (RFC 9842 2.2): `Available-Dictionary`
 * is an RFC 8941 Item, a Byte Sequence holding the SHA-256 of the dictionary
 * the browser has for this URL (`:<base64>:`), optionally with parameters;
 * `dcz` in Accept-Encoding says it can decode dictionary-compressed zstd.
 * Anything that does not parse is no dictionary: the response gets the
 * normal coding.
 */

/** One RFC 8941 parameter: `;key` or `;key=bare-item` (integer, decimal, string, token, byte sequence or boolean). */
const parameter =
  /;[ ]*[a-z*][a-z0-9_.*-]*(?:=(?:\?[01]|-?\d{1,15}(?:\.\d{1,3})?|"(?:[\x20\x21\x23-\x5b\x5d-\x7e]|\\["\\])*"|[A-Za-z*][!#$%&'*+\-.^_`|~0-9A-Za-z:/]*|:[A-Za-z0-9+/]*={0,2}:))?/y;

/** 32 bytes in base64: 43 characters and one `=`. */
const sha256Base64 = /^:([A-Za-z0-9+/]{43}=):/;

/**
 * The SHA-256 an `Available-Dictionary` header names, as 64 lowercase hex
 * digits; undefined for an absent header, a header given twice, a byte
 * sequence that is not 32 bytes in canonical base64, or anything else that
 * is not an RFC 8941 Item of that shape.
 *
 * @example availableDictionary(':pZGm1Av0IEBKARczz7exkNYsZb8LzaMrV7J32a2fFG4=:') // 'a5919a…'
 */
export function availableDictionary(header: string | string[] | undefined): string | undefined {
  if (typeof header !== 'string') return undefined;
  // RFC 8941 4.2: leading and trailing spaces are discarded, nothing else.
  const value = header.replace(/^ +| +$/g, '');
  const found = sha256Base64.exec(value);
  if (found === null) return undefined;
  let at = found[0].length;
  while (at < value.length) {
    parameter.lastIndex = at;
    if (!parameter.test(value)) return undefined;
    at = parameter.lastIndex;
  }
  const bytes = Buffer.from(found[1]!, 'base64');
  // Canonical only: the two spare bits of the last character must be zero (RFC 8941 4.2.7 allows refusing others).
  if (bytes.length !== 32 || bytes.toString('base64') !== found[1]) return undefined;
  return bytes.toString('hex');
}

/**
 * True when Accept-Encoding lists `dcz` with a q-value above 0. Only an
 * explicit `dcz` counts: `*` does not promise support for a dictionary
 * coding.
 *
 * @param header - the request's Accept-Encoding
 */
export function acceptsDcz(header: string | undefined): boolean {
  if (header === undefined) return false;
  for (const element of header.split(',')) {
    const [name, ...params] = element.split(';');
    if (name!.trim().toLowerCase() !== 'dcz') continue;
    const q = params.map((p) => p.trim().toLowerCase()).find((p) => p.startsWith('q='));
    if (q === undefined) return true;
    const weight = Number(q.slice(2));
    return Number.isFinite(weight) && weight > 0 && weight <= 1;
  }
  return false;
}
