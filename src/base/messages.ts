/**
 * The message catalog: every error, log line and client-facing text
 * koa-buffer produces, keyed as in the Perl original, so a deployment can
 * reword or translate any of them through the `messages` option.
 */

/** A text with `%{name}` placeholders. */
export type MessageText = string;

/** Variants chosen by the `count` argument through `Intl.PluralRules` (`zero`, `one`, `two`, `few`, `many`, `other`). */
export type PluralMessage = Partial<Record<Intl.LDMLPluralRule, MessageText>> & { other: MessageText };

/** Variants chosen by the `gender` argument (`female`, `male`, …), `other` when none fits. */
export type GenderMessage = { [gender: string]: MessageText; other: MessageText };

/** One override: a string, plural variants or gender variants. */
export type MessageOverride = MessageText | PluralMessage | GenderMessage;

/** Overrides by message key, as given to the `messages` option. */
export type MessageOverrides = Record<string, MessageOverride | undefined>;

/** Placeholder values; `count` also picks a plural variant and `gender` a gender variant. */
export type MessageArgs = Record<string, unknown>;

/** The built-in English texts. */
export const defaultMessages = {
  // Option validation; thrown as BufferOptionError.
  options_not_hash: 'options must be an object, not %{value}',
  unknown_option: 'unknown option %{name}%{hint}',
  // The %{hint} of unknown_option when a known option is close enough to be what was meant; else the hint is empty.
  unknown_option_hint: '; did you mean %{suggestion}?',
  option_flag: '%{name} must be a true or false value, not %{value}',
  option_optimise_content: '%{name} must be 0, 1 or 2, not %{value}',
  option_last_modified: '%{name} must be false, true, an epoch, a date string or a function, not %{value}',
  option_last_modified_types:
    "%{name} must be a function of the media type, or an array of media types (strings, wildcards such as 'text/*', RegExps or functions), not %{value}",
  option_min_compress_size:
    "%{name} must be a non-negative integer number of bytes or a size such as '1kb', not %{value}",
  option_encodings: '%{name} must be an array of coding names, not %{value}',
  unknown_encoding: "unknown encoding '%{coding}' in %{name} (%{value})",
  option_compression_levels:
    '%{name} must be an object of levels by coding (br 0–11, zstd 1–22, gzip 0–9, deflate 0–9), not %{value}',
  option_compressible_types:
    "%{name} must be a function of the media type, or an array of media types (strings, wildcards such as 'text/*', RegExps or functions), not %{value}",
  option_default_cache_control: '%{name} must be a Cache-Control value (a non-empty string) or false, not %{value}',
  option_excluded_types:
    "%{name} must be an array of media types (strings, wildcards such as 'text/*', RegExps or functions), not %{value}",
  option_vary_by: '%{name} must be an array of header names, not %{value}',
  option_cache_ignore_cookies:
    "%{name} must be 'analytics' or an array of cookie names, each of which may end in * (a prefix), not %{value}",
  option_cache_key: '%{name} must be a string or a function, not %{value}',
  option_cache:
    "%{name} must be true, a store with get(), set() and delete(), an LRUCache, a Keyv, an ioredis client, or a 'sqlite:PATH' or 'redis://' URL, not %{value}",
  option_cache_driver: '%{name} %{value} needs the %{package} package, which is not installed: npm install %{package}',
  option_cache_driver_broken:
    '%{name} %{value} needs the %{package} package, which is installed but does not load (%{error}): npm rebuild %{package}',
  option_cache_store: '%{name} store refused: %{problem} (%{name}: %{value})',
  option_cache_hosts: '%{name} must be an array of host names, without ports, not %{value}',
  option_cache_memory_bytes: '%{name} must be a positive integer number of bytes, not %{value}',
  option_duration_unit:
    "%{name}: %{value} is seconds (%{meaning}) and reads like milliseconds; durations are seconds: write '%{ifMilliseconds}' if you meant %{number} ms, or a string such as '%{ifSeconds}' if %{meaning} is what you meant",
  option_cache_duration: '%{name} must be a duration (seconds, or e.g. "10 minutes"), not %{value}',
  option_cache_stale_while_revalidate:
    '%{name} must be a duration (seconds, or e.g. "1 minute"), not %{value}; 0 turns it off',
  option_cache_revalidation_window: '%{name} must be a duration (seconds, or e.g. "30 minutes"), not %{value}',
  option_cache_hit_for_miss: '%{name} must be a duration (seconds, or e.g. "2 minutes"), not %{value}; 0 turns it off',
  option_cache_stale_if_error: '%{name} must be a duration (seconds, or e.g. "1 hour"), not %{value}; 0 turns it off',
  cached_overrides: 'ctx.bufferIsCached() takes { cacheDuration, cacheTags }: %{problem}; ignored for this response',
  override_unreadable: 'reading it threw %{error}',
  option_cache_max_size: '%{name} must be a positive integer number of bytes, not %{value}',
  option_cache_request_no_cache: "%{name} must be 'ignore', 'refresh' or 'bypass', not %{value}",
  option_cache_wait_failure: "%{name} must be 'retry-later' or 'run', not %{value}",
  option_cache_store_timeout: '%{name} must be a positive number of seconds, at most 2147483 (24.8 days), not %{value}',
  option_cache_tags: '%{name} must be an array of tags (1 to 256 visible ASCII characters, no comma), not %{value}',
  option_cache_tag_header: '%{name} must be a header name or false, not %{value}',
  option_cache_near_bytes:
    '%{name} must be a non-negative integer number of bytes (0 turns the near cache off), not %{value}',
  option_cache_namespace: '%{name} must be a non-empty string of at most 1024 characters, not %{value}',
  option_cache_sync_ms: '%{name} must be a number of milliseconds, at least 1, not %{value}',
  purge_url:
    'purge(url) needs a path starting with / or an absolute http(s) URL, without control characters; got %{url}',
  purge_host: 'purge(url, {host}) needs a host name (and port) without control characters; got %{host}',
  purge_tag: 'purgeTag(tag) needs a tag of 1 to 256 visible ASCII characters, no comma; got %{tag}',
  option_template_paths: '%{name} must be an array of file or directory paths, not %{value}',
  option_template_mtime_cache: '%{name} must be an object with get() and set(), not %{value}',
  option_template_mtime_cache_duration: '%{name} must be a duration (seconds, or e.g. "10 seconds"), not %{value}',
  option_cache_lock_timeout: '%{name} must be a positive number of seconds, at most 2147483 (24.8 days), not %{value}',
  option_cache_lock: '%{name} must be an object with acquire() and release() methods, not %{value}',
  option_cache_lock_dir: '%{name} must be a directory path, not %{value}',
  option_memo_max_size: '%{name} must be a non-negative integer number of bytes, not %{value}',
  option_dictionaries: '%{problem} (%{name}: %{value})',
  option_logger: '%{name} must be an object with debug(), info(), warn() and error(), not %{value}',
  option_metrics: '%{problem} (%{name}: %{value})',
  option_messages: '%{name} must be an object of texts by message key, not %{value}',
  lock_options_combined: 'cacheLock and cacheLockDir cannot be combined',
  adaptive_levels_combined:
    'adaptiveCompression and compressionLevels cannot be combined: levels given pin them (adaptiveCompression false)',
  lock_ttl_too_short: "the cacheLock's ttl (%{ttl} s) must be longer than cacheLockTimeout (%{timeout} s)",
  lock_dir_create_failed: "cannot create cacheLockDir '%{dir}': %{error}",
  lock_dir_not_writable: "cacheLockDir '%{dir}' is not a writable directory",
  lock_dir_symlink: "lock directory '%{dir}' is a symbolic link: give the directory it points to",
  lock_dir_foreign: "lock directory '%{dir}' is owned by uid %{owner}, not by this user (uid %{uid}) or root",
  lock_dir_shared:
    "lock directory '%{dir}' (mode %{mode}) is writable by %{who} without the sticky bit: others could replace its lock files (chmod 700 it)",
  lock_dir_missing: "lock directory '%{dir}' does not exist: create it first (mkdir -m 700)",

  // Lock backends (returned, never thrown).
  lock_key_undefined: 'cache key is not defined',
  lock_open_failed: 'cannot open %{path}: %{error}',
  lock_failed: 'cannot lock %{path}: %{error}',
  unlock_failed: 'cannot unlock %{path}: %{error}',
  redis_lock_failed: 'Redis lock %{key} failed: %{error}',
  redis_unlock_failed: 'Redis unlock %{key} failed: %{error}',
  redis_lock_lost: 'Redis lock %{key} was no longer held by this owner (its ttl ran out)',
  redis_expire_failed: 'Redis expire %{key} failed: %{error}',
  lock_key_invalid: 'cache key must be a string, not %{type}',
  lock_path_failed: 'cannot build the lock file path for key %{key}: %{error}',
  lock_guard_invalid: 'release or expire was given something that is not a guard of this lock',
  lock_ttl_invalid: 'lock ttl must be a positive number of seconds, not %{ttl}',
  lock_lost: 'lock %{key} was no longer held by this owner (its ttl ran out)',
  lock_backend_failed: 'the lock backend failed: %{error}',
  lock_expire_unsupported: 'this lock backend has no time to live to extend',
  option_lock_redis: '%{name} must be an ioredis client, a redis:// URL or a function returning a client, not %{value}',
  option_lock_ttl: '%{name} must be a positive number of seconds, not %{value}',
  option_lock_timeout_ms: '%{name} must be a positive number of milliseconds, not %{value}',
  option_lock_namespace: '%{name} must be a string, not %{value}',
  log_front_failed: 'the front could not give a learned answer (%{error}); Koa answers instead',
  front_scope_missing:
    'front() answers before every middleware, authentication included: name what it may answer with paths (path prefixes) or hosts',
  front_paths: 'front() option paths must be a non-empty array of path prefixes, each starting with /, not %{value}',
  front_hosts: 'front() option hosts must be a non-empty array of host names, without ports, not %{value}',
  front_max_bytes: 'front() option maxBytes must be a positive integer number of bytes, not %{value}',
  front_option_unknown: "unknown front() option '%{name}'",
  front_app: 'front() needs a Koa application, not %{value}',
  front_no_buffer: 'front() found no buffer() middleware in app.use(): mount buffer() directly on the application',
  front_many_buffers:
    'front() found %{count} buffer() middlewares in app.use(): name the one whose cache it answers from with the buffer option',
  front_no_cache: 'front() answers cache hits, and this buffer() middleware has no cache: set its cache option',
  lock_option_unknown: "unknown Lock option '%{name}'",
  lock_option_number: 'Lock option %{name} must be a finite number of seconds, not %{value}',
  lock_option_negative: 'Lock option %{name} must not be negative, not %{value}',
  lock_option_positive: 'Lock option %{name} must be greater than 0, not %{value}',
  lock_option_ratio: 'Lock option ratio must be at least 1, not %{value}',
  lock_timeout_exceeds_exptime: 'Lock option timeout (%{timeout} s) may not exceed exptime (%{exptime} s)',
  cli_lock_busy: "'%{key}' is locked by another process",
  cli_lock_busy_waited: "'%{key}' is still locked by another process after waiting %{wait} s",
  cli_lock_waiting: "'%{key}' is locked by another process; waiting up to %{wait} s",
  cli_lock_taken: "took the lock '%{key}' after waiting %{elapsed} s",
  cli_lock_unavailable: 'cannot take the lock %{key}: %{error}',
  cli_command_failed: 'cannot run %{command}: %{error}',
  cli_expire_failed: 'cannot extend the lock %{key}: %{error}',
  cli_unlock_failed: 'releasing the lock %{key} failed: %{error}',

  // The client-facing 503 text.
  retry_later: 'This page is taking too long to build. Please try again in a moment.\n',
  retry_later_failed: 'This page could not be built. Please try again in a moment.\n',

  // Log lines.
  log_cache_hit: 'cache hit %{key}',
  log_cache_get_failed: 'cache get %{key} failed: %{error}',
  log_cache_set_failed: 'cache set %{key} failed: %{error}',
  log_cache_delete_failed: 'cache delete %{key} failed: %{error}',
  log_cache_store_refused: 'the cache store cannot keep entries: %{problem}; requests bypass it',
  log_cache_probe_failed: 'the cache store failed its start-up probe: %{problem}; it is used anyway',
  log_cache_open_failed: 'cannot open the cache %{cache}: %{error}; requests bypass it',
  log_override_refused:
    '%{where}: ignored %{name} (%{value}) for this response, the configured value applies: %{problem}',
  log_override_vary_by:
    '%{where}: varyBy (%{value}) is not a list of header names, so this request bypasses the cache: %{problem}',
  log_override_unreadable: '%{where} could not be read, so the configured options apply to this response: %{problem}',
  log_cache_key_failed: 'the cacheKey function failed, so this request bypasses the cache: %{error}',
  log_stale_entry: 'cache entry %{key} predates the application or a template; rebuilding',
  log_cache_entry_damaged: 'cache entry %{key} is damaged (%{problem}); removed it, rebuilding',
  log_building: 'building %{key}',
  log_cache_stale: 'cache entry %{key} is stale; answered it and refreshing in the background',
  log_cache_revalidated:
    'cache entry %{key} revalidated: the action answered its validators with 304, so it was renewed, not rendered again',
  log_revalidating: 'refreshing %{key} in the background',
  log_revalidate_failed: 'background refresh of %{key} failed: %{error}',
  log_stale_if_error: 'the build of %{key} failed (%{detail}); answered its stale entry',
  log_waiting: 'waiting for the request building %{key} in this process',
  log_waiting_worker: 'waiting for another process building %{key}',
  log_lock_failed: 'lock for %{key} failed, building with a per-process flight: %{error}',
  log_wait_lock_failed: 'lock for %{key} failed while waiting for another process: %{error}',
  log_unlock_failed: 'releasing the lock for %{key} failed: %{error}',
  log_gave_up: 'gave up waiting for %{key} (%{detail}); answered 503',
  log_pass: 'the build of %{key} could not be stored (%{detail}); this request runs the action',
  log_hit_for_miss: '%{key} is remembered as not storable (%{detail}); this request runs the action without waiting',
  log_finish_waiter_failed: 'answering a request waiting for %{key} failed: %{error}',
  log_not_stored: 'not storing %{key}: %{reason}',
  log_invalidated: 'a successful %{method} invalidated %{count} URL(s) of %{url}',
  log_invalidate_failed: 'invalidating after a write to %{url} failed: %{error}',
  log_cache_tag_invalid: 'not storing %{key}: %{tag} is not a cache tag (1 to 256 visible ASCII characters, no comma)',
  log_skipped: 'left alone: %{reason}',
  log_coding: 'coding %{coding} for %{size} bytes',
  log_identity: 'sending %{size} bytes uncompressed: %{reason}',
  log_compressed: 'compressed %{size} bytes to %{compressedSize} with %{coding} level %{level} (%{mode})',
  log_not_modified: '304 Not Modified (%{reason})',
  log_dictionary_offered: 'offered %{size} bytes as a dictionary for %{match} (SHA-256 %{hash})',
  log_dictionary_refused: 'not offered as a dictionary: %{reason}',
  log_dictionary_coded: 'dcz with dictionary %{hash}: %{size} bytes to %{compressedSize}',
  log_dictionary_unused: 'no dictionary coding: %{reason}',
  log_stream_coding: 'compressing a stream body with %{coding}',
  log_stream_identity: 'sending a stream body uncompressed: %{reason}',
  log_stream_failed: 'a stream body failed; its response was cut short: %{error}',
  log_upgrade_queued:
    'queued the upgrade of %{size} bytes to %{coding} level %{level} (%{pending} waiting or under way)',
  log_upgraded:
    'recompressed %{size} bytes to %{compressedSize} with %{coding} level %{level} off the request path (cold: %{coldSize}; memo now %{memoSize} bytes)',
  log_upgrade_failed: 'recompressing %{size} bytes with %{coding} level %{level} failed; the cold bytes stay: %{error}',
  log_minifier_missing: 'optimiseContent 2 needs the optional package %{name}; minifying inline CSS/JS is skipped',
  log_minify_failed: 'minifying an inline %{kind} block failed; left as it was: %{error}',
  log_encoding_unavailable: 'encoding %{name} is not available here and is not offered',
  log_mtime_scan_failed: 'scanning %{path} for modification times failed: %{error}',
  log_mtime_scan_bounded:
    'the templatePaths scan stopped at %{bound}; Last-Modified and the cache use the newest modification time it saw (narrow templatePaths, or set templateMtimeCache)',
  log_mtime_cache_failed: 'templateMtimeCache %{op} failed: %{error}',
} as const;

/** A key of the built-in catalog. */
export type MessageKey = keyof typeof defaultMessages;

const pluralRules = new Map<string, Intl.PluralRules>();

function pluralCategory(locale: string, count: number): Intl.LDMLPluralRule {
  let rules = pluralRules.get(locale);
  if (!rules) {
    rules = new Intl.PluralRules(locale);
    pluralRules.set(locale, rules);
  }
  return rules.select(count);
}

function pickVariant(variants: Record<string, unknown>, args: MessageArgs, locale: string): unknown {
  if (typeof args.gender === 'string' && typeof variants[args.gender] === 'string') return variants[args.gender];
  if (typeof args.count === 'number') {
    const category = pluralCategory(locale, args.count);
    // An exact `=0`/`zero` variant reads naturally in English, where PluralRules never answers `zero`.
    if (args.count === 0 && typeof variants.zero === 'string') return variants.zero;
    if (typeof variants[category] === 'string') return variants[category];
  }
  return variants.other;
}

function fill(text: string, args: MessageArgs): string {
  return text.replace(/%\{(\w+)\}/g, (whole, name: string) =>
    Object.prototype.hasOwnProperty.call(args, name) ? String(args[name]) : whole,
  );
}

/**
 * A catalog with overrides applied.
 *
 * @example
 * const messages = new Messages({ retry_later: 'Bitte gleich noch einmal versuchen.\n' });
 * messages.text('lock_failed', { path: '/run/x.lock', error: 'EIO' });
 */
export class Messages {
  readonly #overrides: MessageOverrides;
  readonly #locale: string;

  /**
   * @param overrides - texts by key; an override of `undefined` makes the key itself the text,
   *   as in the Perl original (leave a key out to keep the built-in text).
   * @param locale - the locale whose plural rules pick a `count` variant.
   * @defaultValue locale `'en'`
   */
  constructor(overrides: MessageOverrides = {}, locale = 'en') {
    this.#overrides = overrides;
    this.#locale = locale;
  }

  /**
   * The text of `key` with `%{name}` placeholders filled from `args`; the key
   * itself when it is unknown. A placeholder with no argument stays as written.
   */
  text(key: MessageKey | (string & {}), args: MessageArgs = {}): string {
    let source: unknown;
    if (Object.prototype.hasOwnProperty.call(this.#overrides, key)) {
      source = this.#overrides[key];
      if (source === undefined || source === null) return key;
    } else {
      source = (defaultMessages as Record<string, string>)[key];
      if (source === undefined) return key;
    }
    if (typeof source === 'object') source = pickVariant(source as Record<string, unknown>, args, this.#locale);
    return typeof source === 'string' ? fill(source, args) : key;
  }
}

/** The catalog with no overrides. */
export const builtinMessages = new Messages();

/** True when `value` can be a `messages` option: a plain object of strings or variant objects. */
export function isMessageOverrides(value: unknown): value is MessageOverrides {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return false;
  return Object.values(value).every(
    (v) =>
      v === undefined ||
      typeof v === 'string' ||
      (v !== null &&
        typeof v === 'object' &&
        !Array.isArray(v) &&
        Object.values(v).every((s) => typeof s === 'string')),
  );
}
