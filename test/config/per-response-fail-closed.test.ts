/**
 * Per-response overrides fail closed. A value in `ctx.state.buffer` or in
 * `ctx.bufferIsCached({...})` that its option would refuse in `buffer()`
 * is ignored for that response with one log line, and the configured value
 * applies; a `varyBy` that is not a list of header names makes the request
 * bypass the cache (`detail=VARYBY`) rather than key on the URL alone. Plain
 * examples, then a fuzz of hostile overrides (every option name, values of
 * every type, nested objects, getters that throw, proxies) over real HTTP:
 * no answer is ever built for another visitor than the one it reaches (no
 * key is wider than the configured varyBy makes it), and none is a 500.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import test, { type ExecutionContext } from 'ava';
import fc from 'fast-check';
import type { Context } from 'koa';
import { decodeEntry } from '../../src/cache/entry.ts';
import { buffer } from '../../src/buffer.ts';
import type { BufferOptions } from '../../src/config/options.ts';
import { logOnFailure } from '../helpers/log-on-failure.ts';
import { recordingLogger, serve, type Served } from '../helpers/serve.ts';

type Log = ReturnType<typeof recordingLogger>;

/** A page that names the visitor it was built for: the session cookie and the language, as the app reads them. */
async function accountSite(
  t: ExecutionContext,
  options: BufferOptions,
  set: (ctx: Context) => Promise<boolean>,
): Promise<{ server: Served; log: Log; store: Map<string, unknown> }> {
  const log = recordingLogger();
  const map = new Map<string, unknown>();
  const store = {
    get: (key: string) => map.get(key),
    set: (key: string, value: unknown) => void map.set(key, value),
    delete: (key: string) => map.delete(key),
  };
  const server = await serve(t, [
    buffer({ cache: store, logger: log, ...options }),
    async (ctx) => {
      if (await set(ctx)) return;
      ctx.type = 'html';
      ctx.body = `<!doctype html>\n<p>\n  account|${ctx.path}|${ctx.cookies.get('session') ?? '-'}|${ctx.get('accept-language') || '-'}|\n</p>`;
    },
  ]);
  return { server, log, store: map };
}

const as = (server: Served, session: string, path = '/account') =>
  server.request(path, { headers: { cookie: `session=${session}` } });

for (const [what, override] of [
  ["a string ('cookie:session')", { varyBy: 'cookie:session' }],
  ['undefined', { varyBy: undefined }],
  ['a number (42)', { varyBy: 42 }],
  ['a list with a non-name in it', { varyBy: ['cookie:session', 7] }],
] as const)
  test(`a per-response varyBy that is ${what} bypasses the cache (detail=VARYBY), with one log line: Alice's page never reaches Bob`, async (t) => {
    const { server, log, store } = await accountSite(t, {}, (ctx) => {
      ctx.state.buffer = { ...override };
      return ctx.bufferIsCached();
    });
    const alice = await as(server, 'alice');
    t.regex(alice.body.toString(), /\|alice\|/);
    t.is(alice.headers['cache-status'], 'koa-buffer; fwd=bypass; detail=VARYBY');
    const bob = await as(server, 'bob');
    t.regex(bob.body.toString(), /\|bob\|/, "Bob gets his own page, not Alice's");
    t.is(bob.headers['cache-status'], 'koa-buffer; fwd=bypass; detail=VARYBY');
    t.is(store.size, 0, 'nothing was stored');
    t.is(log.count(/varyBy/), 2, `one line per request: ${JSON.stringify(log.lines)}`);
  });

test('a per-response varyBy that is a list of header names keys on it, as before', async (t) => {
  const { server } = await accountSite(t, {}, (ctx) => {
    ctx.state.buffer = { varyBy: ['cookie:session'] };
    return ctx.bufferIsCached();
  });
  await as(server, 'alice');
  const again = await server.request('/account', { headers: { cookie: 'session=alice; theme=dark' } });
  t.is(again.headers['x-cache'], 'HIT', 'other cookies do not count');
  t.regex((await as(server, 'bob')).body.toString(), /\|bob\|/);
});

test('per-response values buffer() would refuse are ignored with one log line each, and the configured values apply', async (t) => {
  const { server, log, store } = await accountSite(t, { cacheDuration: 60, optimiseContent: 1 }, (ctx) => {
    ctx.state.buffer = { cacheDuration: 'soon', optimiseContent: 7, cacheLockTimeout: -1, compressContent: 'no' };
    return ctx.bufferIsCached();
  });
  const response = await as(server, 'alice');
  t.is(response.headers['cache-status'], 'koa-buffer; fwd=miss; stored');
  t.is(response.body.toString(), '<!doctype html><p>\naccount|/account|alice|-|\n</p>', 'squashed, as configured');
  const entry = decodeEntry([...store.values()][0])!;
  t.is(entry.expires - entry.created, 60_000, 'the configured cacheDuration');
  for (const name of ['cacheDuration', 'optimiseContent', 'cacheLockTimeout', 'compressContent'])
    t.is(log.count(new RegExp(`ignored ${name}\\b`)), 1, `one line for ${name}: ${JSON.stringify(log.lines)}`);
});

test('a per-response duration that reads like milliseconds is ignored with its reason, and the configured one applies', async (t) => {
  const { server, log, store } = await accountSite(t, { cacheDuration: 60 }, async (ctx) => {
    if (ctx.path === '/call') return ctx.bufferIsCached({ cacheDuration: 60000 });
    ctx.state.buffer = { cacheDuration: 60000, cacheStaleWhileRevalidate: '3600000' };
    return ctx.bufferIsCached();
  });
  for (const path of ['/account', '/call']) {
    const response = await as(server, 'alice', path);
    t.is(response.headers['cache-status'], 'koa-buffer; fwd=miss; stored', path);
  }
  for (const value of store.values()) {
    const entry = decodeEntry(value)!;
    t.is(entry.expires - entry.created, 60_000, 'the configured cacheDuration');
    t.is(entry.staleWhileRevalidate ?? 0, 0, 'and no stale window');
  }
  const lines = log.lines.map((line) => line.message);
  t.true(
    lines.includes(
      "ctx.state.buffer: ignored cacheDuration (60000) for this response, the configured value applies: cacheDuration: 60000 is seconds (16.7 hours) and reads like milliseconds; durations are seconds: write '1 minute' if you meant 60000 ms, or a string such as '17 hours' if 16.7 hours is what you meant",
    ),
    JSON.stringify(lines),
  );
  t.is(log.count(/ctx\.state\.buffer: ignored cacheStaleWhileRevalidate \("3600000"\).*41\.7 days/), 1);
  t.is(log.count(/ctx\.bufferIsCached\(\): ignored cacheDuration \(60000\).*reads like milliseconds/), 1);
});

test('ctx.bufferIsCached() with overrides it cannot use answers, logs one line each, and the configured values apply', async (t) => {
  const answers: string[] = [];
  const { server, log, store } = await accountSite(t, { cacheDuration: 60 }, async (ctx) => {
    try {
      return await ctx.bufferIsCached({ cacheDuration: 'soon', cacheTags: 'a,b', varyBy: 'x' } as never);
    } catch (error) {
      answers.push(String(error));
      return false;
    }
  });
  const response = await as(server, 'alice');
  t.deepEqual(answers, [], 'it never rejects');
  t.is(response.headers['cache-status'], 'koa-buffer; fwd=miss; stored');
  const entry = decodeEntry([...store.values()][0])!;
  t.is(entry.expires - entry.created, 60_000, 'the configured cacheDuration');
  t.is(log.count(/ignored cacheDuration/), 1, JSON.stringify(log.lines));
  t.is(log.count(/ignored cacheTags/), 1);
  t.is(log.count(/varyBy/), 1);
});

test('an unknown per-response key is logged with the nearest option it may have meant', async (t) => {
  const { server, log } = await accountSite(t, {}, (ctx) => {
    ctx.state.buffer = { cacheDurration: 5, 'x\ny': 1, generateETag: false };
    return ctx.bufferIsCached();
  });
  t.is((await as(server, 'alice')).status, 200);
  const lines = log.lines.map((line) => line.message);
  t.true(
    lines.includes(
      'ctx.state.buffer: ignored cacheDurration (5) for this response, the configured value applies: unknown option cacheDurration; did you mean cacheDuration?',
    ),
    JSON.stringify(lines),
  );
  t.true(lines.some((line) => line.includes('unknown option generateETag; did you mean generateEtag?')));
  t.true(
    lines.some((line) => line.includes('ignored "x\\ny" (1)')),
    'a key with a line break is quoted',
  );
  t.false(
    lines.some((line) => line.includes('\n')),
    'no line holds a line break',
  );
});

test('a refused per-response value is shown in its log line without a password it holds', async (t) => {
  const { server, log } = await accountSite(t, {}, (ctx) => {
    ctx.state.buffer = { cache: 'memcached://admin:hunter2@cache.internal:11211' };
    return ctx.bufferIsCached();
  });
  t.is((await as(server, 'alice')).status, 200);
  const lines = log.lines.map((line) => line.message).filter((line) => line.includes('ignored cache '));
  t.is(lines.length, 1, JSON.stringify(log.lines));
  t.true(lines[0]!.includes('"memcached://admin:***@cache.internal:11211"'), lines[0]);
  t.false(JSON.stringify(log.lines).includes('hunter2'), 'the password is in no line');
});

test('overrides that throw when read are ignored: the page is served, never a 500', async (t) => {
  const throwing = new Proxy(
    {},
    {
      get: () => {
        throw new Error('read me not');
      },
      ownKeys: () => {
        throw new Error('list me not');
      },
    },
  );
  const { proxy: revoked, revoke } = Proxy.revocable({}, {});
  revoke();
  const overrides: Record<string, (ctx: Context) => void> = {
    'a proxy that throws': (ctx) => void (ctx.state.buffer = throwing),
    'a revoked proxy': (ctx) => void (ctx.state.buffer = revoked),
    'a getter on ctx.state that throws': (ctx) =>
      Object.defineProperty(ctx.state, 'buffer', {
        get: () => {
          throw new Error('no stash');
        },
      }),
    'a throwing getter for one option': (ctx) =>
      void (ctx.state.buffer = Object.defineProperty({}, 'compressContent', {
        enumerable: true,
        get: () => {
          throw new Error('no flag');
        },
      })),
    'a revoked proxy as a list': (ctx) => void (ctx.state.buffer = { encodings: revoked, varyBy: ['cookie'] }),
  };
  const { server, log } = await accountSite(t, {}, (ctx) => {
    overrides[ctx.query.how as string]!(ctx);
    return ctx.bufferIsCached();
  });
  for (const how of Object.keys(overrides)) {
    const response = await as(server, 'alice', `/account?how=${encodeURIComponent(how)}`);
    t.is(response.status, 200, how);
    t.regex(response.body.toString(), /\|alice\|/, how);
  }
  t.true(log.lines.length >= Object.keys(overrides).length, 'each is logged');
  const varyByThrows = await accountSite(t, {}, (ctx) => {
    ctx.state.buffer = Object.defineProperty({}, 'varyBy', {
      enumerable: true,
      get: () => {
        throw new Error('no list');
      },
    });
    return ctx.bufferIsCached();
  });
  const response = await as(varyByThrows.server, 'alice');
  t.is(response.status, 200);
  t.is(
    response.headers['cache-status'],
    'koa-buffer; fwd=bypass; detail=VARYBY',
    'a varyBy that cannot be read is no list',
  );
});

// --- the fuzz ---------------------------------------------------------------

const optionNames = [
  ...['adaptiveCompression', 'cache', 'cacheHosts', 'cacheMemoryBytes', 'cacheDuration', 'cacheStaleIfError'],
  ...['cacheStaleWhileRevalidate', 'cacheKey', 'cacheLock', 'cacheLockDir', 'cacheLockTimeout', 'cacheMaxSize'],
  ...['cacheRequestNoCache', 'cacheSingleFlight', 'cacheStoreTimeout', 'cacheTags', 'cacheTagHeader'],
  ...['cacheNearBytes', 'cacheSyncMs', 'cacheWaitFailure', 'compressContent', 'compressibleTypes'],
  ...['compressionLevels', 'defaultCacheControl', 'dictionaries', 'encodings', 'excludedTypes', 'generate304'],
  ...['generateEtag', 'lastModified', 'lastModifiedTypes', 'logger', 'memoMaxSize', 'messages', 'minCompressSize'],
  'optimiseContent',
  ...['rewriteLinks', 'templateMtimeCache', 'templateMtimeCacheDuration', 'templatePaths', 'trustLastModified'],
  'varyBy',
];

const configuredVaryBy = ['cookie:session', 'accept-language'];

/** A header name or `cookie:NAME`, as the test reads the rule (independently of the code under test). */
const isVaryEntry = (entry: unknown): boolean =>
  typeof entry === 'string' && /^(?:cookie:)?[!#$%&'*+.^_`|~0-9a-z-]+$/i.test(entry);

const boom = (): never => {
  throw new Error('hostile');
};

/**
 * A hostile object, made afresh for each request that uses it (a list that
 * changes after its first reading must meet the code under test first).
 */
class Hostile {
  constructor(
    readonly label: string,
    readonly make: () => unknown,
  ) {}
  [fc.toStringMethod](): string {
    return this.label;
  }
}

/** The override as the request gets it: hostile objects made, one level deep. */
function made(value: unknown): unknown {
  if (value instanceof Hostile) return value.make();
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return value;
  const out: Record<string, unknown> = {};
  for (const [name, inner] of Object.entries(value)) out[name] = inner instanceof Hostile ? inner.make() : inner;
  return out;
}

/** Proxies and objects that fight back: throwing traps and getters, revoked proxies, lists that change or never end. */
const hostileObjects: Hostile[] = [
  new Hostile('a revoked proxy', () => {
    const { proxy, revoke } = Proxy.revocable({}, {});
    revoke();
    return proxy;
  }),
  ...(['get', 'ownKeys', 'getOwnPropertyDescriptor', 'has', 'getPrototypeOf'] as const).flatMap((trap) => [
    new Hostile(`an object whose ${trap} throws`, () => new Proxy({ varyBy: 'cookie:session' }, { [trap]: boom })),
    new Hostile(`a list whose ${trap} throws`, () => new Proxy(['cookie:session'], { [trap]: boom })),
  ]),
  // Read once as the configured list and ever after as an empty one: only one reading may count.
  new Hostile('a list that empties after its first reading', () => {
    let reads = 0;
    return new Proxy([...configuredVaryBy], {
      get: (target, key, receiver) =>
        key === 'length' ? (reads++ === 0 ? target.length : 0) : Reflect.get(target, key, receiver),
    });
  }),
  new Hostile(
    'a list that never ends',
    () => new Proxy([], { get: (_, key) => (key === 'length' ? 2 ** 32 - 1 : 'accept-language') }),
  ),
  new Hostile('an object with a throwing getter', () =>
    Object.defineProperty({}, 'value', { enumerable: true, get: boom }),
  ),
  new Hostile('a null-prototype object', () => Object.create(null)),
];

/** Any value, near misses of the options, nested objects and hostile ones. */
function hostileValue(): fc.Arbitrary<unknown> {
  return fc.oneof(
    {
      arbitrary: fc.anything({
        withBoxedValues: true,
        withMap: true,
        withSet: true,
        withTypedArray: true,
        withSparseArray: true,
        withNullPrototype: true,
        withBigInt: true,
        withDate: true,
        maxDepth: 3,
      }),
      weight: 5,
    },
    {
      arbitrary: fc.constantFrom<unknown>(
        ...[0, 1, 2, 7, -1, 0.5, NaN, Infinity, 2 ** 53, '', '10 minutes', 'soon', '1kb', 'br', 'x-gzip', 'nope'],
        ...[
          undefined,
          null,
          true,
          false,
          [],
          ['br', 'lzma'],
          [/html/, 'text/x'],
          [1],
          {},
          { br: 12 },
          'cookie:session',
        ],
        ...[{ get: 1, set: 2, delete: 3 }, ['a,b'], ['cookie:session', 7], 'sqlite:', 'redis://127.0.0.1:1'],
      ),
      weight: 3,
    },
    { arbitrary: fc.constantFrom(...hostileObjects), weight: 2 },
    {
      arbitrary: fc.constantFrom<unknown>(
        boom,
        () => 42,
        () => undefined,
        () => '',
      ),
      weight: 1,
    },
  );
}

/**
 * A per-response override: an object of option names with hostile values
 * (or a hostile value in place of the object). Values that would be
 * honoured and could share a page more widely are left out: a varyBy that
 * is a list of header names and a cacheKey that names an entry are the
 * application's explicit choice to share, not a hostile value.
 */
const hostileOverride: fc.Arbitrary<unknown> = fc.oneof(
  {
    arbitrary: fc.dictionary(fc.constantFrom(...optionNames), hostileValue(), { maxKeys: 5 }).map((o) => {
      if (Array.isArray(o.varyBy) && (o.varyBy as unknown[]).every(isVaryEntry)) delete o.varyBy;
      if (typeof o.cacheKey === 'string' && o.cacheKey !== '') delete o.cacheKey;
      if (typeof o.cacheKey === 'function' && o.cacheKey !== boom) o.cacheKey = () => 42;
      return o;
    }),
    weight: 8,
  },
  { arbitrary: hostileValue(), weight: 1 },
  { arbitrary: fc.constantFrom(...hostileObjects), weight: 1 },
);

/** Where the override is put. */
const placement = fc.constantFrom('state', 'state', 'argument', 'both', 'after the lookup', 'getter');

test('hostile per-response overrides never widen the key beyond the configured varyBy, and never end in a 500 (fuzz over real HTTP, fixed seed)', async (t) => {
  const log = recordingLogger();
  let current: { override: unknown; where: string } = { override: undefined, where: 'state' };
  let unhandled = 0;
  const onUnhandled = (): void => void unhandled++;
  process.on('unhandledRejection', onUnhandled);
  t.teardown(() => process.off('unhandledRejection', onUnhandled));
  const middleware = buffer({
    cache: true,
    varyBy: configuredVaryBy,
    optimiseContent: 1,
    logger: log,
    cacheLockTimeout: 2,
  });
  // A per-response cache URL opens a store (a Redis client retrying a closed port): closed with the middleware.
  t.teardown(() => middleware.close());
  const server = await serve(t, [
    middleware,
    async (ctx) => {
      const where = current.where;
      const override = made(current.override);
      if (where === 'state' || where === 'both') ctx.state.buffer = override;
      if (where === 'getter') Object.defineProperty(ctx.state, 'buffer', { get: () => override, configurable: true });
      const cached = await (where === 'argument' || where === 'both'
        ? ctx.bufferIsCached(override as never)
        : ctx.bufferIsCached());
      if (where === 'after the lookup') ctx.state.buffer = override;
      if (cached) return;
      ctx.type = 'html';
      ctx.body = `<!doctype html><p>|${ctx.path}|${ctx.cookies.get('session') ?? '-'}|${ctx.get('accept-language') || '-'}|</p>`;
    },
  ]);
  const problems: string[] = [];
  const outcomes = new Map<string, number>();
  logOnFailure(t, () => `outcomes: ${JSON.stringify(Object.fromEntries(outcomes))}`);
  await fc.assert(
    fc.asyncProperty(
      hostileOverride,
      placement,
      fc.constantFrom('/a', '/b'),
      fc.constantFrom('alice', 'bob', 'carol', undefined),
      fc.constantFrom('en', 'fr'),
      fc.nat(2),
      async (override, where, path, session, language, analytics) => {
        current = { override, where };
        const headers: Record<string, string> = { 'accept-language': language };
        if (session !== undefined) headers.cookie = `session=${session}; _ga=${analytics}`;
        const response = await server.request(path, { headers });
        const outcome = `${response.status} ${response.headers['x-cache'] ?? ''} ${response.headers['cache-status']?.replace(/; ttl=.*/, '') ?? ''}`;
        outcomes.set(outcome, (outcomes.get(outcome) ?? 0) + 1);
        const expected = `|${path}|${session ?? '-'}|${language}|`;
        if (response.status !== 200)
          problems.push(`${response.status} for ${fc.stringify(override)} (${where}): ${response.body.toString()}`);
        else if (!response.body.toString().includes(expected))
          problems.push(
            `${outcome} for ${expected} showed ${response.body.toString()}, override ${fc.stringify(override)} (${where})`,
          );
      },
    ),
    { seed: 2024, numRuns: 1500 },
  );
  t.deepEqual(problems.slice(0, 5), [], 'every answer is 200 and built for its own visitor');
  t.is(unhandled, 0, 'no unhandled rejection');
  const hits = [...outcomes].filter(([o]) => o.includes(' HIT ')).reduce((n, [, c]) => n + c, 0);
  t.true(hits > 100, `entries were shared where the configured key allows (${hits} hits)`);
  t.true(
    [...outcomes.keys()].some((o) => o.includes('detail=VARYBY')),
    'some overrides made their request bypass the cache',
  );
  // Afterwards the cache serves and stores as configured.
  current = { override: undefined, where: 'state' };
  await server.request('/after', { headers: { cookie: 'session=dave' } });
  await sleep(1);
  const again = await server.request('/after', { headers: { cookie: 'session=dave' } });
  t.is(again.headers['x-cache'], 'HIT');
});
