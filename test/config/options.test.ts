/**
 * Option validation at buffer() time: every option-validation
 * message of the catalog, the ASCII-sorted,
 * first-problem-only order, unknown names at their place, cross-option checks
 * last, and which options accept `undefined`.
 */
import test from 'ava';
import { BufferOptionError } from '../../src/base/errors.ts';
import { optionProblem as problem } from '../helpers/caught.ts';
import { bufferSection } from '../../src/config/section.ts';
import { RedisLock } from '../../src/locks/redis-lock.ts';

const lock = { acquire: () => [{}, undefined], release: () => [true, undefined] };

// One bad value per register row: [row key, options, text the message must contain].
const rows: Array<[string, unknown, string]> = [
  ['options_not_hash', 'optimiseContent=1', 'options must be an object'],
  ['options_not_hash', [], 'options must be an object'],
  ['options_not_hash', null, 'options must be an object'],
  ['options_not_hash', new Map(), 'options must be an object'],
  ['unknown_option', { optimizeContent: 1 }, 'unknown option optimizeContent; did you mean optimiseContent?'],
  ['option_flag', { compressContent: 'yes' }, 'compressContent must be a true or false value'],
  ['option_flag', { rewriteLinks: {} }, 'rewriteLinks must be a true or false value'],
  ['option_flag', { generateEtag: 2 }, 'generateEtag must be a true or false value'],
  ['option_flag', { generate304: [] }, 'generate304 must be a true or false value'],
  ['option_flag', { trustLastModified: 'false' }, 'trustLastModified must be a true or false value'],
  ['option_flag', { cacheSingleFlight: () => true }, 'cacheSingleFlight must be a true or false value'],
  ['option_optimise_content', { optimiseContent: 3 }, 'optimiseContent must be 0, 1 or 2'],
  ['option_optimise_content', { optimiseContent: true }, 'optimiseContent must be 0, 1 or 2'],
  ['option_optimise_content', { optimiseContent: 1.5 }, 'optimiseContent must be 0, 1 or 2'],
  ['option_last_modified', { lastModified: 'not a date' }, 'lastModified must be'],
  ['option_last_modified', { lastModified: {} }, 'lastModified must be'],
  ['option_last_modified', { lastModified: -5 }, 'lastModified must be'],
  ['option_min_compress_size', { minCompressSize: -1 }, 'minCompressSize must be a non-negative integer'],
  ['option_min_compress_size', { minCompressSize: 1.5 }, 'minCompressSize must be a non-negative integer'],
  ['option_min_compress_size', { minCompressSize: 'lots' }, 'minCompressSize must be a non-negative integer'],
  ['option_min_compress_size', { minCompressSize: '1e3' }, "or a size such as '1kb'"],
  ['option_min_compress_size', { minCompressSize: '-1kb' }, "or a size such as '1kb'"],
  ['option_encodings', { encodings: 'br' }, 'encodings must be an array'],
  ['option_encodings', { encodings: ['br', 5] }, 'encodings must be an array'],
  ['unknown_encoding', { encodings: ['br', 'compress'] }, "unknown encoding 'compress'"],
  ['option_compression_levels', { compressionLevels: { br: 12 } }, 'compressionLevels must be'],
  ['option_compression_levels', { compressionLevels: { deflate: 10 } }, 'compressionLevels must be'],
  ['option_compression_levels', { compressionLevels: { compress: 1 } }, 'compressionLevels must be'],
  ['option_compressible_types', { compressibleTypes: 'text/html' }, 'compressibleTypes must be a function'],
  ['option_compressible_types', { compressibleTypes: [42] }, 'or an array of media types'],
  ['option_compressible_types', { compressibleTypes: undefined }, 'compressibleTypes must be'],
  ['option_excluded_types', { excludedTypes: /event-stream/ }, 'excludedTypes must be an array'],
  ['option_vary_by', { varyBy: 'cookie' }, 'varyBy must be an array of header names'],
  ['option_vary_by', { varyBy: ['cookie', ''] }, 'varyBy must be an array of header names'],
  ['option_vary_by', { varyBy: ['accept language'] }, 'varyBy must be an array of header names'],
  [
    'option_cache_ignore_cookies',
    { cacheIgnoreCookies: ['_ga', 'a b'] },
    "cacheIgnoreCookies must be 'analytics' or an array of cookie names",
  ],
  ['option_cache_key', { cacheKey: 42 }, 'cacheKey must be a string or a function'],
  ['option_cache', { cache: { get() {}, set() {} } }, 'cache must be true, a store with get(), set() and delete()'],
  ['option_cache', { cache: 'memcached://x' }, 'cache must be true'],
  ['option_cache', { cache: 'sqlite:' }, 'cache must be true'],
  ['option_cache_duration', { cacheDuration: 'ten minutes' }, 'cacheDuration must be a duration'],
  ['option_cache_duration', { cacheDuration: 0 }, 'cacheDuration must be a duration'],
  ['option_cache_max_size', { cacheMaxSize: 0 }, 'cacheMaxSize must be a positive integer'],
  ['option_cache_wait_failure', { cacheWaitFailure: 'wait' }, "cacheWaitFailure must be 'retry-later' or 'run'"],
  ['option_template_paths', { templatePaths: 'views' }, 'templatePaths must be an array'],
  [
    'option_template_mtime_cache',
    { templateMtimeCache: { get() {} } },
    'templateMtimeCache must be an object with get() and set()',
  ],
  [
    'option_template_mtime_cache_duration',
    { templateMtimeCacheDuration: 'soon' },
    'templateMtimeCacheDuration must be a duration',
  ],
  ['option_cache_lock_timeout', { cacheLockTimeout: 0 }, 'cacheLockTimeout must be a positive number of seconds'],
  ['option_cache_lock_timeout', { cacheLockTimeout: 3_000_000 }, 'at most 2147483 (24.8 days)'],
  ['option_cache_store_timeout', { cacheStoreTimeout: 2_147_484 }, 'at most 2147483 (24.8 days)'],
  ['option_cache_lock_timeout', { cacheLockTimeout: -1 }, 'cacheLockTimeout must be a positive number of seconds'],
  ['option_cache_lock_timeout', { cacheLockTimeout: '10' }, 'cacheLockTimeout must be a positive number of seconds'],
  ['option_cache_lock', { cacheLock: { acquire() {} } }, 'cacheLock must be an object with acquire() and release()'],
  ['option_cache_lock_dir', { cacheLockDir: '' }, 'cacheLockDir must be a directory path'],
  ['option_cache_lock_dir', { cacheLockDir: 7 }, 'cacheLockDir must be a directory path'],
  [
    'lock_options_combined',
    { cacheLock: lock, cacheLockDir: '/tmp/kb-locks' },
    'cacheLock and cacheLockDir cannot be combined',
  ],
  [
    'lock_ttl_too_short',
    { cacheLock: { ...lock, ttl: 5 }, cacheLockTimeout: 5 },
    "the cacheLock's ttl (5 s) must be longer than cacheLockTimeout (5 s)",
  ],
  ['option_memo_max_size', { memoMaxSize: -1 }, 'memoMaxSize must be a non-negative integer'],
  ['option_logger', { logger: console.log }, 'logger must be an object with debug(), info(), warn() and error()'],
  ['option_messages', { messages: { retry_later: 42 } }, 'messages must be an object of texts by message key'],
  ['option_messages', { messages: 'de' }, 'messages must be an object of texts by message key'],
];

for (const [key, options, text] of rows) {
  test(`${key}: ${JSON.stringify(options) ?? String(options)} is refused with its key and a koa-buffer: message`, (t) => {
    const error = problem(options);
    t.truthy(error, 'buffer() throws a BufferOptionError');
    t.is(error!.key, key, 'the key names the problem');
    t.true(error!.message.startsWith('koa-buffer: '), 'the message starts with koa-buffer: ');
    t.true(error!.message.includes(text), `the message says "${text}": ${error!.message}`);
    t.is(error!.name, 'BufferOptionError');
  });
}

test('only the first problem in ASCII order of option names is reported', (t) => {
  t.is(problem({ encodings: 5, cache: 5 })?.key, 'option_cache', 'cache sorts before encodings');
  t.is(
    problem({ generateEtag: 'x', generate304: 'x' })?.message,
    'koa-buffer: generate304 must be a true or false value, not "x"',
    "'3' sorts before 'E'",
  );
  t.is(
    problem({ compressionLevels: { br: 99 }, compressibleTypes: 5, compressContent: 'x' })?.key,
    'option_flag',
    'compressContent < compressibleTypes < compressionLevels',
  );
  t.is(problem({ compressionLevels: { br: 99 }, compressibleTypes: 5 })?.key, 'option_compressible_types');
  t.is(
    problem({ cacheLockTimeout: -1, cacheLockDir: '', cacheLock: 5 })?.key,
    'option_cache_lock',
    'cacheLock < cacheLockDir < cacheLockTimeout',
  );
  t.is(problem({ varyBy: 5, optimiseContent: 9, minCompressSize: -1 })?.key, 'option_min_compress_size');
});

test('an unknown option is reported at its place in the sorted order', (t) => {
  t.is(problem({ zoom: 1, cache: 5 })?.key, 'option_cache', 'zoom sorts after cache');
  t.is(
    problem({ aardvark: 1, cache: 5 })?.message,
    'koa-buffer: unknown option aardvark',
    'aardvark sorts before cache',
  );
  t.is(problem({ cacheX: 1, cacheDuration: 'bad' })?.key, 'option_cache_duration', "'D' sorts before 'X'");
  t.is(problem({ Cache: 1, cache: 5 })?.key, 'unknown_option', 'upper case sorts before lower case in ASCII');
});

test('the checks across options come after every single-option check', (t) => {
  t.is(
    problem({ cacheLock: lock, cacheLockDir: '/tmp/x', varyBy: 'cookie' })?.key,
    'option_vary_by',
    'varyBy is checked before the lock combination',
  );
  t.is(
    problem({ encodings: ['compress'], varyBy: 5 })?.key,
    'option_vary_by',
    'an unknown encoding is a cross-option check',
  );
  t.is(
    problem({ encodings: ['compress'], cacheLock: lock, cacheLockDir: '/tmp/x' })?.key,
    'lock_options_combined',
    'the lock combination comes before unknown encodings',
  );
});

test('undefined is refused for encodings, compressibleTypes, excludedTypes, varyBy and minCompressSize', (t) => {
  for (const [name, key] of [
    ['encodings', 'option_encodings'],
    ['compressibleTypes', 'option_compressible_types'],
    ['excludedTypes', 'option_excluded_types'],
    ['varyBy', 'option_vary_by'],
    ['minCompressSize', 'option_min_compress_size'],
  ]) {
    t.is(problem({ [name!]: undefined })?.key, key, `${name} = undefined is refused`);
  }
});

test('undefined is accepted for every other option', (t) => {
  const others = [
    'cache',
    'cacheDuration',
    'cacheIgnoreCookies',
    'cacheKey',
    'cacheLock',
    'cacheLockDir',
    'cacheLockTimeout',
    'cacheMaxSize',
    'cacheSingleFlight',
    'cacheWaitFailure',
    'compressContent',
    'compressionLevels',
    'generate304',
    'generateEtag',
    'lastModified',
    'lastModifiedTypes',
    'logger',
    'memoMaxSize',
    'messages',
    'optimiseContent',
    'rewriteLinks',
    'templateMtimeCache',
    'templateMtimeCacheDuration',
    'templatePaths',
    'trustLastModified',
  ];
  for (const name of others) t.is(problem({ [name]: undefined }), undefined, `${name} = undefined is accepted`);
  t.is(problem(undefined), undefined, 'no options at all is fine');
  t.is(problem({}), undefined, 'an empty object is fine');
});

test('every documented form of a valid value is accepted', (t) => {
  const valid: unknown[] = [
    {
      optimiseContent: 2,
      rewriteLinks: 0,
      compressContent: 1,
      generateEtag: false,
      generate304: true,
      trustLastModified: 1,
    },
    { lastModified: 0 },
    { lastModified: 1 },
    { lastModified: false },
    { lastModified: 1_700_000_000 },
    { lastModified: 'Sun, 06 Nov 1994 08:49:37 GMT' },
    { lastModified: () => 0 },
    { lastModified: new Date() },
    { encodings: ['x-gzip', 'br', 'zstd'] },
    { encodings: [] },
    { compressionLevels: { br: 11, zstd: 22, gzip: 0, 'x-gzip': 1 } },
    { compressibleTypes: ['text/html', /^application\//] },
    { excludedTypes: [] },
    { varyBy: [] },
    { varyBy: ['Accept-Language', 'cookie'] },
    { cacheIgnoreCookies: 'analytics' },
    { cacheIgnoreCookies: ['_ga', '_ga_*'] },
    { cache: true },
    { cache: new Map() }, // an object that keeps nothing is refused at start-up (test/cache/cache-stores.test.ts)
    { cache: 'sqlite:/tmp/x.db' },
    { cache: 'redis://127.0.0.1:6379' },
    { cache: 'rediss://r.example:6380/0' },
    { cacheDuration: '10 minutes' },
    { cacheDuration: 30 },
    { cacheKey: '' },
    { cacheKey: () => 'k' },
    { cacheLockTimeout: 0.5 },
    { cacheLock: lock },
    { cacheLock: { ...lock, ttl: 60 } },
    { cacheLockDir: '/tmp/kb-locks' },
    { cacheMaxSize: 1 },
    { cacheWaitFailure: 'run' },
    { templatePaths: ['views', 'layouts/main.html'] },
    { templateMtimeCache: new Map() },
    { templateMtimeCacheDuration: '1 minute' },
    { memoMaxSize: 0 },
    { minCompressSize: 0 },
    { messages: { retry_later: 'later', waiting: { one: 'x', other: 'y' } } },
    { logger: { debug() {}, info() {}, warn() {}, error() {} } },
    Object.create(null),
  ];
  for (const options of valid) t.is(problem(options)?.message, undefined, `${JSON.stringify(options)} is accepted`);
});

test('the messages option rewords the errors, also those of options sorted before it', (t) => {
  const error = problem({ cache: 5, messages: { option_cache: 'Der Cache taugt nichts 🙁' } });
  t.is(error?.message, 'koa-buffer: Der Cache taugt nichts 🙁');
  t.is(error?.key, 'option_cache', 'the key stays the catalog key');
});

test('bufferSection accepts only the four declarable options', (t) => {
  t.notThrows(() =>
    bufferSection({ compressContent: false, optimiseContent: 2, rewriteLinks: 0, trustLastModified: 1 }),
  );
  t.notThrows(() => bufferSection({ optimiseContent: undefined }), 'undefined means not declared');
  for (const name of ['generateEtag', 'generate304', 'cache', 'encodings', 'lastModified']) {
    const error = t.throws(() => bufferSection({ [name]: true } as never), { instanceOf: BufferOptionError });
    t.is(error?.key, 'unknown_option', `${name} is not declarable`);
    t.is(error?.message, `koa-buffer: unknown option ${name}`);
  }
  t.is(
    t.throws(() => bufferSection({ optimiseContent: 5 as never }))?.message,
    'koa-buffer: optimiseContent must be 0, 1 or 2, not 5',
  );
  t.is((t.throws(() => bufferSection({ compressContent: 'no' as never })) as BufferOptionError).key, 'option_flag');
  t.is((t.throws(() => bufferSection('x' as never)) as BufferOptionError).key, 'options_not_hash');
});

test('an option error names the option and the value it got, shortened, and never a password', (t) => {
  t.is(
    problem({ cacheDuration: 'ten minutes' })?.message,
    'koa-buffer: cacheDuration must be a duration (seconds, or e.g. "10 minutes"), not "ten minutes"',
  );
  t.is(
    problem({ compressionLevels: { br: 12 } })?.message,
    'koa-buffer: compressionLevels must be an object of levels by coding (br 0–11, zstd 1–22, gzip 0–9, deflate 0–9), not { br: 12 }',
  );
  t.is(
    problem({ encodings: ['br', 'lzma'] })?.message,
    'koa-buffer: unknown encoding \'lzma\' in encodings (["br", "lzma"])',
  );
  const cache = problem({ cache: 'memcached://admin:hunter2@cache.internal:11211' })!.message;
  t.true(cache.endsWith(', not "memcached://admin:***@cache.internal:11211"'), cache);
  const lock = t.throws(() => new RedisLock({ redis: 'http://:hunter2@cache.internal' as never }))!.message;
  t.true(lock.endsWith('not "http://:***@cache.internal"'), lock);
  const long = problem({ templatePaths: 'x'.repeat(500) })!.message;
  t.true(long.length < 200 && long.endsWith('…"'), long);
  t.is(problem('optimiseContent=1')?.message, 'koa-buffer: options must be an object, not "optimiseContent=1"');
});

test('an unknown option names the nearest known one when it is close enough to be a typo', (t) => {
  const said = (options: unknown): string | undefined => problem(options)?.message.replace(/^koa-buffer: /, '');
  t.is(said({ cacheDurration: 60 }), 'unknown option cacheDurration; did you mean cacheDuration?');
  t.is(said({ cachedureation: 60 }), 'unknown option cachedureation; did you mean cacheDuration?', 'any case');
  t.is(said({ Cache: true }), 'unknown option Cache; did you mean cache?');
  t.is(said({ cahce: true }), 'unknown option cahce; did you mean cache?', 'two letters swapped are one slip');
  t.is(said({ lastModifed: false }), 'unknown option lastModifed; did you mean lastModified?');
  t.is(said({ encoding: ['br'] }), 'unknown option encoding; did you mean encodings?');
  t.is(said({ 'cache-duration': 60 }), 'unknown option "cache-duration"; did you mean cacheDuration?');
  for (const far of ['maxAge', 'cacheTTL', 'etag', 'compress', 'x', 'threshold'])
    t.is(said({ [far]: 1 }), `unknown option ${far}`, `${far} is no typo of an option`);
  t.is(said({ 'a\nb': 1 }), 'unknown option "a\\nb"', 'a name holding a line break is quoted');
  t.is(said({ ['cacheDuration'.repeat(100)]: 1 })?.includes('did you mean'), false, 'a long name is not compared');
  t.is(problem({ cacheDurration: 60 })?.key, 'unknown_option');
  t.is(
    problem({ cacheDurration: 60, messages: { unknown_option_hint: ' (meinten Sie %{suggestion}?)' } })?.message,
    'koa-buffer: unknown option cacheDurration (meinten Sie cacheDuration?)',
    'the hint is worded by the messages option',
  );
});

test('bufferSection names the nearest declarable option', (t) => {
  const error = t.throws(() => bufferSection({ optimizeContent: 1 } as never), { instanceOf: BufferOptionError });
  t.is(error?.key, 'unknown_option');
  t.is(error?.message, 'koa-buffer: unknown option optimizeContent; did you mean optimiseContent?');
  t.is(
    t.throws(() => bufferSection({ cacheDurration: 1 } as never))?.message,
    'koa-buffer: unknown option cacheDurration',
    'cacheDuration cannot be declared by a section, so it is not offered',
  );
});

const durationOptions = [
  'cacheDuration',
  'cacheHitForMiss',
  'cacheStaleIfError',
  'cacheStaleWhileRevalidate',
  'templateMtimeCacheDuration',
];

test('a bare-number duration that reads like milliseconds is refused, saying what it would mean', (t) => {
  t.is(
    problem({ cacheDuration: 60000 })?.message,
    "koa-buffer: cacheDuration: 60000 is seconds (16.7 hours) and reads like milliseconds; durations are seconds: write '1 minute' if you meant 60000 ms, or a string such as '17 hours' if 16.7 hours is what you meant",
  );
  t.is(
    problem({ cacheStaleIfError: 86_400_000 })?.message,
    "koa-buffer: cacheStaleIfError: 86400000 is seconds (2.7 years) and reads like milliseconds; durations are seconds: write '1 day' if you meant 86400000 ms, or a string such as '1000 days' if 2.7 years is what you meant",
  );
  for (const name of durationOptions) {
    for (const value of [604_801, 700_000, 3_600_000, 10_000, 60_000, 120_000, '60000', ' 90000 ', 1e20]) {
      const error = problem({ [name]: value });
      t.is(error?.key, 'option_duration_unit', `${name}: ${JSON.stringify(value)} is refused`);
      t.true(error?.message.startsWith(`koa-buffer: ${name}: `), error?.message);
    }
    // Seconds as people write them, a week at most, and strings with a unit at any length.
    for (const value of [1, 60, 600, 3600, 5000, 7200, 86_400, 172_800, 604_800, 9999, 10_001, '604800', '30 days'])
      t.is(problem({ [name]: value }), undefined, `${name}: ${JSON.stringify(value)} is accepted`);
    for (const value of ['1000 weeks', '60000 seconds', '3600000 ms', `${'9'.repeat(20)} seconds`])
      t.is(problem({ [name]: value }), undefined, `${name}: ${value} is accepted: it names its unit`);
  }
});

test('a duration that reads like milliseconds keeps its place in ASCII order and is worded by messages', (t) => {
  t.is(problem({ cacheDuration: 60000, cache: 5 })?.key, 'option_cache', 'cache sorts before cacheDuration');
  t.is(problem({ cacheDuration: 60000, cacheHitForMiss: 'soon' })?.key, 'option_duration_unit');
  t.is(problem({ cacheHitForMiss: 60000, cacheDuration: 'soon' })?.key, 'option_cache_duration');
  t.is(problem({ templateMtimeCacheDuration: 60000, cacheLock: 5 })?.key, 'option_cache_lock');
  t.is(
    problem({ cacheDuration: 60000, messages: { option_duration_unit: '%{name}=%{value}: ms? (%{ifMilliseconds})' } })
      ?.message,
    'koa-buffer: cacheDuration=60000: ms? (1 minute)',
  );
});

test('a dictionary ttl that reads like milliseconds is refused too', (t) => {
  const error = problem({ dictionaries: [{ match: '/a', ttl: 2_592_000_000 }] });
  t.is(error?.key, 'option_dictionaries');
  t.true(error?.message.includes('dictionaries[0].ttl: 2592000000 is seconds (82.2 years)'), error?.message);
  t.true(error?.message.includes("write '30 days' if you meant 2592000000 ms"), error?.message);
  t.is(problem({ dictionaries: [{ match: '/a', ttl: '30 days' }] }), undefined);
  t.is(problem({ dictionaries: [{ match: '/a', ttl: 86_400 }] }), undefined);
});
