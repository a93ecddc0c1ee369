/**
 * Media types: which responses koa-buffer may compress, which it must never
 * buffer, and which are HTML it may optimise. Matching is on the bare type
 * (`text/html` of `text/html; charset=utf-8`), case-insensitive.
 */

/** A list of media types as the options take it: exact strings (case-insensitive) or RegExps. */
export type MediaTypeList = ReadonlyArray<string | RegExp>;

/**
 * The compressible types by default: text/*, JSON, JavaScript, XML,
 * XHTML, SVG and their close relatives, including every `+json` and `+xml`
 * structured-syntax suffix (RFC 6839), which covers ld+json, manifest+json,
 * problem+json, rss+xml, atom+xml and the like.
 */
export const defaultCompressibleTypes: readonly (string | RegExp)[] = [
  /^text\//,
  'application/json',
  'application/javascript',
  'application/x-javascript',
  'application/ecmascript',
  'application/xml',
  'application/xhtml+xml',
  'image/svg+xml',
  /^application\/[a-z0-9!#$&^_.-]+\+(?:json|xml)$/,
];

/** The excluded types by default: server-sent events are a stream by nature. */
export const defaultExcludedTypes: readonly (string | RegExp)[] = ['text/event-stream'];

/** Types the HTML optimiser may rework (the OPTIMISE step). */
const htmlTypes = new Set(['text/html', 'application/xhtml+xml']);

/**
 * The bare media type of a Content-Type value, lowercased, or `undefined`
 * when there is none.
 *
 * @example mediaType('Text/HTML; charset=utf-8') // 'text/html'
 */
export function mediaType(contentType: unknown): string | undefined {
  if (typeof contentType !== 'string') return undefined;
  const semicolon = contentType.indexOf(';');
  const type = (semicolon === -1 ? contentType : contentType.slice(0, semicolon)).trim().toLowerCase();
  return type === '' ? undefined : type;
}

/** True for the types the HTML optimiser handles. */
export function isHtml(type: string): boolean {
  return htmlTypes.has(type);
}

/** A compiled {@link MediaTypeList}: exact names in a Set, patterns tried in order. */
export class TypeMatcher {
  readonly #exact = new Set<string>();
  readonly #patterns: RegExp[] = [];

  /** @param list - strings (exact, case-insensitive) and RegExps; anything else in it is ignored */
  constructor(list: Iterable<unknown>) {
    for (const entry of list) {
      if (typeof entry === 'string') this.#exact.add(entry.trim().toLowerCase());
      else if (entry instanceof RegExp) this.#patterns.push(entry);
    }
  }

  /** True when `type` (a bare, lowercased media type) is in the list. */
  matches(type: string): boolean {
    if (this.#exact.has(type)) return true;
    for (const pattern of this.#patterns) {
      // A /g or /y pattern keeps state between test() calls; start each match afresh.
      pattern.lastIndex = 0;
      if (pattern.test(type)) return true;
    }
    return false;
  }
}

/** True when `value` is an array of strings and RegExps, the shape compressibleTypes and excludedTypes take. */
export function isMediaTypeList(value: unknown): value is MediaTypeList {
  return Array.isArray(value) && value.every((entry) => typeof entry === 'string' || entry instanceof RegExp);
}
