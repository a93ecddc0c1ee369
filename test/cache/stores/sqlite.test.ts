import test, { type ExecutionContext } from 'ava';
import { Buffer } from 'node:buffer';
import { existsSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { decodeEntry, encodeEntry } from '../../../src/cache/entry.ts';
import { SqliteStore } from '../../../src/cache/stores/sqlite.ts';
import { fixture, spawnChild } from '../../helpers/children.ts';
import { patternBody } from '../../fixtures/sqlite-store-child.ts';

/** A second, independent connection to check what is really in the file. */
interface Inspector {
  pragma(source: string, options: { simple: true }): unknown;
  prepare(source: string): { get(...params: unknown[]): unknown; pluck(): { get(...params: unknown[]): unknown } };
  close(): void;
}
const Database = createRequire(import.meta.url)('better-sqlite3') as new (
  path: string,
  options?: { readonly?: boolean },
) => Inspector;

function tempDir(t: ExecutionContext): string {
  const dir = mkdtempSync(join(tmpdir(), 'kb-sqlite-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

function open(t: ExecutionContext, path: string, options: { purgeIntervalMs?: number } = {}): SqliteStore {
  const store = new SqliteStore({ path, ...options });
  t.teardown(() => store.close());
  return store;
}

function inspect(t: ExecutionContext, path: string): Inspector {
  const db = new Database(path);
  t.teardown(() => db.close());
  return db;
}

const entry = (body: string, ttlMs = 600_000) => ({
  status: 200,
  headers: { 'content-type': 'text/html; charset=utf-8', 'set-cookie': ['a=1', 'b=2'] },
  body: Buffer.from(body),
  created: Date.now(),
  expires: Date.now() + ttlMs,
  staleWhileRevalidate: 30_000,
  staleIfError: 60_000,
});

test('an entry stored in the SQLite file reads back equal, from this store and from another one on the same file', (t) => {
  const path = join(tempDir(t), 'cache.sqlite');
  const first = open(t, path);
  const original = entry('<p>héllo ✓</p>');
  first.set('buffer:one', encodeEntry(original), 60_000);
  t.deepEqual(decodeEntry(first.get('buffer:one')), original);
  t.deepEqual(decodeEntry(open(t, path).get('buffer:one')), original, 'a second connection sees the committed row');
  t.is(first.get('buffer:none'), undefined, 'an absent key is undefined');
  first.set('buffer:one', encodeEntry(entry('replaced')));
  t.is(decodeEntry(first.get('buffer:one'))?.body.toString(), 'replaced', 'set replaces the previous value');
  t.true(first.delete('buffer:one'));
  t.false(first.delete('buffer:one'), 'deleting an absent key is not an error');
  t.is(first.get('buffer:one'), undefined);
});

test('the file is in WAL mode and binary values are stored as BLOBs', (t) => {
  const path = join(tempDir(t), 'cache.sqlite');
  const store = open(t, path);
  store.set('k', Buffer.from([0, 255, 0, 1]));
  store.set('text', 'a string stays a string');
  const db = inspect(t, path);
  t.is(db.pragma('journal_mode', { simple: true }), 'wal', 'journal_mode is WAL, seen from another connection');
  t.is(db.prepare("SELECT typeof(value) FROM koa_buffer_cache WHERE key = 'k'").pluck().get(), 'blob');
  t.deepEqual(store.get('k'), Buffer.from([0, 255, 0, 1]), 'bytes come back exactly');
  t.is(store.get('text'), 'a string stays a string');
});

test('a missing parent directory is created 0700 and the database files 0600', (t) => {
  const dir = tempDir(t);
  const path = join(dir, 'deep', 'er', 'cache.sqlite');
  const store = open(t, path);
  store.set('k', Buffer.from('x'));
  t.is(statSync(join(dir, 'deep')).mode & 0o777, 0o700, 'the created directory is private');
  t.is(statSync(join(dir, 'deep', 'er')).mode & 0o777, 0o700);
  t.is(statSync(path).mode & 0o777, 0o600, 'the database file is private');
  t.true(existsSync(`${path}-wal`), 'a WAL file exists while open');
  t.is(statSync(`${path}-wal`).mode & 0o777, 0o600, 'and it is private too');
});

test('an entry expires after its ttl; expired rows are purged by a set only once the purge interval has passed', async (t) => {
  const path = join(tempDir(t), 'cache.sqlite');
  const store = open(t, path, { purgeIntervalMs: 60_000 });
  const db = inspect(t, path);
  const rows = () => db.prepare('SELECT count(*) FROM koa_buffer_cache').pluck().get();
  store.set('short', Buffer.from('x'), 30);
  store.set('forever', Buffer.from('y'));
  t.truthy(store.get('short'), 'readable before its ttl');
  await sleep(60);
  t.is(store.get('short'), undefined, 'an expired row is ignored at once');
  store.set('other', Buffer.from('z'), 60_000);
  t.is(rows(), 3, 'but not deleted by a set within the purge interval');
  // A second store on the file whose interval (0) has passed at its first set.
  open(t, path, { purgeIntervalMs: 0 }).set('trigger', Buffer.from('t'), 60_000);
  t.is(rows(), 3, 'the set after the interval purged the expired row (4 set, 1 gone)');
  t.is(
    db.prepare("SELECT count(*) FROM koa_buffer_cache WHERE key = 'short'").pluck().get(),
    0,
    'and it was the expired one',
  );
  t.truthy(store.get('forever'), 'a row without ttl stays');
  t.is(store.purgeExpired(Date.now() + 3_600_000), 2, 'purgeExpired at a later time removes the rows with a ttl');
});

test('sqlite :memory: works for tests and is private to the store', (t) => {
  const a = open(t, ':memory:');
  const b = open(t, ':memory:');
  a.set('k', Buffer.from('x'));
  t.deepEqual(a.get('k'), Buffer.from('x'));
  t.is(b.get('k'), undefined, 'another :memory: store is another database');
});

test('failures are thrown, never swallowed: a closed store, a file that is not a database, a bad value', (t) => {
  const dir = tempDir(t);
  const store = new SqliteStore({ path: join(dir, 'cache.sqlite') });
  t.throws(() => store.set('k', { an: 'object' }), { instanceOf: TypeError, message: /bytes or strings, got object/ });
  t.throws(() => store.set('k', Buffer.from('x'), -1), { instanceOf: RangeError, message: /ttlMs/ });
  store.close();
  store.close();
  t.throws(() => store.get('k'), undefined, 'get on a closed store throws');
  t.throws(() => store.set('k', Buffer.from('x')), undefined, 'set on a closed store throws');

  const notDb = join(dir, 'not-a-database');
  writeFileSync(
    notDb,
    'this is plain text, long enough to have a header........................................................',
  );
  const error = t.throws(() => new SqliteStore({ path: notDb }), {
    message: /^koa-buffer: cannot open the SQLite cache '.*not-a-database': file is not a database/,
  });
  t.is((error as Error & { code?: string }).code, 'SQLITE_NOTADB', 'the driver code is kept');

  writeFileSync(join(dir, 'a-file'), '');
  t.throws(() => new SqliteStore({ path: join(dir, 'a-file', 'cache.sqlite') }), {
    message: /cannot open the SQLite cache.*(ENOTDIR|EEXIST)/,
  });
  t.throws(() => new SqliteStore({ path: '' }), { instanceOf: TypeError, message: /path must be a non-empty string/ });
  t.throws(() => new SqliteStore({ path: join(dir, 'x.sqlite'), busyTimeoutMs: -1 }), {
    instanceOf: RangeError,
    message: /busyTimeoutMs/,
  });
});

test("three processes writing 200 entries each and reading the others' at the same time get no SQLITE_BUSY and lose nothing", async (t) => {
  const path = join(tempDir(t), 'shared', 'cache.sqlite');
  const count = 200;
  const children = [0, 1, 2].map((id) =>
    spawnChild(t, fixture('sqlite-store-child.ts'), ['concurrent', path, String(id), String(count), '3']),
  );
  await Promise.all(children.map((child) => child.waitForJson((m) => m.ready === true, 'ready')));
  for (const child of children) child.send('go');
  const results = await Promise.all(
    children.map((child) =>
      child.waitForJson<{ done: boolean; verified: number; missing: number; errors: string[]; errorCount: number }>(
        (m) => m.done === true,
        'done',
      ),
    ),
  );
  for (const [id, result] of results.entries()) {
    t.deepEqual(result.errors, [], `process ${id} met no error (${result.errorCount} in all)`);
    t.is(result.verified, 2 * count, `process ${id} read all ${2 * count} entries of the other two intact`);
    t.is(result.missing, 0);
  }
  const db = inspect(t, path);
  t.is(db.prepare('SELECT count(*) FROM koa_buffer_cache').pluck().get(), 3 * count, 'the file holds every entry once');
  t.is(db.pragma('integrity_check', { simple: true }), 'ok');
});

test('six processes opening the same new file at the same moment all open it (WAL set up once, no SQLITE_BUSY)', async (t) => {
  const dir = tempDir(t);
  // Ten fresh files, opened in turn by all six at once: the race is on the first open of each.
  const paths = Array.from({ length: 10 }, (_, i) => join(dir, `round-${i}`, 'cache.sqlite'));
  const children = Array.from({ length: 6 }, () => spawnChild(t, fixture('sqlite-store-child.ts'), ['open', ...paths]));
  await Promise.all(children.map((child) => child.waitForJson((m) => m.ready === true, 'ready')));
  for (const child of children) child.send('go');
  const results = await Promise.all(
    children.map((child) =>
      child.waitForJson<{ opened?: number; error?: string }>((m) => 'opened' in m || 'error' in m, 'opened'),
    ),
  );
  for (const [i, result] of results.entries()) t.deepEqual(result, { opened: paths.length }, `process ${i}`);
  for (const path of paths)
    t.is(
      inspect(t, path).prepare('SELECT count(*) FROM koa_buffer_cache').pluck().get(),
      6,
      `${path}: one entry from each`,
    );
});

test('a writer killed with SIGKILL mid-write leaves a readable file holding every write it had committed', async (t) => {
  const path = join(tempDir(t), 'cache.sqlite');
  const writer = spawnChild(t, fixture('sqlite-store-child.ts'), ['writer', path]);
  // Past several 2 MiB writes, so the kill is likely to land inside one.
  await writer.waitForJson((m) => typeof m.acked === 'number' && m.acked >= 60, '60 committed writes');
  const exit = await writer.kill('SIGKILL');
  t.is(exit.signal, 'SIGKILL', 'the writer died by SIGKILL, not by finishing');
  const acked = writer.lines.map((line) => JSON.parse(line) as { acked: number; size: number });
  t.true(acked.length > 60);

  const db = inspect(t, path);
  t.is(db.pragma('integrity_check', { simple: true }), 'ok', 'the file passes integrity_check');
  const store = open(t, path);
  for (const { acked: index, size } of acked) {
    const decoded = decodeEntry(store.get(`k${index}`));
    if (!decoded || !decoded.body.equals(patternBody(0, index, size))) {
      t.fail(`committed entry k${index} (${size} bytes) is missing or damaged`);
      return;
    }
  }
  t.pass(`all ${acked.length} committed entries are intact`);
  store.set('after', Buffer.from('the file still takes writes'));
  t.deepEqual(store.get('after'), Buffer.from('the file still takes writes'));
});
