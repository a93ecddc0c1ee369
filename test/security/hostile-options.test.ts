/**
 * Options and per-response values of the wrong type (issue 7). At startup a
 * bad option is an error that names it (BufferOptionError), never another
 * kind of throw; at run time a `ctx.state.buffer` value `buffer()` would
 * refuse is ignored for the response (test/config/per-response-fail-closed.test.ts
 * holds that none is a 500), so whatever it holds must end in an answer (a
 * 2xx, a 3xx, or a 5xx with a body) and leave the process, its locks and its
 * cache working. Random
 * values come from fast-check with fixed seeds.
 */
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import test, { type ExecutionContext } from 'ava';
import { BufferOptionError } from '../../src/base/errors.ts';
import { FileLock, Lock, MemoryLock } from '../../src/locks/index.ts';
import { buffer } from '../../src/buffer.ts';
import { bufferSection } from '../../src/config/section.ts';
import { logOnFailure } from '../helpers/log-on-failure.ts';
import { htmlPage, recordingLogger, serve } from '../helpers/serve.ts';

function tempDir(t: ExecutionContext): string {
  const dir = mkdtempSync(join(tmpdir(), 'kb-sec-options-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

const optionNames = [
  'compressContent',
  'optimiseContent',
  'rewriteLinks',
  'generateEtag',
  'generate304',
  'lastModified',
  'trustLastModified',
  'templatePaths',
  'templateMtimeCache',
  'templateMtimeCacheDuration',
  'lastModifiedTypes',
  'minCompressSize',
  'encodings',
  'compressionLevels',
  'compressibleTypes',
  'excludedTypes',
  'cache',
  'cacheDuration',
  'cacheKey',
  'cacheSingleFlight',
  'cacheLockTimeout',
  'cacheLock',
  'cacheLockDir',
  'varyBy',
  'cacheMaxSize',
  'cacheWaitFailure',
  'cacheStoreTimeout',
  'memoMaxSize',
  'messages',
  'logger',
];

/** Any value, plus the near misses that reach deeper checks than a wrong type does. */
const value = fc.oneof(
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
    }),
    weight: 6,
  },
  { arbitrary: fc.func(fc.anything()), weight: 1 },
  {
    arbitrary: fc.constantFrom(
      0,
      1,
      2,
      3,
      -1,
      0.5,
      NaN,
      Infinity,
      '',
      '10 minutes',
      'soon',
      'br',
      'x-gzip',
      'sqlite:',
      'redis://',
      [],
      ['br', 'lzma'],
      [/html/, 'text/x'],
      [1],
      {},
      { br: 12 },
      { get: 1, set: 2, delete: 3 },
    ),
    weight: 2,
  },
  {
    arbitrary: fc.array(fc.oneof(fc.string(), fc.integer(), fc.constant(undefined), fc.constant(null)), {
      maxLength: 4,
    }),
    weight: 1,
  },
);

/**
 * An options object: known names with random values, sometimes an unknown name.
 * A string cacheLockDir is confined to `dir` (buffer() creates the directory).
 */
function optionsIn(dir: string): fc.Arbitrary<Record<string, unknown>> {
  return fc
    .dictionary(
      fc.oneof({ arbitrary: fc.constantFrom(...optionNames), weight: 8 }, { arbitrary: fc.string(), weight: 1 }),
      value,
      { maxKeys: 6 },
    )
    .map((options) => {
      if (typeof options.cacheLockDir === 'string')
        options.cacheLockDir = join(dir, Buffer.from(options.cacheLockDir).toString('hex').slice(0, 40) || 'x');
      return options;
    });
}

/**
 * Runs `make` and describes what came out: 'ok', the error's key, a
 * TypeError or RangeError of koa-buffer's own (Lock words its option errors
 * so, as its TSDoc says), or an unexpected throw.
 */
function outcome(make: () => unknown, ok: (made: unknown) => boolean): string {
  try {
    const made = make();
    return ok(made) ? 'ok' : `returned ${typeof made}`;
  } catch (error) {
    if (error instanceof BufferOptionError && error.message.startsWith('koa-buffer: ')) return error.key;
    if ((error instanceof TypeError || error instanceof RangeError) && error.message.startsWith('koa-buffer: '))
      return error.name;
    return `threw ${(error as Error)?.name}: ${(error as Error)?.message}`;
  }
}

test('buffer() with random options returns a middleware or throws a BufferOptionError naming the problem, nothing else (property, fixed seed)', (t) => {
  const dir = tempDir(t);
  const seen = new Map<string, number>();
  fc.assert(
    fc.property(
      fc.oneof({ arbitrary: optionsIn(dir), weight: 9 }, { arbitrary: fc.anything(), weight: 1 }),
      (options) => {
        const result = outcome(
          () => buffer(options as never),
          (made) => typeof made === 'function',
        );
        seen.set(result, (seen.get(result) ?? 0) + 1);
        return result === 'ok' || (!result.startsWith('threw') && !result.startsWith('returned'));
      },
    ),
    { seed: 1234, numRuns: 3000 },
  );
  logOnFailure(t, () =>
    [...seen]
      .sort((a, b) => b[1] - a[1])
      .map(([what, n]) => `${n} ${what}`)
      .join(', '),
  );
  t.true((seen.get('ok') ?? 0) > 50, 'some random options were accepted');
  t.true(seen.size > 15, 'and many distinct problems were reported');
  t.true(
    readdirSync(dir).every((name) => /^[0-9a-f]*x?$/.test(name)),
    'no directory was made outside the confined one',
  );
});

test('bufferSection() and the lock constructors with random options return, or throw a BufferOptionError (or, for Lock, a TypeError or RangeError) naming the problem (property, fixed seed)', (t) => {
  const dir = tempDir(t);
  const makers: Array<[string, (options: unknown) => unknown, (made: unknown) => boolean]> = [
    ['bufferSection', (o) => bufferSection(o as never), (made) => typeof made === 'function'],
    ['MemoryLock', (o) => new MemoryLock(o as never), (made) => made instanceof MemoryLock],
    ['Lock', (o) => new Lock(new MemoryLock(), o as never), (made) => made instanceof Lock],
    ['FileLock', (o) => new FileLock(o as never), (made) => made instanceof FileLock],
  ];
  const lockNames = ['timeout', 'step', 'ratio', 'maxStep', 'exptime', 'messages', 'dir'];
  const options = fc
    .dictionary(fc.constantFrom(...optionNames.slice(0, 8), ...lockNames), value, { maxKeys: 4 })
    .map((o) => {
      if (typeof o.dir === 'string') o.dir = join(dir, Buffer.from(o.dir).toString('hex').slice(0, 40) || 'x');
      return o;
    });
  for (const [name, make, ok] of makers) {
    const unexpected: string[] = [];
    fc.assert(
      fc.property(fc.oneof({ arbitrary: options, weight: 9 }, { arbitrary: fc.anything(), weight: 1 }), (o) => {
        const result = outcome(() => make(o), ok);
        if (result.startsWith('threw') || result.startsWith('returned'))
          unexpected.push(`${result} for ${fc.stringify(o)}`);
      }),
      { seed: 99, numRuns: 800 },
    );
    t.deepEqual(unexpected.slice(0, 5), [], `${name}: only errors that name the problem`);
  }
});

test('random ctx.state.buffer values never crash a request: every answer is a 2xx, a 3xx or a 5xx with a body, and the cache and locks keep working (property, fixed seed)', async (t) => {
  const dir = tempDir(t);
  const log = recordingLogger();
  const page = htmlPage(4096, 9);
  const statuses = new Map<number, number>();
  const failures: string[] = [];
  let unhandled = 0;
  const onUnhandled = (): void => void unhandled++;
  process.on('unhandledRejection', onUnhandled);
  t.teardown(() => process.off('unhandledRejection', onUnhandled));
  let current: unknown;
  const server = await serve(t, [
    buffer({ cache: true, cacheLockDir: join(dir, 'locks'), optimiseContent: 1, logger: log, cacheLockTimeout: 2 }),
    async (ctx) => {
      ctx.state.buffer = current;
      const cached = await ctx.bufferIsCached();
      if (cached) return;
      if (ctx.path === '/json') ctx.body = { page: 'json', n: 1 };
      else {
        ctx.type = 'html';
        ctx.body = page;
      }
    },
  ]);
  // Per-response values: any value, or an object of known names with random values (a string cache is kept harmless).
  const stash = fc.oneof(
    { arbitrary: value, weight: 1 },
    {
      arbitrary: fc.dictionary(fc.constantFrom(...optionNames), value, { maxKeys: 5 }).map((o) => {
        if (typeof o.cache === 'string')
          o.cache = fc.sample(
            fc.constantFrom('sqlite::memory:', `sqlite:${join(dir, 'stash.sqlite')}`, 'redis://127.0.0.1:1', 'nope'),
            { seed: o.cache.length, numRuns: 1 },
          )[0];
        return o;
      }),
      weight: 4,
    },
  );
  // Objects that throw when read: ignored, logged; nothing else fails.
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
  const hostile = fc.constantFrom<unknown>(
    throwing,
    { compressContent: throwing },
    Object.defineProperty({}, 'cacheKey', {
      enumerable: true,
      get: () => {
        throw new Error('no key');
      },
    }),
    {
      cacheKey: () => {
        throw new Error('no key');
      },
    },
    { lastModified: () => () => 1 },
    {
      lastModified: () => {
        throw new Error('no date');
      },
    },
  );
  await fc.assert(
    fc.asyncProperty(
      fc.oneof({ arbitrary: stash, weight: 9 }, { arbitrary: hostile, weight: 1 }),
      fc.constantFrom('/page', '/json', '/page?x=1'),
      fc.constantFrom('br', 'gzip', 'identity'),
      async (value, path, coding) => {
        current = value;
        const response = await server.request(path, { headers: { 'accept-encoding': coding } });
        statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1);
        const fine =
          (response.status >= 200 && response.status < 400) || (response.status >= 500 && response.body.length > 0);
        if (!fine) failures.push(`${response.status} for ${fc.stringify(value)}`);
      },
    ),
    { seed: 4321, numRuns: 600 },
  );
  logOnFailure(t, `statuses: ${JSON.stringify(Object.fromEntries(statuses))}`);
  t.deepEqual(failures.slice(0, 5), [], 'every answer is a 2xx, a 3xx or a 5xx with a body');
  t.is(unhandled, 0, 'no unhandled rejection');
  // Afterwards ordinary requests are served (no flight was left open on the keys used), cached, and locks are free.
  current = undefined;
  for (const path of ['/page', '/json', '/page?x=1']) {
    const response = await server.request(path);
    t.is(response.status, 200, `${path} is answered, not left waiting for a flight that never ends`);
  }
  const first = await server.request('/after');
  t.is(first.status, 200);
  t.is((await server.request('/after')).headers['x-cache'], 'HIT');
  const lock = new FileLock({ dir: join(dir, 'locks') });
  const [guard] = lock.acquire('probe');
  t.truthy(guard);
  lock.release(guard);
});
