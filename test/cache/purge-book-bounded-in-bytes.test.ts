/**
 * The purge book is bounded in bytes whatever the URLs (src/cache/purge/book.ts):
 * after one purge on a shared store, every lookup of an entry reads the
 * records of its URL, and a flood of unique 12 KB URLs, each asked twice,
 * once grew the book by two 12 KB ids a URL until the worker died. Ids are
 * digests now, and the tables are LRUs with byte budgets; an evicted purge
 * of this process widens into a purge of everything up to its time, so
 * what it purged stays purged. A real SQLite store.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { appIdentity } from '../../src/base/app-identity.ts';
import test from 'ava';
import type { EntryOrigin } from '../../src/cache/entry.ts';
import { ownBytesMax, PurgeBook, readBytesMax, recordOverhead, urlId } from '../../src/cache/purge/book.ts';
import { MemoryStore } from '../../src/cache/stores/memory.ts';
import { SqliteStore } from '../../src/cache/stores/sqlite.ts';

const bound = (call: () => unknown): Promise<unknown> => Promise.resolve().then(call);
const long = 'x'.repeat(12 * 1024);
const origin = (path: string, since: number): EntryOrigin => ({ host: 'site.example', path, tags: [], since });

test('after a purge, unique 12 KB URLs each asked twice leave the book within its byte budget', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'kb-purge-bytes-'));
  const store = new SqliteStore({ path: join(dir, 'cache.db') });
  const book = new PurgeBook(store, true, 60_000, () => {}, bound);
  t.teardown(() => {
    book.close();
    store.close();
    rmSync(dir, { recursive: true, force: true });
  });
  const before = Date.now() - 1;
  await book.purge([urlId(appIdentity, 'site.example', '/purged')], bound);
  const after = Date.now() + 1;
  // Enough records (two ids a URL) to pass the budget several times over.
  const urls = Math.ceil((3 * readBytesMax) / (2 * (32 + recordOverhead)));
  for (let i = 0; i < urls; i++) {
    const path = `/${long}/${i}`;
    t.false(await book.purged(origin(path, after), after), 'an entry of another URL is not purged');
    t.false(await book.purged(origin(path, after), after));
  }
  t.true(book.bytes > readBytesMax / 2, `the records were kept (${book.bytes} bytes)`);
  t.true(book.bytes <= readBytesMax + ownBytesMax, `${book.bytes} bytes <= ${readBytesMax + ownBytesMax}`);
  t.true(await book.purged(origin('/purged', before), before), 'the purge itself still holds after the flood');
  t.false(await book.purged(origin('/purged', after), after), 'and a build after it is not purged');
});

test("this process's purges past the budget: the evicted ones still purge what they purged", async (t) => {
  const book = new PurgeBook(new MemoryStore({ maxBytes: 1024 * 1024 }), false, 60_000, () => {}, bound);
  const before = Date.now() - 1;
  const purges = Math.ceil((2 * ownBytesMax) / (32 + recordOverhead));
  for (let i = 0; i < purges; i++) await book.purge([urlId(appIdentity, 'site.example', `/${long}/${i}`)], bound);
  t.true(book.bytes <= readBytesMax + ownBytesMax, `${book.bytes} bytes`);
  const sequenceBefore = 0;
  for (const i of [0, 1, Math.floor(purges / 2), purges - 1]) {
    const path = `/${long}/${i}`;
    t.true(await book.purged(origin(path, before), before), `the purge of URL ${i} holds`);
    t.true(book.purgedNow(origin(path, before), before, sequenceBefore), `and for a build under way (${i})`);
  }
  const after = Date.now() + 1;
  t.false(await book.purged(origin(`/${long}/0`, after), after), 'a build after the purges is not purged');
});
