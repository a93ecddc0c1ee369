/**
 * The `dictionaries` option (compression dictionaries, RFC 9842): a list of
 * rules saying which responses are offered to browsers as dictionaries and
 * which requests may be answered with one (docs/architecture.md,
 * "Compression dictionaries").
 *
 *   dictionaries: [{ match: '/articles/*' }]
 *   dictionaries: [{ match: '/assets/app.*.js', types: ['text/javascript'], keep: 2, id: 'app' }]
 *
 * A rule's `match` is the URL pattern the browser is told (`Use-As-Dictionary:
 * match="…"`) and the one the server checks: a path starting with `/`, where
 * `*` stands for any characters (as in URLPattern's pathname, whose reading
 * of a repeated `*` is kept: ../http/wildcard.ts). URLPattern's other syntax
 * (named groups, regular expressions, `?`, `+`, braces) is refused, so what
 * the server matches is exactly what the browser matches.
 */
import { appIdentity } from '../base/app-identity.ts';
import { exactDuration, parseDuration, readsAsMilliseconds, roughDuration, roundedDuration } from '../base/duration.ts';
import { md5 } from '../native/exports.ts';
import { parseSize } from '../base/size.ts';
import { isMediaTypeOption, TypeMatcher, type MediaTypeOption } from '../http/media-types.ts';
import { wildcardPattern } from '../http/wildcard.ts';

/** One rule as the option takes it. */
export interface DictionaryRuleOption {
  /** Path pattern, `*` for any characters: `'/articles/*'`. */
  match: string;
  /** Media types offered and answered with a dictionary, in the compressibleTypes forms. @defaultValue ['text/html'] */
  types?: MediaTypeOption;
  /** How many versions (the newest) are kept for this rule. @defaultValue 4 */
  keep?: number;
  /** Sent as `Use-As-Dictionary: id="…"`; the browser echoes it in `Dictionary-ID`. */
  id?: string;
  /** `Sec-Fetch-Dest` values the browser may use the dictionary for (`match-dest`), e.g. `['document']`. */
  matchDest?: string[];
  /**
   * How long the browser may use the dictionary, in seconds or a duration
   * string (`ttl=` of `Use-As-Dictionary`, Chromium's extension to RFC 9842);
   * a bare number that reads like milliseconds is refused, as for every duration option.
   * Without it a browser uses a dictionary only while the response is fresh
   * in its HTTP cache, so a `no-cache` page is never one.
   */
  ttl?: number | string;
  /** Largest dictionary offered, and largest body encoded with one: bytes or a size string, at most 4 MiB. @defaultValue 1 MiB */
  maxSize?: number | string;
}

/** A rule as the pipeline uses it. */
export interface DictionaryRule {
  /** Its place in the list, for log lines. */
  readonly index: number;
  readonly match: string;
  readonly pattern: RegExp;
  readonly types: TypeMatcher;
  readonly keep: number;
  readonly maxSize: number;
  /** The `Use-As-Dictionary` value sent with an offered response. */
  readonly header: string;
  /** The `ttl` given, in seconds; undefined when none (a browser then uses the dictionary while the response is fresh). */
  readonly ttl: number | undefined;
  /**
   * What binds a kept dictionary to this rule: a hash of the application and
   * the pattern, the same in every process and host running the
   * application. A dictionary is used only for requests the rule that
   * offered it matches.
   */
  readonly tag: string;
}

/** The newest versions kept per rule, by default. */
export const defaultKeep = 4;
/** The most versions a rule may keep. */
export const maxKeep = 64;
/** Default byte limit of a dictionary and of a body encoded with one. */
export const defaultDictionaryMaxSize = 1024 * 1024;
/**
 * The largest `maxSize`: the window of a dcz frame spans dictionary and body,
 * and RFC 9842 bounds it (8 MiB, or 1.25 times the dictionary); 4 + 4 MiB fits.
 */
export const dictionaryMaxSizeLimit = 4 * 1024 * 1024;

const ruleKeys = new Set(['match', 'types', 'keep', 'id', 'matchDest', 'maxSize', 'ttl']);
/** Path characters a pattern may hold: RFC 3986 pchar and `/`, without URLPattern's special `:` `(` `)` `{` `}` `?` `+` `\`. */
const patternText = /^\/[A-Za-z0-9\-._~!$&'*,;=@%/]*$/;
/** An RFC 8941 sf-string's characters: printable ASCII (quotes and backslashes are escaped when sent). */
const printable = /^[\x20-\x7e]*$/;
/** A Sec-Fetch-Dest value (a token). */
const destination = /^[a-z][a-z0-9-]*$/;

const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  value !== null && typeof value === 'object' && !Array.isArray(value);

/** The problem with one rule, or undefined when it is fine. */
function ruleProblem(rule: unknown, at: string): string | undefined {
  if (!isPlainObject(rule)) return `${at} must be an object such as { match: '/articles/*' }`;
  for (const key of Object.keys(rule)) if (!ruleKeys.has(key)) return `${at} has an unknown key '${key}'`;
  const { match, types, keep, id, matchDest, maxSize, ttl } = rule;
  if (typeof match !== 'string' || !match.startsWith('/'))
    return `${at}.match must be a path pattern starting with '/', such as '/articles/*'`;
  if (!patternText.test(match))
    return `${at}.match '${match}' may hold path characters and '*' only (no URLPattern groups, '?', '+', ':' or braces)`;
  if (types !== undefined && !isMediaTypeOption(types))
    return `${at}.types must be an array of media types (strings, wildcards, RegExps or functions) or a function`;
  if (keep !== undefined && (typeof keep !== 'number' || !Number.isInteger(keep) || keep < 1 || keep > maxKeep))
    return `${at}.keep must be a whole number from 1 to ${maxKeep}`;
  if (id !== undefined && (typeof id !== 'string' || id.length > 1024 || !printable.test(id)))
    return `${at}.id must be a string of at most 1024 printable ASCII characters`;
  if (
    matchDest !== undefined &&
    (!Array.isArray(matchDest) || !matchDest.every((d) => typeof d === 'string' && destination.test(d)))
  )
    return `${at}.matchDest must be an array of Sec-Fetch-Dest values such as 'document' or 'script'`;
  if (maxSize !== undefined) {
    const bytes = parseSize(maxSize);
    if (bytes === undefined || bytes < 1 || bytes > dictionaryMaxSizeLimit)
      return `${at}.maxSize must be a size from 1 byte to 4mb`;
  }
  if (ttl !== undefined) {
    const seconds = parseDuration(ttl);
    if (seconds === undefined || seconds < 1) return `${at}.ttl must be a duration of at least 1 second`;
    // As for every duration option: a bare 2592000000 meant as 30 days in ms would be 82 years.
    const asNumber = readsAsMilliseconds(ttl);
    if (asNumber !== undefined) {
      const meaning = roughDuration(asNumber);
      return `${at}.ttl: ${JSON.stringify(ttl)} is seconds (${meaning}) and reads like milliseconds; durations are seconds: write '${exactDuration(asNumber / 1000)}' if you meant ${asNumber} ms, or a string such as '${roundedDuration(asNumber)}' if ${meaning} is what you meant`;
    }
  }
  return undefined;
}

/**
 * The problem with a `dictionaries` option value, or undefined when it is
 * fine. Off is `undefined`, `null`, `false` or an empty list.
 *
 * @example dictionariesProblem([{ match: 'articles' }]) // "dictionaries[0].match must be a path pattern …"
 */
export function dictionariesProblem(value: unknown): string | undefined {
  if (value === undefined || value === null || value === false) return undefined;
  if (!Array.isArray(value))
    return "dictionaries must be false or an array of rules such as [{ match: '/articles/*' }]";
  for (let i = 0; i < value.length; i++) {
    const problem = ruleProblem(value[i], `dictionaries[${i}]`);
    if (problem !== undefined) return problem;
  }
  return undefined;
}

/** An RFC 8941 sf-string. */
const sfString = (text: string): string => `"${text.replace(/[\\"]/g, (c) => `\\${c}`)}"`;

/**
 * The rules of a valid `dictionaries` value (see {@link dictionariesProblem}), compiled; [] for off.
 *
 * @param value - the option as given, already validated
 */
export function resolveDictionaries(value: unknown, namespace: string = appIdentity): readonly DictionaryRule[] {
  if (!Array.isArray(value)) return [];
  return (value as DictionaryRuleOption[]).map((rule, index) => {
    let header = `match=${sfString(rule.match)}`;
    if (rule.matchDest !== undefined) header += `, match-dest=(${rule.matchDest.map(sfString).join(' ')})`;
    if (rule.id !== undefined) header += `, id=${sfString(rule.id)}`;
    const ttl = rule.ttl === undefined ? undefined : Math.floor(parseDuration(rule.ttl)!);
    if (ttl !== undefined) header += `, ttl=${ttl}`;
    return {
      index,
      match: rule.match,
      pattern: wildcardPattern(rule.match, '/'),
      types: new TypeMatcher(rule.types ?? ['text/html']),
      keep: rule.keep ?? defaultKeep,
      maxSize: rule.maxSize === undefined ? defaultDictionaryMaxSize : parseSize(rule.maxSize)!,
      header,
      ttl,
      // The namespace keeps two applications' dictionaries apart in a shared store.
      tag: md5(`${namespace}\0${rule.match}`).slice(0, 16),
    };
  });
}

/**
 * The first rule whose pattern matches `path` and whose types hold `type`.
 *
 * @param rules - the resolved rules
 * @param path - the request path (no query)
 * @param type - the response's bare, lowercased media type
 */
export function ruleFor(rules: readonly DictionaryRule[], path: string, type: string): DictionaryRule | undefined {
  for (const rule of rules) if (rule.pattern.test(path) && rule.types.matches(type)) return rule;
  return undefined;
}
