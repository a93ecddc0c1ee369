import test, { type ExecutionContext } from 'ava';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { MemoryStore } from '../../../src/cache/stores/memory.ts';
import { RedisStore } from '../../../src/cache/stores/redis.ts';
import { resolveStore } from '../../../src/cache/stores/resolve.ts';
import { SqliteStore } from '../../../src/cache/stores/sqlite.ts';
import type { CacheStore } from '../../../src/base/store.ts';
import { BufferOptionError } from '../../../src/base/errors.ts';
import { Messages } from '../../../src/base/messages.ts';
import { freePort } from '../../helpers/redis.ts';

function tempDir(t: ExecutionContext): string {
  const dir = mkdtempSync(join(tmpdir(), 'kb-resolve-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

function resolved(t: ExecutionContext, option: unknown): CacheStore | undefined {
  const store = resolveStore(option);
  t.teardown(() => store?.close?.());
  return store;
}

test('no cache: undefined, null and false give no store', (t) => {
  t.is(resolveStore(undefined), undefined);
  t.is(resolveStore(null), undefined);
  t.is(resolveStore(false), undefined);
});

test('cache: true is a 64 MiB in-memory LRU', (t) => {
  const store = resolved(t, true);
  t.true(store instanceof MemoryStore);
  t.is((store as MemoryStore).maxBytes, 64 * 1024 * 1024);
});

test("'sqlite:PATH' opens that file, a relative PATH from the working directory", (t) => {
  const dir = tempDir(t);
  const relativePath = relative(process.cwd(), join(dir, 'rel.sqlite'));
  const store = resolved(t, `sqlite:${relativePath}`);
  t.true(store instanceof SqliteStore);
  t.is((store as SqliteStore).path, join(dir, 'rel.sqlite'), 'the path is resolved against process.cwd()');
  store?.set('k', Buffer.from('v'));
  const check = new SqliteStore({ path: join(dir, 'rel.sqlite') });
  t.teardown(() => check.close());
  t.deepEqual(check.get('k'), Buffer.from('v'), 'the file at that path holds the entry');
});

test("Keyv's spellings 'sqlite://PATH' and 'sqlite:///ABSOLUTE' work too, and 'sqlite::memory:' is in memory", (t) => {
  const dir = tempDir(t);
  t.is((resolved(t, `sqlite://${join(dir, 'a.sqlite')}`) as SqliteStore).path, join(dir, 'a.sqlite'));
  t.is(
    (resolved(t, `sqlite://${relative(process.cwd(), join(dir, 'b.sqlite'))}`) as SqliteStore).path,
    join(dir, 'b.sqlite'),
  );
  t.is((resolved(t, 'sqlite::memory:') as SqliteStore).path, ':memory:');
});

test("'redis://…' and 'rediss://…' build a RedisStore", async (t) => {
  const port = await freePort();
  t.true(resolved(t, `redis://127.0.0.1:${port}/2`) instanceof RedisStore);
  t.true(resolved(t, `rediss://user:pass@127.0.0.1:${port}`) instanceof RedisStore);
  t.true(resolved(t, `REDIS://127.0.0.1:${port}`) instanceof RedisStore, 'the scheme is case-insensitive');
});

test('an object with get, set and delete is used as is: a Map, a store instance, a Keyv-shaped object', (t) => {
  const map = new Map();
  t.is(resolveStore(map), map);
  const memory = new MemoryStore();
  t.is(resolveStore(memory), memory);
  const keyvShaped = { get: async () => undefined, set: async () => true, delete: async () => true };
  t.is(resolveStore(keyvShaped), keyvShaped);
});

test('anything else is a BufferOptionError with key option_cache that does not echo the value', (t) => {
  const bad: unknown[] = [
    '',
    'memory',
    'sqlite:',
    'sqlite://',
    'sqlite:   ',
    'redis://',
    'redis:/x',
    'http://127.0.0.1',
    'memcached://x',
    'redis://user:secret@[broken',
    0,
    1,
    {},
    [],
    { get() {}, set() {} },
    { get: 1, set: 1, delete: 1 },
    Symbol('cache'),
  ];
  for (const value of bad) {
    const error = t.throws(() => resolveStore(value), { instanceOf: BufferOptionError }, `${String(value)} is refused`);
    t.is(error?.key, 'option_cache');
    t.regex(error?.message ?? '', /^koa-buffer: cache must be true, a store/);
    t.notRegex(error?.message ?? '', /secret/, 'a password in the option is not repeated');
  }
});

test('the error is worded by the messages option when given', (t) => {
  const messages = new Messages({ option_cache: 'le cache doit être true, un store ou une URL' });
  t.throws(() => resolveStore('nope', messages), {
    instanceOf: BufferOptionError,
    message: 'koa-buffer: le cache doit être true, un store ou une URL',
  });
});

test('a sqlite path that cannot be opened says which and why', (t) => {
  const dir = tempDir(t);
  t.throws(
    () => resolveStore(`sqlite:${dir}`),
    { message: new RegExp(`^koa-buffer: cannot open the SQLite cache '${dir}'`) },
    'a directory is not a database file',
  );
});
