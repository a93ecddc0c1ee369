/**
 * Media types: which responses koa-buffer may compress, which it must never
 * buffer, and which are HTML it may optimise. Matching is on the bare type
 * (`text/html` of `text/html; charset=utf-8`), case-insensitive.
 */
import { createRequire } from 'node:module';
import { wildcardPattern } from './wildcard.ts';

/** A media-type predicate: called with the bare, lowercased type. */
export type MediaTypePredicate = (type: string) => boolean;

/**
 * A list of media types as the options take it: strings (case-insensitive;
 * `*` in a string stands for any run of characters within the type, so
 * `text/*` and `*\/*+json` work), RegExps, and predicates.
 */
export type MediaTypeList = ReadonlyArray<string | RegExp | MediaTypePredicate>;

/** compressibleTypes as the option takes it: a list, or one predicate. */
export type MediaTypeOption = MediaTypeList | MediaTypePredicate;

const require = createRequire(import.meta.url);
/** The `compressible` package: mime-db's flag, else true for text/* and +json/+text/+xml, else undefined. */
const compressible = require('compressible') as (type: string) => boolean | undefined;

const notByDefault = new Set(['application/octet-stream']);
/** Server-sent events: not in mime-db's list, compressed all the same, flushed event by event (pipeline/live-flush.ts). */
const alsoByDefault = new Set(['text/event-stream']);

/** Answers of {@link isCompressibleByDefault}, by type; bounded, so odd Content-Types cannot grow it. */
const compressibleMemo = new Map<string, boolean>();

/**
 * The compressible types by default: what mime-db marks compressible (the
 * `compressible` package koa-compress uses, so wasm, fonts, icons, SVG, JSON,
 * JavaScript and every `+json`/`+xml` type are in), and server-sent events,
 * compressed with a flush after each (an event reaches the client at once,
 * smaller), less application/octet-stream,
 * which mime-db 1.54 marks compressible but which names bytes of unknown kind
 * (Koa's type for every Buffer body, and what a static server sends for .exe,
 * .iso, .dmg, .bin), usually compressed already: trying would cost CPU on
 * every such response for nothing. `ctx.compress = true` still forces it.
 */
export function isCompressibleByDefault(type: string): boolean {
  let answer = compressibleMemo.get(type);
  if (answer === undefined) {
    answer = alsoByDefault.has(type) || (!notByDefault.has(type) && compressible(type) === true);
    if (compressibleMemo.size >= 1024) compressibleMemo.clear();
    compressibleMemo.set(type, answer);
  }
  return answer;
}

export const defaultCompressibleTypes: MediaTypeOption = isCompressibleByDefault;

/**
 * The excluded types by default: none. Server-sent events used to be: a
 * compressor held them until its window filled; a live stream is now flushed
 * whenever its source has nothing more ready, so each event arrives at once.
 */
export const defaultExcludedTypes: readonly (string | RegExp)[] = [];

/** Types the HTML optimiser may rework (the OPTIMISE step). */
const htmlTypes = new Set(['text/html', 'application/xhtml+xml']);

/** The types that get a generated Last-Modified by default: HTML, the pages rendered from the app and its templates. */
export const defaultLastModifiedTypes: readonly string[] = [...htmlTypes];

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

/** A compiled {@link MediaTypeOption}: exact names in a Set, then wildcards, RegExps and predicates in order. */
export class TypeMatcher {
  readonly #exact = new Set<string>();
  readonly #patterns: RegExp[] = [];
  readonly #predicates: MediaTypePredicate[] = [];

  /** @param list - a list of strings, RegExps and predicates, or one predicate; anything else in it is ignored */
  constructor(list: Iterable<unknown> | MediaTypePredicate) {
    for (const entry of typeof list === 'function' ? [list] : list) {
      if (typeof entry === 'string') {
        const name = entry.trim().toLowerCase();
        if (name.includes('*')) this.#patterns.push(wildcardPattern(name));
        else this.#exact.add(name);
      } else if (entry instanceof RegExp) this.#patterns.push(entry);
      else if (typeof entry === 'function') this.#predicates.push(entry as MediaTypePredicate);
    }
  }

  /** True when `type` (a bare, lowercased media type) is in the list. A predicate that throws counts as no. */
  matches(type: string): boolean {
    if (this.#exact.has(type)) return true;
    for (const pattern of this.#patterns) {
      // A /g or /y pattern keeps state between test() calls; start each match afresh.
      pattern.lastIndex = 0;
      if (pattern.test(type)) return true;
    }
    for (const predicate of this.#predicates) {
      try {
        if (predicate(type) === true) return true;
      } catch {
        // an application's predicate must not break the response: it just does not match
      }
    }
    return false;
  }
}

const isListEntry = (entry: unknown): boolean =>
  typeof entry === 'string' || entry instanceof RegExp || typeof entry === 'function';

/** True when `value` is an array of strings, RegExps and predicates, the shape excludedTypes takes. */
export function isMediaTypeList(value: unknown): value is MediaTypeList {
  return Array.isArray(value) && value.every(isListEntry);
}

/** True when `value` is a list as {@link isMediaTypeList} says or one predicate: the shape compressibleTypes takes. */
export function isMediaTypeOption(value: unknown): value is MediaTypeOption {
  return typeof value === 'function' || isMediaTypeList(value);
}
