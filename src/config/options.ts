/**
 * The options of `buffer()`: their types, defaults and validation,
 * and the per-response view that lays `bufferSection` declarations and
 * `ctx.state.buffer` over them.
 *
 * Validation as the Perl original does it: option names are checked
 * in ASCII order, unknown ones at their place in it, only the first problem
 * is reported, and the checks that look at several options come last.
 */
import type { Context } from 'koa';
import type { CacheStore } from '../base/store.ts';
import { parseDuration } from '../base/duration.ts';
import { parseSize } from '../base/size.ts';
import { BufferOptionError } from '../base/errors.ts';
import type { CacheLock } from '../locks/protocol.ts';
import { defaultLogger, isLogger, type Logger } from '../base/logger.ts';
import { isMessageOverrides, Messages, type MessageOverrides } from '../base/messages.ts';
import {
  dictionariesProblem,
  resolveDictionaries,
  type DictionaryRule,
  type DictionaryRuleOption,
} from './dictionaries.ts';
import { codingAvailable, defaultEncodings, defaultLevels, levelRange } from '../http/codings.ts';
import { isLastModifiedOption, type LastModifiedOption, type MtimeCache } from '../http/last-modified.ts';
import {
  defaultCompressibleTypes,
  defaultExcludedTypes,
  isMediaTypeList,
  isMediaTypeOption,
  TypeMatcher,
  type MediaTypeList,
  type MediaTypeOption,
} from '../http/media-types.ts';
import { isTagList } from '../http/tags.ts';
import { allCodings, canonicalCoding, type Coding } from '../http/negotiate.ts';

// The contracts of the `cache` and `cacheLock` options are declared once, beside their implementations.
export type { CacheStore } from '../base/store.ts';
export type { CacheLock } from '../locks/protocol.ts';

/** A content coding name as the `encodings` option takes it. */
export type EncodingName = Coding | 'x-gzip';

/** A flag: booleans, or 0 and 1 as in the Perl original. */
export type Flag = boolean | 0 | 1;

/** Options of {@link buffer}; every one is optional. */
export interface BufferOptions {
  /** Compress eligible responses. @defaultValue true */
  compressContent?: Flag;
  /** 0 off, 1 squash HTML, 2 also minify inline CSS/JS. @defaultValue 0 */
  optimiseContent?: 0 | 1 | 2;
  /** With optimisation, shorten links to this site. @defaultValue true */
  rewriteLinks?: Flag;
  /** ETag on 200 GET/HEAD: the MD5 of the uncompressed body with a coding suffix. @defaultValue true */
  generateEtag?: Flag;
  /** Answer 304 Not Modified. @defaultValue true */
  generate304?: Flag;
  /** false/0 none; true/1 newest mtime of the app script and templatePaths; epoch seconds; a date string; or a function of ctx. @defaultValue true */
  lastModified?: LastModifiedOption;
  /** Also honour If-Modified-Since when the page has an ETag. @defaultValue false */
  trustLastModified?: Flag;
  /** Files and directories (scanned recursively) whose mtimes count beside the app script. @defaultValue [] */
  templatePaths?: string[];
  /** Remembers the template mtime scan: an object with get/set (a Keyv works). */
  templateMtimeCache?: MtimeCache;
  /** Seconds or a duration string. @defaultValue 10 */
  templateMtimeCacheDuration?: number | string;
  /** Bytes, or a size string such as '1kb'; smaller bodies are not compressed. @defaultValue 32 */
  minCompressSize?: number | string;
  /** Codings offered, in server preference order. @defaultValue ['br', 'zstd', 'gzip', 'deflate'] */
  encodings?: EncodingName[];
  /** Fixed levels per coding; giving them pins them, as `adaptiveCompression: false` does. @defaultValue { br: 4, zstd: 3, gzip: 6, deflate: 6 } */
  compressionLevels?: Partial<Record<EncodingName, number>>;
  /**
   * Cheap codings for bodies seen once, the smallest for bodies seen again
   * (recompressed off the request path); false pins the fixed
   * `compressionLevels` and the `encodings` order. @defaultValue true, unless compressionLevels is given
   */
  adaptiveCompression?: Flag;
  /**
   * Media types to compress: strings (case-insensitive, `*` a wildcard: `'text/*'`, `'*\/*+json'`),
   * RegExps and `(type) => boolean` predicates, or one predicate.
   * @defaultValue what mime-db marks compressible (the `compressible` package), less text/event-stream
   */
  compressibleTypes?: MediaTypeOption;
  /**
   * Cache-Control given to a 200 GET/HEAD response that got a generated
   * Last-Modified and carries neither Cache-Control nor Expires, so browsers
   * do not hold a dynamic page fresh for a tenth of its Last-Modified age
   * (RFC 9111 4.2.2); false for none. @defaultValue 'no-cache'
   */
  defaultCacheControl?: string | false;
  /**
   * Compression dictionaries (RFC 9842): rules `{ match, types?, keep?, id?, matchDest?, maxSize? }`
   * whose responses are offered to browsers as dictionaries, and whose later
   * requests are answered with `Content-Encoding: dcz`. @defaultValue off
   */
  dictionaries?: DictionaryRuleOption[] | false;
  /** Media types never buffered, in the same forms as compressibleTypes. @defaultValue ['text/event-stream'] */
  excludedTypes?: MediaTypeList;
  /**
   * The server-side cache: true (in-memory), a Keyv-compatible store, a Keyv,
   * an lru-cache LRUCache, an ioredis Redis or Cluster, or 'sqlite:PATH' /
   * 'redis://…'. Another object is probed once at start-up.
   */
  cache?: true | CacheStore | object | string;
  /**
   * Host names (no port, case-insensitive) whose pages may be cached; a
   * request for any other Host bypasses the cache (`detail=HOST`), so forged
   * Host headers cannot fill the store. With `app.proxy`, the Host is
   * X-Forwarded-Host's, as Koa reads it. @defaultValue any host
   */
  cacheHosts?: string[];
  /** Bytes the in-memory store (`cache: true`) holds at most, keys and entries. @defaultValue 64 MiB */
  cacheMemoryBytes?: number;
  /** Seconds or a duration string. @defaultValue '10 minutes' */
  cacheDuration?: number | string;
  /**
   * Seconds (or a duration string) an entry past its TTL is still answered at
   * once, as `X-Cache: STALE`, while one background refresh per key rebuilds it
   * (RFC 5861). @defaultValue 0
   */
  cacheStaleWhileRevalidate?: number | string;
  /**
   * Seconds (or a duration string) an entry past its TTL is answered instead
   * of an error when its rebuild throws, times out or answers 5xx (RFC 5861). @defaultValue 0
   */
  cacheStaleIfError?: number | string;
  /**
   * Seconds (or a duration string) a key whose build could not be stored
   * (it set a cookie, said private or no-store, varied outside the key, or
   * answered a status other than 200) is remembered as such: its requests
   * go to the action at once, none waits for another's build (Varnish's
   * hit-for-miss). A storable response ends it early. 0 turns it off; the
   * waiters of such a build still run the action. @defaultValue '2 minutes'
   */
  cacheHitForMiss?: number | string;
  /**
   * What a request's `Cache-Control: no-cache` (or no-store, private,
   * max-age=0, or `Pragma: no-cache` without Cache-Control) does: 'ignore'
   * (answered as any request, so no client can switch the stampede
   * protection off), 'refresh' (rebuilds the entry through the flight: one
   * build per key at a time, the result stored), 'bypass' (runs uncached,
   * stores nothing). @defaultValue 'ignore'
   */
  cacheRequestNoCache?: 'ignore' | 'refresh' | 'bypass';
  /** Replaces the generated cache key; '' falls back to it. */
  cacheKey?: string | ((ctx: Context) => string | undefined | null);
  /** Coalesce concurrent misses of one key. @defaultValue true */
  cacheSingleFlight?: Flag;
  /** Seconds (> 0) a waiter may wait; also bounds a flight. @defaultValue 10 */
  cacheLockTimeout?: number;
  /** Elects one builder across processes. */
  cacheLock?: CacheLock;
  /** Shorthand for `cacheLock: new FileLock({dir})`. */
  cacheLockDir?: string;
  /**
   * Request headers joining the generated key; `cookie:NAME` joins only
   * that cookie's value (`['cookie:session']`), so analytics cookies do not
   * give every visitor a cache of their own. The value is read as Koa's
   * `ctx.cookies.get` reads it; a Cookie header that names the cookie twice,
   * in any spelling, bypasses the cache (`detail=COOKIE`). Set per response,
   * anything but a list of header names bypasses the cache
   * (`detail=VARYBY`). @defaultValue ['cookie']
   */
  varyBy?: string[];
  /** Bytes; larger bodies are not stored. @defaultValue 8 MiB */
  cacheMaxSize?: number;
  /** What a waiter does when the build it waited for fails. @defaultValue 'retry-later' */
  cacheWaitFailure?: 'retry-later' | 'run';
  /**
   * Seconds (> 0) any one call to the cache store may take; a store that
   * takes longer counts as failed (a miss and a log line), so a hanging
   * store never hangs a request. @defaultValue 1
   */
  cacheStoreTimeout?: number;
  /**
   * Purge tags of the response (`mw.purgeTag(tag)` removes every entry
   * carrying one); usually set per response through `ctx.state.buffer`.
   * A tag is 1-256 visible ASCII characters, no comma. @defaultValue []
   */
  cacheTags?: string[];
  /**
   * Response header whose comma-separated tags join `cacheTags`; removed
   * before the response is sent. false reads none. @defaultValue 'Cache-Tag'
   */
  cacheTagHeader?: string | false;
  /**
   * Bytes of the in-process copy of the entries a SQLite or Redis store
   * answered (kept coherent with purges and expiry); 0 turns it off.
   * @defaultValue 32 MiB
   */
  cacheNearBytes?: number;
  /**
   * Milliseconds between two looks at a shared store's purge generation:
   * a purge in another process is seen within about this. @defaultValue 50
   */
  cacheSyncMs?: number;
  /** Bytes of the representation memo; 0 turns it off. @defaultValue 64 MiB */
  memoMaxSize?: number;
  /** Message overrides by key. */
  messages?: MessageOverrides;
  /** pino-compatible logger. @defaultValue writes warnings and errors to stderr */
  logger?: Logger;
}

/** The options a {@link bufferSection} may declare. */
export type SectionOptions = Pick<
  BufferOptions,
  'compressContent' | 'optimiseContent' | 'rewriteLinks' | 'trustLastModified'
>;

/** The options as the pipeline uses them: validated, defaulted and compiled. */
export interface ResolvedOptions {
  compressContent: boolean;
  optimiseContent: 0 | 1 | 2;
  rewriteLinks: boolean;
  generateEtag: boolean;
  generate304: boolean;
  /** The option as given (a function is called per response). */
  lastModified: LastModifiedOption;
  trustLastModified: boolean;
  templatePaths: readonly string[];
  templateMtimeCache: MtimeCache | undefined;
  /** Seconds. */
  templateMtimeCacheDuration: number;
  minCompressSize: number;
  /** Canonical and available, in server preference order. */
  encodings: readonly Coding[];
  compressionLevels: Readonly<Record<Coding, number>>;
  adaptiveCompression: boolean;
  compressibleTypes: TypeMatcher;
  /** '' for none. */
  defaultCacheControl: string;
  excludedTypes: TypeMatcher;
  /** [] when off. */
  dictionaries: readonly DictionaryRule[];
  cache: true | CacheStore | object | string | undefined;
  cacheMemoryBytes: number;
  /** Lowercased host names; undefined for any. */
  cacheHosts: ReadonlySet<string> | undefined;
  /** Seconds. */
  cacheDuration: number;
  /** Seconds. */
  cacheStaleWhileRevalidate: number;
  /** Seconds. */
  cacheStaleIfError: number;
  /** Seconds; 0 for off. */
  cacheHitForMiss: number;
  cacheRequestNoCache: 'ignore' | 'refresh' | 'bypass';
  cacheKey: string | ((ctx: Context) => string | undefined | null) | undefined;
  cacheSingleFlight: boolean;
  /** Seconds. */
  cacheLockTimeout: number;
  cacheLock: CacheLock | undefined;
  cacheLockDir: string | undefined;
  /** Lowercased header names. */
  varyBy: readonly string[];
  cacheMaxSize: number;
  cacheWaitFailure: 'retry-later' | 'run';
  /** Seconds. */
  cacheStoreTimeout: number;
  cacheTags: readonly string[];
  /** Lowercased; '' for none. */
  cacheTagHeader: string;
  cacheNearBytes: number;
  cacheSyncMs: number;
  memoMaxSize: number;
  messages: Messages;
  logger: Logger;
  /**
   * The options `ctx.state.buffer` set for this response to a value other
   * than undefined or null (a value set there wins over the response's own
   * Cache-Control); empty for the `buffer()` options.
   */
  overridden: ReadonlySet<string>;
  /** True when `ctx.state.buffer` set a varyBy that is not a list of header names: the request bypasses the cache. */
  varyByRefused: boolean;
}

/** The memo's default budget, 64 MiB: room for a few hundred typical pages in every coding. */
export const defaultMemoMaxSize = 64 * 1024 * 1024;

/** Default cacheLockTimeout, seconds; also what a per-response `undefined` means. */
export const defaultCacheLockTimeout = 10;

/** What a response with no per-response values has overridden. */
const nothingOverridden: ReadonlySet<string> = new Set();

const defaults: Omit<ResolvedOptions, 'messages' | 'logger' | 'encodings' | 'overridden' | 'varyByRefused'> = {
  compressContent: true,
  optimiseContent: 0,
  rewriteLinks: true,
  generateEtag: true,
  generate304: true,
  lastModified: true,
  trustLastModified: false,
  templatePaths: [],
  templateMtimeCache: undefined,
  templateMtimeCacheDuration: 10,
  minCompressSize: 32,
  compressionLevels: defaultLevels,
  adaptiveCompression: true,
  compressibleTypes: new TypeMatcher(defaultCompressibleTypes),
  defaultCacheControl: 'no-cache',
  excludedTypes: new TypeMatcher(defaultExcludedTypes),
  dictionaries: [],
  cache: undefined,
  cacheMemoryBytes: 64 * 1024 * 1024,
  cacheHosts: undefined,
  cacheDuration: 600,
  cacheStaleWhileRevalidate: 0,
  cacheStaleIfError: 0,
  cacheHitForMiss: 120,
  cacheRequestNoCache: 'ignore',
  cacheKey: undefined,
  cacheSingleFlight: true,
  cacheLockTimeout: defaultCacheLockTimeout,
  cacheLock: undefined,
  cacheLockDir: undefined,
  varyBy: ['cookie'],
  cacheMaxSize: 8 * 1024 * 1024,
  cacheWaitFailure: 'retry-later',
  cacheStoreTimeout: 1,
  cacheTags: [],
  cacheTagHeader: 'cache-tag',
  cacheNearBytes: 32 * 1024 * 1024,
  cacheSyncMs: 50,
  memoMaxSize: defaultMemoMaxSize,
};

// --- value checks -----------------------------------------------------------

const isNil = (v: unknown): v is undefined | null => v === undefined || v === null;
const isFlag = (v: unknown): boolean => isNil(v) || typeof v === 'boolean' || v === 0 || v === 1;
const hasMethods = (v: unknown, ...names: string[]): boolean =>
  v !== null &&
  (typeof v === 'object' || typeof v === 'function') &&
  names.every((n) => typeof (v as Record<string, unknown>)[n] === 'function');
const isNonNegativeInteger = (v: unknown): v is number => typeof v === 'number' && Number.isSafeInteger(v) && v >= 0;
// Node keeps a timer of at most 2^31 - 1 ms; a longer one fires after 1 ms,
// so a timeout beyond it would end every wait at once.
const maxTimerSeconds = 2_147_483;
const isTimerSeconds = (v: unknown): boolean =>
  typeof v === 'number' && Number.isFinite(v) && v > 0 && v <= maxTimerSeconds;
const isPositiveDuration = (v: unknown): boolean => {
  const seconds = parseDuration(v);
  return seconds !== undefined && seconds > 0;
};
/** A host name or IPv4 address, or an IPv6 address in brackets; no port. */
const hostName = /^(?:[a-z0-9_](?:[a-z0-9_.-]*[a-z0-9_])?|\[[0-9a-f:.]+\])$/i;
const hostSet = (hosts: readonly unknown[]): ReadonlySet<string> =>
  new Set(hosts.filter((h): h is string => typeof h === 'string').map((h) => h.toLowerCase()));
/** `cookie:NAME`, NAME a cookie name (an RFC 6265 token). */
const cookieEntry = /^cookie:[!#$%&'*+.^_`|~0-9a-z-]+$/i;
/** A varyBy entry as the key uses it: a header name lowercased; in `cookie:NAME` only `cookie` (cookie names are case-sensitive). */
const varyEntry = (h: string): string => (cookieEntry.test(h) ? `cookie:${h.slice(7)}` : h.toLowerCase());
const headerName = /^[!#$%&'*+.^_`|~0-9a-z-]+$/i;
const isCacheUrl = (v: string): boolean => /^sqlite:.+$/.test(v) || /^rediss?:\/\/.+$/.test(v);

function isLevels(v: unknown): boolean {
  if (isNil(v)) return true;
  if (typeof v !== 'object' || Array.isArray(v)) return false;
  return Object.entries(v as Record<string, unknown>).every(([name, level]) => {
    const coding = canonicalCoding(name);
    if (!coding) return false;
    const [min, max] = levelRange[coding];
    return typeof level === 'number' && Number.isInteger(level) && level >= min && level <= max;
  });
}

interface Rule {
  /** The catalog key of the problem. */
  key: string;
  /** True when `value` is acceptable (undefined included where it is). */
  ok: (value: unknown) => boolean;
  /** What is wrong with a value `ok` refuses, for options with an inner shape (the `%{problem}` of the message). */
  problem?: (value: unknown) => string | undefined;
}

const flag: Rule = { key: 'option_flag', ok: isFlag };

/** One rule per option. `undefined` is refused only for encodings, the type lists, varyBy and minCompressSize. */
const rules: Record<keyof BufferOptions, Rule> = {
  adaptiveCompression: flag,
  cache: {
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
  cacheHosts: {
    key: 'option_cache_hosts',
    ok: (v) => isNil(v) || (Array.isArray(v) && v.every((h) => typeof h === 'string' && hostName.test(h))),
  },
  cacheMemoryBytes: { key: 'option_cache_memory_bytes', ok: (v) => isNil(v) || (isNonNegativeInteger(v) && v > 0) },
  cacheDuration: { key: 'option_cache_duration', ok: (v) => isNil(v) || isPositiveDuration(v) },
  cacheStaleIfError: { key: 'option_cache_stale_if_error', ok: (v) => isNil(v) || parseDuration(v) !== undefined },
  cacheHitForMiss: { key: 'option_cache_hit_for_miss', ok: (v) => isNil(v) || parseDuration(v) !== undefined },
  cacheStaleWhileRevalidate: {
    key: 'option_cache_stale_while_revalidate',
    ok: (v) => isNil(v) || parseDuration(v) !== undefined,
  },
  cacheKey: { key: 'option_cache_key', ok: (v) => isNil(v) || typeof v === 'string' || typeof v === 'function' },
  cacheLock: { key: 'option_cache_lock', ok: (v) => isNil(v) || hasMethods(v, 'acquire', 'release') },
  cacheLockDir: { key: 'option_cache_lock_dir', ok: (v) => isNil(v) || (typeof v === 'string' && v !== '') },
  cacheLockTimeout: { key: 'option_cache_lock_timeout', ok: (v) => isNil(v) || isTimerSeconds(v) },
  cacheMaxSize: { key: 'option_cache_max_size', ok: (v) => isNil(v) || (isNonNegativeInteger(v) && v > 0) },
  cacheRequestNoCache: {
    key: 'option_cache_request_no_cache',
    ok: (v) => isNil(v) || v === 'ignore' || v === 'refresh' || v === 'bypass',
  },
  cacheSingleFlight: flag,
  cacheStoreTimeout: { key: 'option_cache_store_timeout', ok: (v) => isNil(v) || isTimerSeconds(v) },
  cacheTags: { key: 'option_cache_tags', ok: (v) => isNil(v) || isTagList(v) },
  cacheTagHeader: {
    key: 'option_cache_tag_header',
    ok: (v) => isNil(v) || v === false || (typeof v === 'string' && /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/.test(v)),
  },
  cacheNearBytes: { key: 'option_cache_near_bytes', ok: (v) => isNil(v) || isNonNegativeInteger(v) },
  cacheSyncMs: {
    key: 'option_cache_sync_ms',
    ok: (v) => isNil(v) || (typeof v === 'number' && Number.isFinite(v) && v >= 1),
  },
  cacheWaitFailure: { key: 'option_cache_wait_failure', ok: (v) => isNil(v) || v === 'retry-later' || v === 'run' },
  compressContent: flag,
  compressibleTypes: { key: 'option_compressible_types', ok: isMediaTypeOption },
  compressionLevels: { key: 'option_compression_levels', ok: isLevels },
  defaultCacheControl: {
    key: 'option_default_cache_control',
    ok: (v) => isNil(v) || v === false || (typeof v === 'string' && v.trim() !== '' && !/[\r\n\0]/.test(v)),
  },
  dictionaries: {
    key: 'option_dictionaries',
    ok: (v) => dictionariesProblem(v) === undefined,
    problem: dictionariesProblem,
  },
  encodings: { key: 'option_encodings', ok: (v) => Array.isArray(v) && v.every((e) => typeof e === 'string') },
  excludedTypes: { key: 'option_excluded_types', ok: isMediaTypeList },
  generate304: flag,
  generateEtag: flag,
  lastModified: { key: 'option_last_modified', ok: isLastModifiedOption },
  logger: { key: 'option_logger', ok: (v) => isNil(v) || isLogger(v) },
  memoMaxSize: { key: 'option_memo_max_size', ok: (v) => isNil(v) || isNonNegativeInteger(v) },
  messages: { key: 'option_messages', ok: (v) => isNil(v) || isMessageOverrides(v) },
  minCompressSize: { key: 'option_min_compress_size', ok: (v) => parseSize(v) !== undefined },
  optimiseContent: { key: 'option_optimise_content', ok: (v) => isNil(v) || v === 0 || v === 1 || v === 2 },
  rewriteLinks: flag,
  templateMtimeCache: { key: 'option_template_mtime_cache', ok: (v) => isNil(v) || hasMethods(v, 'get', 'set') },
  templateMtimeCacheDuration: {
    key: 'option_template_mtime_cache_duration',
    ok: (v) => isNil(v) || isPositiveDuration(v),
  },
  templatePaths: {
    key: 'option_template_paths',
    ok: (v) => isNil(v) || (Array.isArray(v) && v.every((p) => typeof p === 'string' && p !== '')),
  },
  trustLastModified: flag,
  varyBy: {
    key: 'option_vary_by',
    ok: (v) => Array.isArray(v) && v.every((h) => typeof h === 'string' && (headerName.test(h) || cookieEntry.test(h))),
  },
};

const known = new Set(Object.keys(rules));

/** True for a plain object literal (or one made with Object.create(null)). */
function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return false;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

/** The first problem among the named options, checked in ASCII order; throws it. */
function checkEach(options: Record<string, unknown>, messages: Messages): void {
  // Array#sort compares UTF-16 code units, which for ASCII names is ASCII order.
  for (const name of Object.keys(options).sort()) {
    if (!known.has(name)) throw new BufferOptionError('unknown_option', { name }, messages);
    const rule = rules[name as keyof BufferOptions];
    if (!rule.ok(options[name]))
      throw new BufferOptionError(rule.key, { name, problem: rule.problem?.(options[name]) }, messages);
  }
}

/** The checks that look at more than one option, after all the others. */
function checkTogether(options: Record<string, unknown>, messages: Messages, cacheLockTimeout: number): void {
  if (!isNil(options.cacheLock) && !isNil(options.cacheLockDir))
    throw new BufferOptionError('lock_options_combined', {}, messages);
  const ttl = (options.cacheLock as CacheLock | undefined)?.ttl;
  if (typeof ttl === 'number' && ttl <= cacheLockTimeout)
    throw new BufferOptionError('lock_ttl_too_short', { ttl, timeout: cacheLockTimeout }, messages);
  for (const name of (options.encodings as string[] | undefined) ?? []) {
    if (!canonicalCoding(name)) throw new BufferOptionError('unknown_encoding', { name }, messages);
  }
  if (options.adaptiveCompression && !isNil(options.compressionLevels))
    throw new BufferOptionError('adaptive_levels_combined', {}, messages);
}

/**
 * Validates `options` and resolves them against the defaults.
 *
 * @param options - the argument of buffer(); undefined means no options
 * @returns the resolved options
 * @throws BufferOptionError for the first problem, in the order described above
 */
export function resolveOptions(options: unknown = {}): ResolvedOptions {
  if (!isPlainObject(options)) throw new BufferOptionError('options_not_hash');
  // Messages are adopted first, so that the errors below are worded with them.
  const messages = new Messages(isMessageOverrides(options.messages) ? options.messages : {});
  checkEach(options, messages);
  const o = options as BufferOptions & Record<string, unknown>;
  const has = (name: keyof BufferOptions): boolean => Object.prototype.hasOwnProperty.call(o, name);
  const cacheLockTimeout = isNil(o.cacheLockTimeout) ? defaults.cacheLockTimeout : o.cacheLockTimeout;
  checkTogether(o, messages, cacheLockTimeout);

  const logger = isNil(o.logger) ? defaultLogger : o.logger;
  const requested = has('encodings') ? (o.encodings as string[]).map((e) => canonicalCoding(e)!) : [...allCodings];
  let encodings: readonly Coding[] = [];
  for (const coding of requested) {
    if (encodings.includes(coding)) continue;
    if (codingAvailable(coding)) encodings = [...encodings, coding];
    else logger.warn(messages.text('log_encoding_unavailable', { name: coding }));
  }
  // The one default array: adaptive compression orders it by temperature, a user's list keeps its order.
  if (!has('encodings')) encodings = defaultEncodings;

  // A flag given as undefined means off ("undef in options" in the Perl original); one not given keeps its default.
  const flagOption = (
    name:
      'compressContent' | 'rewriteLinks' | 'generateEtag' | 'generate304' | 'trustLastModified' | 'cacheSingleFlight',
  ): boolean => (has(name) ? Boolean(o[name]) : defaults[name]);

  return {
    compressContent: flagOption('compressContent'),
    optimiseContent: (o.optimiseContent ?? 0) as 0 | 1 | 2,
    rewriteLinks: flagOption('rewriteLinks'),
    generateEtag: flagOption('generateEtag'),
    generate304: flagOption('generate304'),
    lastModified: has('lastModified') ? o.lastModified : defaults.lastModified,
    trustLastModified: flagOption('trustLastModified'),
    templatePaths: o.templatePaths ?? defaults.templatePaths,
    templateMtimeCache: o.templateMtimeCache ?? undefined,
    templateMtimeCacheDuration: isNil(o.templateMtimeCacheDuration)
      ? defaults.templateMtimeCacheDuration
      : parseDuration(o.templateMtimeCacheDuration)!,
    minCompressSize: has('minCompressSize') ? parseSize(o.minCompressSize)! : defaults.minCompressSize,
    encodings,
    compressionLevels: { ...defaultLevels, ...canonicalLevels(o.compressionLevels) },
    adaptiveCompression: has('adaptiveCompression') ? Boolean(o.adaptiveCompression) : isNil(o.compressionLevels),
    compressibleTypes: has('compressibleTypes') ? new TypeMatcher(o.compressibleTypes!) : defaults.compressibleTypes,
    defaultCacheControl: defaultCacheControlOf(has('defaultCacheControl'), o.defaultCacheControl),
    excludedTypes: has('excludedTypes') ? new TypeMatcher(o.excludedTypes!) : defaults.excludedTypes,
    dictionaries: resolveDictionaries(o.dictionaries),
    cache: isNil(o.cache) || (o.cache as unknown) === false ? undefined : o.cache,
    cacheMemoryBytes: o.cacheMemoryBytes ?? defaults.cacheMemoryBytes,
    cacheHosts: isNil(o.cacheHosts) ? undefined : hostSet(o.cacheHosts),
    cacheDuration: isNil(o.cacheDuration) ? defaults.cacheDuration : parseDuration(o.cacheDuration)!,
    cacheStaleWhileRevalidate: parseDuration(o.cacheStaleWhileRevalidate) ?? defaults.cacheStaleWhileRevalidate,
    cacheStaleIfError: parseDuration(o.cacheStaleIfError) ?? defaults.cacheStaleIfError,
    cacheHitForMiss: parseDuration(o.cacheHitForMiss) ?? defaults.cacheHitForMiss,
    cacheRequestNoCache: o.cacheRequestNoCache ?? defaults.cacheRequestNoCache,
    cacheKey: o.cacheKey ?? undefined,
    cacheSingleFlight: flagOption('cacheSingleFlight'),
    cacheLockTimeout,
    cacheLock: o.cacheLock ?? undefined,
    cacheLockDir: o.cacheLockDir ?? undefined,
    varyBy: has('varyBy') ? o.varyBy!.map(varyEntry) : defaults.varyBy,
    cacheMaxSize: o.cacheMaxSize ?? defaults.cacheMaxSize,
    cacheWaitFailure: o.cacheWaitFailure ?? defaults.cacheWaitFailure,
    cacheStoreTimeout: o.cacheStoreTimeout ?? defaults.cacheStoreTimeout,
    cacheTags: o.cacheTags ?? defaults.cacheTags,
    cacheTagHeader: o.cacheTagHeader === false ? '' : (o.cacheTagHeader ?? defaults.cacheTagHeader).toLowerCase(),
    cacheNearBytes: o.cacheNearBytes ?? defaults.cacheNearBytes,
    cacheSyncMs: o.cacheSyncMs ?? defaults.cacheSyncMs,
    memoMaxSize: o.memoMaxSize ?? defaults.memoMaxSize,
    messages,
    logger,
    overridden: nothingOverridden,
    varyByRefused: false,
  };
}

/**
 * The defaultCacheControl option as the pipeline uses it: '' for none. Only
 * `false` turns the guard off; `undefined` keeps the default, as the guard
 * protects visitors from a page their browser would never ask for again.
 */
function defaultCacheControlOf(given: boolean, value: unknown): string {
  if (!given || isNil(value)) return defaults.defaultCacheControl;
  return typeof value === 'string' ? value.trim() : '';
}

/** Levels keyed by canonical coding (x-gzip counts as gzip); non-numbers are dropped. */
function canonicalLevels(levels: unknown): Partial<Record<Coding, number>> {
  const out: Partial<Record<Coding, number>> = {};
  if (levels === null || typeof levels !== 'object') return out;
  for (const [name, level] of Object.entries(levels)) {
    const coding = canonicalCoding(name);
    if (coding && typeof level === 'number' && Number.isFinite(level)) out[coding] = level;
  }
  return out;
}

// --- bufferSection ----------------------------------------------------------

const declarable = new Set(['compressContent', 'optimiseContent', 'rewriteLinks', 'trustLastModified']);

/**
 * Validates the declarations of a bufferSection. In a declaration `undefined`
 * means "not declared" ("undef in options" in the Perl original), so such keys are dropped.
 *
 * @throws BufferOptionError `unknown_option` for a key that is not declarable, or the key's own problem
 */
export function resolveSection(declared: unknown): Partial<ResolvedOptions> {
  if (!isPlainObject(declared)) throw new BufferOptionError('options_not_hash');
  const out: Partial<Record<string, unknown>> = {};
  for (const name of Object.keys(declared).sort()) {
    if (!declarable.has(name)) throw new BufferOptionError('unknown_option', { name });
    const value = declared[name];
    const rule = rules[name as keyof BufferOptions];
    if (!rule.ok(value)) throw new BufferOptionError(rule.key, { name });
    if (value === undefined || value === null) continue;
    out[name] = name === 'optimiseContent' ? value : Boolean(value);
  }
  return out as Partial<ResolvedOptions>;
}

// --- per response -----------------------------------------------------------

/** The options the per-response layers may not change: read once, when buffer() runs. */
const registrationOnly = new Set([
  'messages',
  'logger',
  'memoMaxSize',
  'templateMtimeCache',
  'templateMtimeCacheDuration',
  'cacheLock',
  'cacheLockDir',
  'cacheMemoryBytes',
  'cacheNearBytes',
  'cacheSyncMs',
  'cacheHitForMiss',
  'dictionaries',
]);

/**
 * Conversions of per-response values the option's rule accepted (see
 * {@link perResponseRefusal}). `undefined` is a real value meaning off or
 * none; the other checks here only keep a conversion total.
 */
const lenient: Partial<Record<keyof ResolvedOptions, (v: unknown, base: ResolvedOptions) => unknown>> = {
  compressContent: Boolean,
  rewriteLinks: Boolean,
  generateEtag: Boolean,
  generate304: Boolean,
  trustLastModified: Boolean,
  cacheSingleFlight: Boolean,
  optimiseContent: (v) => (v === 2 || v === '2' ? 2 : v === 1 || v === '1' || v === true ? 1 : 0),
  lastModified: (v) => v,
  templatePaths: (v) => (Array.isArray(v) ? v.filter((p) => typeof p === 'string') : []),
  minCompressSize: (v) => (v === undefined || v === null ? 0 : (parseSize(v) ?? defaults.minCompressSize)),
  // Not filtered by what is installed: the compress step logs a coding it cannot make.
  encodings: (v) =>
    Array.isArray(v)
      ? [
          ...new Set(
            v.map((e) => (typeof e === 'string' ? canonicalCoding(e) : undefined)).filter((c) => c !== undefined),
          ),
        ]
      : [],
  compressionLevels: (v) => ({ ...defaultLevels, ...canonicalLevels(v) }),
  adaptiveCompression: Boolean,
  compressibleTypes: (v) => new TypeMatcher(Array.isArray(v) || typeof v === 'function' ? (v as MediaTypeOption) : []),
  excludedTypes: (v) => new TypeMatcher(Array.isArray(v) ? v : []),
  defaultCacheControl: (v) => (typeof v === 'string' && !/[\r\n\0]/.test(v) ? v.trim() : ''),
  // Only a list of header names gets here: anything else makes the request bypass the cache.
  varyBy: (v) => (v as readonly string[]).map(varyEntry),
  cacheLockTimeout: (v) => (typeof v === 'number' && Number.isFinite(v) && v > 0 ? v : defaultCacheLockTimeout),
  cacheDuration: (v) => parseDuration(v) ?? defaults.cacheDuration,
  cacheStaleWhileRevalidate: (v) => parseDuration(v) ?? defaults.cacheStaleWhileRevalidate,
  cacheStaleIfError: (v) => parseDuration(v) ?? defaults.cacheStaleIfError,
  cacheMaxSize: (v) => (typeof v === 'number' && v > 0 ? v : defaults.cacheMaxSize),
  cache: (v) => (v === false || v === null ? undefined : v),
  cacheKey: (v) => (v === null ? undefined : v),
  cacheWaitFailure: (v) => (v === 'run' ? 'run' : 'retry-later'),
  cacheHosts: (v) => (Array.isArray(v) ? hostSet(v) : undefined),
  cacheRequestNoCache: (v) => (v === 'refresh' || v === 'bypass' ? v : 'ignore'),
  cacheStoreTimeout: (v) => (typeof v === 'number' && Number.isFinite(v) && v > 0 ? v : defaults.cacheStoreTimeout),
  cacheTags: (v) => (Array.isArray(v) ? v : []),
  cacheTagHeader: (v) => (typeof v === 'string' ? v.toLowerCase() : ''),
};

/** `ctx.state.buffer` read as the README says: off, nothing set, or an object of overrides. */
export type ResponseOverride =
  { readonly off: true } | { readonly off: false; readonly values: Record<string, unknown> | undefined };

// Shared answers: reading the override is on every request's path and allocates nothing in the usual cases.
const turnedOff: ResponseOverride = Object.freeze({ off: true });
const nothingSet: ResponseOverride = Object.freeze({ off: false, values: undefined });

/**
 * Reads `ctx.state.buffer`: 0, false and '' turn koa-buffer off; undefined and null set nothing; an object overrides.
 *
 * @throws whatever a revoked proxy throws when asked whether it is an array
 */
export function readOverride(value: unknown): ResponseOverride {
  if (value === undefined || value === null) return nothingSet;
  if (value === 0 || value === false || value === '') return turnedOff;
  if (typeof value === 'object' && !Array.isArray(value))
    return { off: false, values: value as Record<string, unknown> };
  return nothingSet;
}

/** Entries a per-response list may hold: a longer one (a proxy may claim 2^32 - 1) is refused before it is read. */
export const perResponseListMax = 10_000;

/** A per-response value that could not be used, for the log line. */
export interface Refusal {
  /** The option's name; undefined when the whole override could not be read. */
  readonly name: string | undefined;
  /** The value as read; undefined when reading it threw. */
  readonly value: unknown;
  /** The catalog key of what `buffer()` would say of the value, or `override_unreadable` when reading it threw. */
  readonly key: string;
  /** What reading threw. */
  readonly error?: unknown;
  /** More placeholders of the problem's message, for a check that looks at two options. */
  readonly args?: Readonly<Record<string, unknown>>;
}

/**
 * The catalog key of the problem `buffer()` would report for option `name`
 * set to `value`, or undefined when it would take it, for a per-response
 * value: there `undefined` means off or none, except for varyBy. Never
 * throws: a value whose check throws (a proxy) is refused.
 *
 * @param name - an option name
 * @param value - the value, as read once (see {@link readOverrideValue})
 * @param base - the `buffer()` options, for the checks that look at two options
 */
export function perResponseRefusal(name: string, value: unknown, base?: ResolvedOptions): string | undefined {
  if (!known.has(name)) return 'unknown_option';
  // Per response, undefined means off or none, where buffer() refuses it too; but no varyBy is a key for everyone.
  if (value === undefined) return name === 'varyBy' ? rules.varyBy.key : undefined;
  const rule = rules[name as keyof BufferOptions];
  try {
    if (!rule.ok(value)) return rule.key;
    // The checks buffer() makes across options, where the other one is the configured value.
    if (name === 'encodings' && !(value as string[]).every((e) => canonicalCoding(e))) return 'unknown_encoding';
    const ttl = base?.cacheLock?.ttl;
    if (name === 'cacheLockTimeout' && typeof ttl === 'number' && typeof value === 'number' && ttl <= value)
      return 'lock_ttl_too_short';
    return undefined;
  } catch {
    return rule.key;
  }
}

/**
 * Reads `source[name]` once, as the value every later look sees: a list is
 * copied (a proxy could answer a second reading differently), and so are
 * the levels of compressionLevels. Other objects keep their identity (a
 * store, a function).
 *
 * @returns the value, or what reading it threw
 */
export function readOverrideValue(source: object, name: string): { value: unknown } | { error: unknown } {
  try {
    const value: unknown = (source as Record<string, unknown>)[name];
    if (Array.isArray(value)) {
      const length = value.length;
      if (!(length <= perResponseListMax)) return { error: new RangeError(`a list of ${length} entries`) };
      const copy: unknown[] = [];
      for (let i = 0; i < length; i++) copy.push(value[i]);
      return { value: copy };
    }
    if (name === 'compressionLevels' && value !== null && typeof value === 'object')
      return { value: Object.fromEntries(Object.entries(value)) };
    return { value };
  } catch (error) {
    return { error };
  }
}

/**
 * The options for one response: the `buffer()` options, then the innermost
 * section declarations, then `ctx.state.buffer`, each laid over the previous
 * one key deep. A value of `ctx.state.buffer` its option would refuse in
 * `buffer()` is left out (the configured value applies) and handed to
 * `refused`; a refused varyBy sets `varyByRefused`, so the request
 * bypasses the cache. Never throws.
 *
 * @param base - the `buffer()` options
 * @param section - the section declarations, validated when the section was made
 * @param override - `ctx.state.buffer` when it is an object
 * @param refused - told of each value left out
 */
export function responseOptions(
  base: ResolvedOptions,
  section: Partial<ResolvedOptions> | undefined,
  override: Record<string, unknown> | undefined,
  refused: (refusal: Refusal) => void = () => undefined,
): ResolvedOptions {
  if (section === undefined && override === undefined) return base;
  const merged: ResolvedOptions = { ...base, ...section };
  if (!override) return merged;
  let names: string[];
  try {
    names = Object.keys(override);
  } catch (error) {
    refused({ name: undefined, value: undefined, key: 'override_unreadable', error });
    return merged;
  }
  let overridden: Set<string> | undefined;
  for (const name of names) {
    // Read once, when buffer() runs; a per-response value is not looked at.
    if (registrationOnly.has(name)) continue;
    const read = readOverrideValue(override, name);
    const problem = 'error' in read ? 'override_unreadable' : perResponseRefusal(name, read.value, base);
    if (problem !== undefined) {
      if (name === 'varyBy') merged.varyByRefused = true;
      const value = 'value' in read ? read.value : undefined;
      const args = problem === 'lock_ttl_too_short' ? { ttl: base.cacheLock?.ttl, timeout: value } : undefined;
      refused({ name, value, key: problem, error: (read as { error?: unknown }).error, args });
      continue;
    }
    const value = (read as { value: unknown }).value;
    const convert = lenient[name as keyof ResolvedOptions];
    (merged as unknown as Record<string, unknown>)[name] = convert ? convert(value, base) : value;
    if (value !== undefined && value !== null) (overridden ??= new Set()).add(name);
  }
  if (overridden !== undefined) merged.overridden = overridden;
  return merged;
}
