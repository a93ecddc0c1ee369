/**
 * The options of `buffer()`, one row each: default, check, scope, how a
 * given value resolves and how a per-response value converts, and a
 * one-line doc. The TSDoc on each row is the option's published
 * documentation: `BufferOptions` maps over this object, so an editor shows
 * it on `buffer({ cacheDuration`, and `npm run generate:options` copies it
 * into docs/options.md.
 *
 * Adding an option is one row here and its message in base/messages.ts,
 * then `npm run generate:options`.
 */
import type { Context } from 'koa';
import { exactDuration, parseDuration, readsAsMilliseconds, roughDuration, roundedDuration } from '../base/duration.ts';
import { parseSize } from '../base/size.ts';
import { appIdentity } from '../base/app-identity.ts';
import type { CacheStore } from '../base/store.ts';
import { defaultLogger, isLogger, type Logger } from '../base/logger.ts';
import {
  builtinMessages,
  isMessageOverrides,
  type MessageKey,
  type MessageOverrides,
  type Messages,
} from '../base/messages.ts';
import type { CacheLock } from '../locks/protocol.ts';
import { metricsProblem, resolveMetrics, type MetricsOption, type ResolvedMetrics } from '../observe/metrics-option.ts';
import { defaultEncodings, defaultLevels } from '../http/codings.ts';
import { isLastModifiedOption, type LastModifiedOption, type MtimeCache } from '../http/last-modified.ts';
import {
  defaultCompressibleTypes,
  defaultExcludedTypes,
  defaultLastModifiedTypes,
  isMediaTypeList,
  isMediaTypeOption,
  TypeMatcher,
  type MediaTypeList,
  type MediaTypeOption,
} from '../http/media-types.ts';
import type { Coding } from '../http/negotiate.ts';
import { isTagList } from '../http/tags.ts';
import {
  dictionariesProblem,
  resolveDictionaries,
  type DictionaryRule,
  type DictionaryRuleOption,
} from './dictionaries.ts';
import {
  cookieEntry,
  hasMethods,
  headerName,
  hostName,
  ignoredCookieName,
  isCacheUrl,
  isFlag,
  isLevels,
  isNil,
  isNonNegativeInteger,
  isPositiveDuration,
  isTimerSeconds,
  type EncodingName,
  type Flag,
} from './checks.ts';
import {
  canonicalLevels,
  hostSet,
  ignoredCookies,
  perResponseDuration,
  perResponseEncodings,
  resolveDuration,
  resolveEncodings,
  resolveFlag,
  varyEntry,
} from './conversions.ts';
import { registrationRow, responseRow, sectionRow, type Check, type Row, type Scope } from './row.ts';

/** The memo's default budget, 64 MiB: room for a few hundred typical pages in every coding. */
export const defaultMemoMaxSize = 64 * 1024 * 1024;

/** Default cacheLockTimeout, seconds; also what a per-response `undefined` means. */
export const defaultCacheLockTimeout = 10;

const flag: Check = { key: 'option_flag', ok: isFlag };

/**
 * The check of a duration option: undefined, or a duration `accepts` takes
 * that does not read like milliseconds. One that does (`60000`, a koa-cash
 * habit, is 16.7 hours) is refused with option_duration_unit, whose
 * message says what the number means as seconds and how to write either.
 */
const durationCheck = (key: MessageKey, accepts: (v: unknown) => boolean): Check => ({
  key,
  ok: (v) => isNil(v) || (accepts(v) && readsAsMilliseconds(v) === undefined),
  reason: {
    key: 'option_duration_unit',
    args: (v) => {
      const seconds = readsAsMilliseconds(v);
      if (seconds === undefined) return undefined;
      return {
        number: String(seconds),
        meaning: roughDuration(seconds),
        ifMilliseconds: exactDuration(seconds / 1000),
        ifSeconds: roundedDuration(seconds),
      };
    },
  },
});

const anyDuration = (v: unknown): boolean => parseDuration(v) !== undefined;

/** The options of `buffer()`, in the order the reference pages list them; validation sorts the names. */
export const schema = {
  /** Compress eligible responses. @defaultValue true */
  compressContent: sectionRow<Flag, boolean>({
    doc: 'compress eligible responses',
    default: true,
    check: flag,
    resolve: resolveFlag,
    perResponse: Boolean,
  }),
  /**
   * 0 off, 1 squash HTML, 2 also minify inline CSS (lightningcss) and JS
   * (esbuild) when those optional packages are installed. @defaultValue 0
   */
  optimiseContent: sectionRow<0 | 1 | 2, 0 | 1 | 2>({
    doc: '`0` off, `1` squash HTML, `2` also minify inline CSS and JS',
    default: 0,
    check: { key: 'option_optimise_content', ok: (v) => isNil(v) || v === 0 || v === 1 || v === 2 },
    perResponse: (v) => (v === 2 || v === '2' ? 2 : v === 1 || v === '1' || v === true ? 1 : 0),
  }),
  /**
   * With optimisation, shorten links to this site: absolute links to this host
   * become root-relative, and links to this page with a query just `?query`.
   * @defaultValue true
   */
  rewriteLinks: sectionRow<Flag, boolean>({
    doc: 'with optimisation, make links to this site root-relative',
    default: true,
    check: flag,
    resolve: resolveFlag,
    perResponse: Boolean,
  }),
  /**
   * ETag on 200 GET/HEAD: the MD5 of the uncompressed body with a coding suffix
   * (`"<md5>"`, `"<md5>-br"`, `"<md5>-zstd"`, `"<md5>-gzip"`, `"<md5>-deflate"`),
   * and for hot bytes the level too (`"<md5>-br11"`). An ETag the action set is
   * kept, a strong one suffixed by the coding when compressed (`"v1"` → `"v1-br"`).
   * @defaultValue true
   */
  generateEtag: responseRow<Flag, boolean>({
    doc: 'ETag on 200 GET/HEAD: the MD5 of the body, suffixed by the coding',
    default: true,
    check: flag,
    resolve: resolveFlag,
    perResponse: Boolean,
  }),
  /** Answer 304 Not Modified. @defaultValue true */
  generate304: responseRow<Flag, boolean>({
    doc: 'answer 304 Not Modified',
    default: true,
    check: flag,
    resolve: resolveFlag,
    perResponse: Boolean,
  }),
  /**
   * false/0 none; true/1 newest mtime of the app script and templatePaths; epoch
   * seconds; a date string; or a function of ctx returning one of these (or a
   * promise of one). @defaultValue true
   */
  lastModified: responseRow<LastModifiedOption, LastModifiedOption>({
    doc: 'Last-Modified: the newest mtime of the app script and `templatePaths`, a date, or `(ctx) => date`',
    default: true,
    check: { key: 'option_last_modified', ok: isLastModifiedOption },
    // The option as given, undefined and null included (none); a function is called per response.
    resolve: (v, { given, default: fallback }) => (given ? v : fallback),
    perResponse: (v) => v as LastModifiedOption,
  }),
  /**
   * Media types that get the `lastModified` date (and with it the
   * `defaultCacheControl` guard), in the forms of compressibleTypes. The
   * newest mtime of the app script and templates says when pages rendered
   * from them changed, not when an API's data did, so a JSON API keeps its
   * own headers and its ETag. A `lastModified` function, and a
   * `lastModified` set in `ctx.state.buffer`, apply to every type: the
   * application answers for that response itself.
   * @defaultValue ['text/html', 'application/xhtml+xml']
   */
  lastModifiedTypes: responseRow<MediaTypeOption, TypeMatcher>({
    doc: 'media types that get the `lastModified` date and its Cache-Control guard',
    default: new TypeMatcher(defaultLastModifiedTypes),
    check: { key: 'option_last_modified_types', ok: (v) => isNil(v) || isMediaTypeOption(v) },
    resolve: (v, { default: fallback }) => (isNil(v) ? fallback : new TypeMatcher(v)),
    // Per response, anything but a list or a predicate (undefined included) is none: no Last-Modified.
    perResponse: (v) => new TypeMatcher(Array.isArray(v) || typeof v === 'function' ? (v as MediaTypeOption) : []),
  }),
  /** Also honour If-Modified-Since when the page has an ETag. @defaultValue false */
  trustLastModified: sectionRow<Flag, boolean>({
    doc: 'also honour If-Modified-Since when the page has an ETag',
    default: false,
    check: flag,
    resolve: resolveFlag,
    perResponse: Boolean,
  }),
  /**
   * Files and directories (scanned recursively: symlinks followed, no directory
   * twice; at most 32 levels deep and 10,000 entries) whose mtimes count beside
   * the app script. @defaultValue []
   */
  templatePaths: responseRow<string[], readonly string[]>({
    doc: 'files and directories whose mtimes count beside the app script',
    default: [],
    check: {
      key: 'option_template_paths',
      ok: (v) => isNil(v) || (Array.isArray(v) && v.every((p) => typeof p === 'string' && p !== '')),
    },
    perResponse: (v) => (Array.isArray(v) ? v.filter((p) => typeof p === 'string') : []),
  }),
  /** Remembers the template mtime scan: an object with get/set (a Keyv works). */
  templateMtimeCache: registrationRow<MtimeCache, MtimeCache | undefined>({
    doc: 'an object with `get`/`set` (a Keyv works) remembering the template scan',
    default: undefined,
    check: { key: 'option_template_mtime_cache', ok: (v) => isNil(v) || hasMethods(v, 'get', 'set') },
  }),
  /** Seconds or a duration string (a bare number that reads like milliseconds is refused). @defaultValue 10 */
  templateMtimeCacheDuration: registrationRow<number | string, number>({
    doc: 'how long `templateMtimeCache` keeps a scan: seconds or a duration string',
    default: 10,
    check: durationCheck('option_template_mtime_cache_duration', isPositiveDuration),
    resolve: resolveDuration,
  }),
  /** Bytes, or a size string such as '1kb'; smaller bodies are not compressed. @defaultValue 32 */
  minCompressSize: responseRow<number | string, number>({
    doc: "bytes or a size string (`'1kb'`); smaller bodies are not compressed",
    default: 32,
    // undefined is refused: a size that silently fell back would compress what was meant to be left alone.
    check: { key: 'option_min_compress_size', ok: (v) => parseSize(v) !== undefined },
    resolve: (v, { default: fallback }) => (isNil(v) ? fallback : parseSize(v)!),
    perResponse: (v, fallback) => (isNil(v) ? 0 : (parseSize(v) ?? fallback)),
  }),
  /** Codings offered, in server preference order; `x-gzip` is gzip. @defaultValue ['br', 'zstd', 'gzip', 'deflate'] */
  encodings: responseRow<EncodingName[], readonly Coding[]>({
    doc: 'codings offered, in server preference order; `x-gzip` is gzip',
    default: defaultEncodings,
    check: { key: 'option_encodings', ok: (v) => Array.isArray(v) && v.every((e) => typeof e === 'string') },
    resolve: resolveEncodings,
    perResponse: perResponseEncodings,
  }),
  /** Fixed levels per coding; giving them pins them, as `adaptiveCompression: false` does. @defaultValue { br: 4, zstd: 3, gzip: 6, deflate: 6 } */
  compressionLevels: responseRow<Partial<Record<EncodingName, number>>, Readonly<Record<Coding, number>>>({
    doc: 'fixed level per coding; giving it pins them, as `adaptiveCompression: false` does',
    default: defaultLevels,
    check: { key: 'option_compression_levels', ok: isLevels },
    resolve: (v) => ({ ...defaultLevels, ...canonicalLevels(v) }),
    perResponse: (v) => ({ ...defaultLevels, ...canonicalLevels(v) }),
  }),
  /**
   * Cheap codings for bodies seen once, the smallest for bodies seen again
   * (recompressed off the request path); false pins the fixed
   * `compressionLevels` and the `encodings` order. @defaultValue `true`, unless `compressionLevels` is given
   */
  adaptiveCompression: responseRow<Flag, boolean>({
    doc: 'cheap codings for bodies seen once, the smallest for bodies seen again',
    default: true,
    check: flag,
    // Levels given pin them, so not giving this flag then means off.
    resolve: (v, { given, options }) => (given ? Boolean(v) : isNil(options.compressionLevels)),
    perResponse: Boolean,
  }),
  /**
   * Media types to compress: strings (case-insensitive, `*` a wildcard: `'text/*'`, `'*\/*+json'`),
   * RegExps and `(type) => boolean` predicates, or one predicate.
   * @defaultValue what mime-db marks compressible (through the `compressible` package, which also counts
   * the `text/*`, `+json`, `+text` and `+xml` types mime-db does not mark), with `text/event-stream`
   * (compressed and flushed after each event) and less `application/octet-stream` (bytes of unknown
   * kind, usually compressed already; `ctx.compress = true` still forces it)
   */
  compressibleTypes: responseRow<MediaTypeOption, TypeMatcher>({
    doc: 'media types to compress: strings (`*` a wildcard), RegExps, predicates',
    default: new TypeMatcher(defaultCompressibleTypes),
    // undefined is refused, as for the other type lists: it would silently mean "compress nothing".
    check: { key: 'option_compressible_types', ok: isMediaTypeOption },
    resolve: (v, { default: fallback }) => (isNil(v) ? fallback : new TypeMatcher(v)),
    perResponse: (v) => new TypeMatcher(Array.isArray(v) || typeof v === 'function' ? (v as MediaTypeOption) : []),
  }),
  /**
   * Cache-Control given to a 200 GET/HEAD response that got a generated
   * Last-Modified (an HTML page, by `lastModifiedTypes`) and carries
   * neither Cache-Control nor Expires, so browsers
   * do not hold a dynamic page fresh for a tenth of its Last-Modified age
   * (RFC 9111 4.2.2); false for none. @defaultValue 'no-cache'
   */
  defaultCacheControl: responseRow<string | false, string>({
    doc: 'Cache-Control for a page that got a generated Last-Modified and has none; `false` for none',
    default: 'no-cache',
    check: {
      key: 'option_default_cache_control',
      ok: (v) => isNil(v) || v === false || (typeof v === 'string' && v.trim() !== '' && !/[\r\n\0]/.test(v)),
    },
    // '' for none. Only false turns the guard off; undefined keeps the default, as the guard
    // protects visitors from a page their browser would never ask for again.
    resolve: (v, { default: fallback }) => (isNil(v) ? fallback : typeof v === 'string' ? v.trim() : ''),
    perResponse: (v) => (typeof v === 'string' && !/[\r\n\0]/.test(v) ? v.trim() : ''),
  }),
  /**
   * Compression dictionaries (RFC 9842): rules `{ match, types?, keep?, id?, matchDest?, ttl?, maxSize? }`
   * whose responses are offered to browsers as dictionaries, and whose later
   * requests are answered with `Content-Encoding: dcz`. A rule's `ttl` (seconds
   * or a duration string) is how long a browser may use the dictionary; without
   * it a browser uses one only while the response is fresh in its cache, so a
   * `no-cache` page is never one. @defaultValue off
   */
  dictionaries: registrationRow<DictionaryRuleOption[] | false, readonly DictionaryRule[]>({
    doc: 'compression dictionaries (RFC 9842): rules naming the pages offered as dictionaries',
    default: [],
    check: {
      key: 'option_dictionaries',
      ok: (v) => dictionariesProblem(v) === undefined,
      problem: dictionariesProblem,
    },
    resolve: (value, { options }) =>
      resolveDictionaries(value, typeof options.cacheNamespace === 'string' ? options.cacheNamespace : appIdentity),
  }),
  /**
   * Media types koa-buffer leaves alone (never buffered, squashed or
   * compressed), in the same forms as compressibleTypes. Server-sent events
   * are compressed by default, flushed after each event; list
   * `'text/event-stream'` here (or set `ctx.compress = false`) to send them as
   * they are. @defaultValue []
   */
  excludedTypes: responseRow<MediaTypeList, TypeMatcher>({
    doc: 'media types never buffered, in the forms of `compressibleTypes`',
    default: new TypeMatcher(defaultExcludedTypes),
    check: { key: 'option_excluded_types', ok: isMediaTypeList },
    resolve: (v, { default: fallback }) => (isNil(v) ? fallback : new TypeMatcher(v)),
    perResponse: (v) => new TypeMatcher(Array.isArray(v) ? v : []),
  }),
  /**
   * The server-side cache: true (in-memory, bounded by `cacheMemoryBytes`), a
   * Keyv-compatible store, a Keyv, an lru-cache LRUCache, an ioredis Redis or
   * Cluster, 'sqlite:PATH' (shared by the workers of a host) or 'redis://…'
   * (shared by hosts). Another object is probed once at start-up. A URL
   * whose package (better-sqlite3, ioredis) is not installed, or does not
   * load, is refused when `buffer()` runs (`option_cache_driver`).
   */
  cache: responseRow<true | CacheStore | object | string, true | CacheStore | object | string | undefined>({
    doc: "the server-side cache: `true` (in memory), a store, `'sqlite:PATH'` or `'redis://…'`",
    default: undefined,
    check: {
      key: 'option_cache',
      ok: (v) =>
        isNil(v) ||
        v === false ||
        v === true ||
        hasMethods(v, 'get', 'set', 'delete') ||
        // An ioredis Redis or Cluster: its get returns text and it has no delete, so it gets an adapter.
        hasMethods(v, 'getBuffer', 'set', 'del', 'defineCommand') ||
        (typeof v === 'string' && isCacheUrl(v)),
    },
    resolve: (v) => (isNil(v) || (v as unknown) === false ? undefined : v),
    perResponse: (v) =>
      v === false || v === null ? undefined : (v as true | CacheStore | object | string | undefined),
  }),
  /**
   * Host names (no port, case-insensitive) whose pages may be cached; a
   * request for any other Host bypasses the cache (`detail=HOST`), so forged
   * Host headers cannot fill the store. With `app.proxy`, the Host is
   * X-Forwarded-Host's, as Koa reads it. @defaultValue any host
   */
  cacheHosts: responseRow<string[], ReadonlySet<string> | undefined>({
    doc: 'host names whose pages may be cached; other hosts bypass the cache',
    default: undefined,
    check: {
      key: 'option_cache_hosts',
      ok: (v) => isNil(v) || (Array.isArray(v) && v.every((h) => typeof h === 'string' && hostName.test(h))),
    },
    resolve: (v) => (isNil(v) ? undefined : hostSet(v)),
    perResponse: (v) => (Array.isArray(v) ? hostSet(v) : undefined),
  }),
  /** Bytes the in-memory store (`cache: true`) holds at most, keys and entries. @defaultValue 64 MiB */
  cacheMemoryBytes: registrationRow<number, number>({
    doc: 'bytes of keys and entries the in-memory store (`cache: true`) holds',
    default: 64 * 1024 * 1024,
    check: { key: 'option_cache_memory_bytes', ok: (v) => isNil(v) || (isNonNegativeInteger(v) && v > 0) },
  }),
  /**
   * Seconds or a duration string; a bare number that reads like
   * milliseconds (over a week, or a whole thousand from 10000 on: koa-cash's
   * `maxAge: 60000`) is refused. @defaultValue '10 minutes'
   */
  cacheDuration: responseRow<number | string, number>({
    doc: 'how long a cached page stays fresh: seconds or a duration string',
    default: 600,
    check: durationCheck('option_cache_duration', isPositiveDuration),
    resolve: resolveDuration,
    perResponse: perResponseDuration,
  }),
  /**
   * Seconds (or a duration string) an entry past its TTL is still answered at
   * once, as `X-Cache: STALE`, while one background refresh per key rebuilds it
   * (RFC 5861). @defaultValue 0
   */
  cacheStaleWhileRevalidate: responseRow<number | string, number>({
    doc: 'how long an expired entry is answered at once while one refresh rebuilds it',
    default: 0,
    check: durationCheck('option_cache_stale_while_revalidate', anyDuration),
    resolve: resolveDuration,
    perResponse: perResponseDuration,
  }),
  /**
   * Seconds (or a duration string) an entry past its TTL is answered instead
   * of an error when its rebuild throws, times out or answers 5xx (RFC 5861). @defaultValue 0
   */
  cacheStaleIfError: responseRow<number | string, number>({
    doc: 'how long an expired entry is answered instead of a failed rebuild',
    default: 0,
    check: durationCheck('option_cache_stale_if_error', anyDuration),
    resolve: resolveDuration,
    perResponse: perResponseDuration,
  }),
  /**
   * Seconds (or a duration string) an entry with the application's own
   * ETag or Last-Modified is kept past its TTL and stale windows, answered
   * to nobody: the request that rebuilds it runs the action with that
   * validator in If-None-Match / If-Modified-Since, and an action that
   * answers 304 (`ctx.fresh`) renews the entry instead of rendering it
   * again. 0 turns revalidation off. @defaultValue three times the longer of the entry's TTL and `cacheDuration`
   */
  cacheRevalidationWindow: responseRow<number | string | undefined, number | undefined>({
    doc: 'how long an expired entry with an ETag or Last-Modified is kept for its rebuild to revalidate',
    default: undefined,
    check: durationCheck('option_cache_revalidation_window', anyDuration),
    resolve: (v) => (isNil(v) ? undefined : parseDuration(v)),
    perResponse: (v, fallback) => parseDuration(v) ?? fallback,
  }),
  /**
   * Seconds (or a duration string) a key whose build could not be stored
   * (it set a cookie, said private or no-store, said `Vary: *`, or
   * answered a status other than 200) is remembered as such: its requests
   * go to the action at once, none waits for another's build (Varnish's
   * hit-for-miss). A storable response ends it early. 0 turns it off; the
   * waiters of such a build still run the action. @defaultValue '2 minutes'
   */
  cacheHitForMiss: registrationRow<number | string, number>({
    doc: 'how long a key whose build could not be stored skips the wait for another build',
    default: 120,
    check: durationCheck('option_cache_hit_for_miss', anyDuration),
    resolve: resolveDuration,
  }),
  /**
   * What a request's `Cache-Control: no-cache` (or no-store, private,
   * max-age=0, or `Pragma: no-cache` without Cache-Control) does: 'ignore'
   * (answered as any request, so no client can switch the stampede
   * protection off), 'refresh' (rebuilds the entry through the flight: one
   * build per key at a time, the result stored), 'bypass' (runs uncached,
   * stores nothing). @defaultValue 'ignore'
   */
  cacheRequestNoCache: responseRow<'ignore' | 'refresh' | 'bypass', 'ignore' | 'refresh' | 'bypass'>({
    doc: "a request's own `no-cache`: `'ignore'` it, `'refresh'` the entry, or `'bypass'` the cache",
    default: 'ignore',
    check: {
      key: 'option_cache_request_no_cache',
      ok: (v) => isNil(v) || v === 'ignore' || v === 'refresh' || v === 'bypass',
    },
    perResponse: (v) => (v === 'refresh' || v === 'bypass' ? v : 'ignore'),
  }),
  /**
   * The application's name in every key it writes to a cache store, so two
   * applications sharing one Redis never read each other's entries, and the
   * same application deployed at two paths (hosts, releases side by side)
   * shares one. @defaultValue the `name` of the nearest package.json above
   * the app script, and the script's path relative to it (the script's
   * absolute path when no package.json names it)
   */
  cacheNamespace: registrationRow<string, string>({
    doc: 'the application name in every cache key, shared by its hosts and releases',
    default: appIdentity,
    check: {
      key: 'option_cache_namespace',
      ok: (v) => isNil(v) || (typeof v === 'string' && v !== '' && v.length <= 1024),
    },
  }),
  /**
   * A string, or `(ctx) => string`, replacing the generated cache key; '' (or
   * a function answering anything but a non-empty string) falls back to it.
   * @defaultValue the generated key
   */
  cacheKey: responseRow<
    string | ((ctx: Context) => string | undefined | null),
    string | ((ctx: Context) => string | undefined | null) | undefined
  >({
    doc: "replaces the generated cache key: a string or `(ctx) => string`; `''` falls back to it",
    default: undefined,
    check: { key: 'option_cache_key', ok: (v) => isNil(v) || typeof v === 'string' || typeof v === 'function' },
    perResponse: (v) => (v === null ? undefined : (v as string | ((ctx: Context) => string | undefined | null))),
  }),
  /** Coalesce concurrent misses of one key. @defaultValue true */
  cacheSingleFlight: responseRow<Flag, boolean>({
    doc: 'concurrent misses of one key build it once',
    default: true,
    check: flag,
    resolve: resolveFlag,
    perResponse: Boolean,
  }),
  /** Seconds (> 0) a waiter may wait; also bounds a flight. @defaultValue 10 */
  cacheLockTimeout: responseRow<number, number>({
    doc: 'seconds a waiter may wait; also bounds a build',
    default: defaultCacheLockTimeout,
    check: { key: 'option_cache_lock_timeout', ok: (v) => isNil(v) || isTimerSeconds(v) },
    perResponse: (v, fallback) => (typeof v === 'number' && Number.isFinite(v) && v > 0 ? v : fallback),
  }),
  /** Elects one builder across processes: a `FileLock`, a `RedisLock`, or any object with acquire() and release(). */
  cacheLock: registrationRow<CacheLock, CacheLock | undefined>({
    doc: 'a lock backend electing one builder across processes (`FileLock`, `RedisLock`, or yours)',
    default: undefined,
    check: { key: 'option_cache_lock', ok: (v) => isNil(v) || hasMethods(v, 'acquire', 'release') },
  }),
  /** Shorthand for `cacheLock: new FileLock({dir})`. */
  cacheLockDir: registrationRow<string, string | undefined>({
    doc: 'shorthand for `cacheLock: new FileLock({dir})`',
    default: undefined,
    check: { key: 'option_cache_lock_dir', ok: (v) => isNil(v) || (typeof v === 'string' && v !== '') },
  }),
  /**
   * Request headers joining the generated key; `cookie:NAME` joins only
   * that cookie's value (`['cookie:session']`), so analytics cookies do not
   * give every visitor a cache of their own. The value is read as Koa's
   * `ctx.cookies.get` reads it; a Cookie header that names the cookie twice,
   * in any spelling, bypasses the cache (`detail=COOKIE`). Set per response,
   * anything but a list of header names bypasses the cache
   * (`detail=VARYBY`). `[]` keys on the URL only. @defaultValue ['cookie']
   */
  varyBy: responseRow<string[], readonly string[]>({
    doc: 'request headers joining the generated key; `cookie:NAME` joins one cookie',
    default: ['cookie'],
    // undefined is refused: no varyBy would silently drop the Cookie header from the key.
    check: {
      key: 'option_vary_by',
      ok: (v) =>
        Array.isArray(v) && v.every((h) => typeof h === 'string' && (headerName.test(h) || cookieEntry.test(h))),
    },
    resolve: (v, { default: fallback }) => (isNil(v) ? fallback : v.map(varyEntry)),
    // Only a list of header names gets here: anything else makes the request bypass the cache.
    perResponse: (v) => (v as readonly string[]).map(varyEntry),
  }),
  /**
   * Cookies the key leaves out when `varyBy` holds the whole `cookie`:
   * `'analytics'` (Google Analytics, Google Ads, Meta, Hotjar, Clarity,
   * Mixpanel, Segment, Matomo, HubSpot: docs/cache.md lists them) or a list
   * of names, a trailing `*` matching a prefix (`['_ga', '_ga_*']`). They are
   * also removed from the Cookie header of GET and HEAD requests before the
   * application sees it, so a page cannot differ by them: safe only when no
   * page reads them on the server. @defaultValue none
   */
  cacheIgnoreCookies: registrationRow<string[] | 'analytics', RegExp | undefined>({
    doc: "cookies left out of the key and out of the request: `'analytics'` or a list of names",
    default: undefined,
    check: {
      key: 'option_cache_ignore_cookies',
      ok: (v) =>
        isNil(v) ||
        v === 'analytics' ||
        (Array.isArray(v) && v.every((name) => typeof name === 'string' && ignoredCookieName.test(name))),
    },
    resolve: ignoredCookies,
  }),
  /** Bytes; larger bodies are served but not stored. @defaultValue 8 MiB */
  cacheMaxSize: responseRow<number, number>({
    doc: 'bytes; larger bodies are served but not stored',
    default: 8 * 1024 * 1024,
    check: { key: 'option_cache_max_size', ok: (v) => isNil(v) || (isNonNegativeInteger(v) && v > 0) },
    perResponse: (v, fallback) => (typeof v === 'number' && v > 0 ? v : fallback),
  }),
  /**
   * What a waiter does when the build it waited for fails: 'retry-later'
   * answers 503 with `Retry-After: 1`, 'run' runs the action itself.
   * @defaultValue 'retry-later'
   */
  cacheWaitFailure: responseRow<'retry-later' | 'run', 'retry-later' | 'run'>({
    doc: "a waiter whose build failed gets 503 and `Retry-After` (`'retry-later'`) or runs the action (`'run'`)",
    default: 'retry-later',
    check: { key: 'option_cache_wait_failure', ok: (v) => isNil(v) || v === 'retry-later' || v === 'run' },
    perResponse: (v) => (v === 'run' ? 'run' : 'retry-later'),
  }),
  /**
   * Seconds (> 0) any one call to the cache store may take; a store that
   * takes longer counts as failed (a miss and a log line), so a hanging
   * store never hangs a request. @defaultValue 1
   */
  cacheStoreTimeout: responseRow<number, number>({
    doc: 'seconds one store call may take before it counts as failed',
    default: 1,
    check: { key: 'option_cache_store_timeout', ok: (v) => isNil(v) || isTimerSeconds(v) },
    perResponse: (v, fallback) => (typeof v === 'number' && Number.isFinite(v) && v > 0 ? v : fallback),
  }),
  /**
   * Purge tags of the response (`mw.purgeTag(tag)` removes every entry
   * carrying one); usually set per response through `ctx.state.buffer`
   * (`` ctx.state.buffer = { cacheTags: [`article:${id}`] } ``).
   * A tag is 1-256 visible ASCII characters, no comma. @defaultValue []
   */
  cacheTags: responseRow<string[], readonly string[]>({
    doc: 'purge tags of the response, usually set per response',
    default: [],
    check: { key: 'option_cache_tags', ok: (v) => isNil(v) || isTagList(v) },
    perResponse: (v) => (Array.isArray(v) ? (v as string[]) : []),
  }),
  /**
   * Response header whose comma-separated tags join `cacheTags`; removed
   * before the response is sent. false reads none. @defaultValue 'Cache-Tag'
   */
  cacheTagHeader: responseRow<string | false, string>({
    doc: 'response header whose comma-separated tags join `cacheTags`; removed before sending',
    // Lowercased; '' for none.
    default: 'cache-tag',
    check: {
      key: 'option_cache_tag_header',
      ok: (v) => isNil(v) || v === false || (typeof v === 'string' && /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/.test(v)),
    },
    resolve: (v, { default: fallback }) => (v === false ? '' : (v ?? fallback).toLowerCase()),
    perResponse: (v) => (typeof v === 'string' ? v.toLowerCase() : ''),
  }),
  /**
   * Bytes of the in-process copy of the entries a SQLite or Redis store
   * answered (kept coherent with purges and expiry); 0 turns it off.
   * @defaultValue 32 MiB
   */
  cacheNearBytes: registrationRow<number, number>({
    doc: 'bytes of the in-process copy of SQLite and Redis entries; `0` off',
    default: 32 * 1024 * 1024,
    check: { key: 'option_cache_near_bytes', ok: (v) => isNil(v) || isNonNegativeInteger(v) },
  }),
  /**
   * Milliseconds between two looks at a shared store's purge generation:
   * a purge in another process is seen within about this. @defaultValue 50
   */
  cacheSyncMs: registrationRow<number, number>({
    doc: "milliseconds between two looks at a shared store for other processes' purges",
    default: 50,
    check: {
      key: 'option_cache_sync_ms',
      ok: (v) => isNil(v) || (typeof v === 'number' && Number.isFinite(v) && v >= 1),
    },
  }),
  /** Bytes of the representation memo; 0 turns it off. @defaultValue 64 MiB */
  memoMaxSize: registrationRow<number, number>({
    doc: 'bytes of the representation memo; `0` off',
    default: defaultMemoMaxSize,
    check: { key: 'option_memo_max_size', ok: (v) => isNil(v) || isNonNegativeInteger(v) },
  }),
  /**
   * Metrics beyond `mw.stats()` and `mw.metrics()`: `registry`, a prom-client
   * `Registry` to register koa-buffer's metrics on; `routes`, at most 100 route
   * names (as @koa/router matched them) to count requests by, every other
   * route counting as `other` (no label takes its values from requests).
   */
  metrics: registrationRow<MetricsOption, ResolvedMetrics>({
    doc: 'a prom-client `Registry` to register on, and route names to count requests by',
    default: resolveMetrics(undefined),
    check: { key: 'option_metrics', ok: (v) => metricsProblem(v) === undefined, problem: metricsProblem },
    resolve: (value) => resolveMetrics(value),
  }),
  /** Message overrides by catalog key: a text, or variants by count or gender. */
  messages: registrationRow<MessageOverrides, Messages>({
    doc: 'message overrides by key',
    default: builtinMessages,
    check: { key: 'option_messages', ok: (v) => isNil(v) || isMessageOverrides(v) },
    // Adopted before the checks (see resolveOptions), so that their errors are worded with it.
    resolve: (_, { messages }) => messages,
  }),
  /**
   * pino-compatible logger: `{ debug, info, warn, error }`, each taking a message string.
   * @defaultValue writes warnings and errors to stderr (`KOA_BUFFER_DEBUG=1` lets debug and info through too)
   */
  logger: registrationRow<Logger, Logger>({
    doc: 'a pino-compatible logger',
    default: defaultLogger,
    check: { key: 'option_logger', ok: (v) => isNil(v) || isLogger(v) },
    // Resolved before the others, which may log.
    resolve: (_, { logger }) => logger,
  }),
} satisfies Record<string, Row>;

/** The schema's type, for the types derived from it. */
export type Schema = typeof schema;

const rows: Readonly<Record<string, Row>> = schema;

/** The row of option `name`; undefined for a name that is no option (`toString` included). */
export const rowOf = (name: string): Row | undefined => (Object.hasOwn(rows, name) ? rows[name] : undefined);

/** The names of the options of one scope. */
export const namesIn = (scope: Scope): ReadonlySet<string> =>
  new Set(Object.keys(rows).filter((name) => rows[name]!.scope === scope));
