/**
 * A cache entry with a large body is framed a slice per turn
 * (encodeEntryInSlices): encodeEntry's very bytes, its checks, and the
 * event loop turns while an 8 MiB body (the default cacheMaxSize) is framed.
 */
import test from 'ava';
import { htmlPage } from '../../support/pages.ts';
import { decodeEntry, encodeEntry, encodeEntryInSlices, type CacheEntry } from '../../src/cache/entry.ts';
import { loopTurns } from '../helpers/loop-turns.ts';

const MiB = 1024 * 1024;
const entry = (body: Buffer): CacheEntry => ({
  status: 200,
  headers: { 'content-type': 'text/html', 'x-many': ['a', 'b'] },
  body,
  created: 1_700_000_000_000,
  expires: 1_700_000_600_000,
  staleWhileRevalidate: 5000,
  origin: { host: 'example.com', path: '/a', tags: ['t'], since: 1 },
});

test('the same bytes as encodeEntry, small and large, and they decode to the entry', async (t) => {
  for (const size of [0, 10, MiB, MiB + 1, 3 * MiB + 7]) {
    const made = entry(Buffer.from(htmlPage(Math.max(size, 1), size).slice(0, size)));
    const value = await encodeEntryInSlices(made);
    t.true(value.equals(encodeEntry(made)), `size ${size}`);
    t.true(decodeEntry(value)!.body.equals(made.body));
  }
});

test('the same checks as encodeEntry', async (t) => {
  for (const bad of [
    { ...entry(Buffer.alloc(2 * MiB)), status: 42 },
    { ...entry(Buffer.alloc(2 * MiB)), created: Number.NaN },
    { ...entry(Buffer.alloc(2 * MiB)), body: 'text' as unknown as Buffer },
    null as unknown as CacheEntry,
  ]) {
    const expected = t.throws(() => encodeEntry(bad));
    await t.throwsAsync(encodeEntryInSlices(bad), { message: expected!.message });
  }
});

test('the event loop turns while an 8 MiB body is framed', async (t) => {
  const made = entry(Buffer.from(htmlPage(8 * MiB, 2)));
  const turns = loopTurns();
  const value = await encodeEntryInSlices(made);
  turns.stop();
  t.true(turns.count() > 0);
  t.true(value.equals(encodeEntry(made)));
});
