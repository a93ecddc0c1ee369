import test from 'ava';
import fc from 'fast-check';
import { Buffer } from 'node:buffer';
import { setTimeout as sleep } from 'node:timers/promises';
import { decodeEntry, encodeEntry } from '../../../src/cache/entry.ts';
import { MemoryStore } from '../../../src/cache/stores/memory.ts';

test('an encoded entry stored in memory reads back equal', (t) => {
  const store = new MemoryStore();
  const entry = {
    status: 200,
    headers: { 'content-type': 'text/html' },
    body: Buffer.from('<p>hi'),
    created: 1,
    expires: Date.now() + 60_000,
    staleWhileRevalidate: 30_000,
    staleIfError: 0,
  };
  store.set('buffer:abc', encodeEntry(entry), 60_000);
  t.deepEqual(decodeEntry(store.get('buffer:abc')), entry);
  t.is(store.get('buffer:other'), undefined, 'another key is absent');
  t.true(store.delete('buffer:abc'), 'delete says it removed the entry');
  t.is(store.get('buffer:abc'), undefined, 'and it is gone');
  t.false(store.delete('buffer:abc'), 'deleting an absent key is not an error');
});

test('the bytes held never exceed maxBytes, whatever the sequence of sets (property, fixed seed)', (t) => {
  const maxBytes = 10_000;
  const operation = fc.record({
    key: fc.integer({ min: 0, max: 40 }),
    size: fc.integer({ min: 0, max: 4000 }),
    remove: fc.boolean(),
  });
  fc.assert(
    fc.property(fc.array(operation, { maxLength: 200 }), (operations) => {
      const store = new MemoryStore({ maxBytes });
      for (const { key, size, remove } of operations) {
        if (remove) store.delete(`k${key}`);
        else store.set(`k${key}`, Buffer.alloc(size, key));
        if (store.bytes > maxBytes) return false;
      }
      // Count independently of the store's own figure: every key still readable, with its bytes.
      let held = 0;
      for (let key = 0; key <= 40; key++) {
        const value = store.get(`k${key}`) as Buffer | undefined;
        if (value) held += value.length + `k${key}`.length;
      }
      return held <= maxBytes && held === store.bytes;
    }),
    { seed: 5150, numRuns: 200 },
  );
  t.pass();
});

test('the least recently used entry is evicted first, and a get counts as a use', (t) => {
  // Each entry costs 100 bytes of value + 1 byte of key: three fit in 330, four do not.
  const store = new MemoryStore({ maxBytes: 330 });
  for (const key of ['a', 'b', 'c']) store.set(key, Buffer.alloc(100, key));
  t.is(store.bytes, 303);
  t.truthy(store.get('a'), 'touch a, so b becomes the least recently used');
  store.set('d', Buffer.alloc(100, 'd'));
  t.is(store.get('b'), undefined, 'b was evicted');
  t.truthy(store.get('a'), 'a stays');
  t.truthy(store.get('c'), 'c stays');
  t.truthy(store.get('d'), 'd is in');
  t.is(store.size, 3);
});

test('a value larger than maxBytes is not kept and evicts nothing', (t) => {
  const store = new MemoryStore({ maxBytes: 1000 });
  store.set('small', Buffer.alloc(100));
  t.false(store.set('huge', Buffer.alloc(2000)), 'set reports the value was not kept');
  t.is(store.get('huge'), undefined);
  t.truthy(store.get('small'), 'the small entry is still there');
});

test('an entry expires after its ttl, and one set without ttl does not', async (t) => {
  const store = new MemoryStore();
  store.set('short', Buffer.from('x'), 40);
  store.set('forever', Buffer.from('y'));
  store.set('zero', Buffer.from('z'), 0);
  t.truthy(store.get('short'), 'readable before its ttl');
  await sleep(80);
  t.is(store.get('short'), undefined, 'gone after its ttl');
  t.truthy(store.get('forever'), 'no ttl: still there');
  t.truthy(store.get('zero'), 'ttl 0 means no expiry, as in Keyv');
});

test('strings are stored and counted in UTF-8 bytes', (t) => {
  const store = new MemoryStore({ maxBytes: 100 });
  store.set('k', 'é'.repeat(10));
  t.is(store.get('k'), 'é'.repeat(10));
  t.is(store.bytes, 21, '20 bytes of UTF-8 plus the 1-byte key');
});

test('bad arguments are refused with errors saying what was wrong', (t) => {
  t.throws(() => new MemoryStore({ maxBytes: 0 }), {
    instanceOf: RangeError,
    message: /maxBytes must be a positive integer.*got 0/,
  });
  t.throws(() => new MemoryStore({ maxBytes: 1.5 }), { instanceOf: RangeError });
  const store = new MemoryStore();
  t.throws(() => store.set('k', { an: 'object' }), { instanceOf: TypeError, message: /bytes or strings, got object/ });
  t.throws(() => store.set('k', Buffer.from('x'), -5), { instanceOf: RangeError, message: /ttlMs/ });
  t.throws(() => store.set('k', Buffer.from('x'), Number.NaN), { instanceOf: RangeError, message: /ttlMs/ });
  t.is(store.size, 0, 'nothing was stored by the refused calls');
});
