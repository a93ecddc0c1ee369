import test from 'ava';
import { Buffer } from 'node:buffer';
import { setTimeout as sleep } from 'node:timers/promises';
import { decodeEntry, encodeEntry, isFresh, type CacheEntry } from '../../../src/cache/entry.ts';
import { resolveStore } from '../../../src/cache/stores/resolve.ts';
import type { CacheStore } from '../../../src/base/store.ts';

// keyv is not installed here; these stores do to a value what a Keyv does, so
// the codec is proven against the shapes a real Keyv hands back.

/** Keyv's default serialiser (@keyv/serialize): Buffers as ':base64:…', strings starting with ':' escaped. */
function keyvSerialise(data: unknown): string {
  return JSON.stringify(data, function (this: Record<string, unknown>, key, value: unknown) {
    const raw = this[key];
    if (Buffer.isBuffer(raw)) return `:base64:${raw.toString('base64')}`;
    if (typeof value === 'string' && value.startsWith(':')) return `:${value}`;
    return value;
  });
}

/** Keyv's default deserialiser: the reviver turns ':base64:…' back into a Buffer. */
function keyvDeserialise(text: string): unknown {
  return JSON.parse(text, (_key, value: unknown) => {
    if (typeof value !== 'string') return value;
    if (value.startsWith(':base64:')) return Buffer.from(value.slice(8), 'base64');
    return value.startsWith(':') ? value.slice(1) : value;
  });
}

/**
 * A store shaped like Keyv over a text-only backend: async methods, values
 * wrapped as `{value, expires}` and kept as serialised strings.
 */
class KeyvShaped implements CacheStore {
  readonly backend = new Map<string, string>();
  constructor(
    private readonly serialise: (data: unknown) => string,
    private readonly deserialise: (text: string) => unknown,
  ) {}
  async get(key: string): Promise<unknown> {
    const text = this.backend.get(key);
    if (text === undefined) return undefined;
    const { value, expires } = this.deserialise(text) as { value: unknown; expires: number | null };
    if (expires !== null && Date.now() > expires) {
      this.backend.delete(key);
      return undefined;
    }
    return value;
  }
  async set(key: string, value: unknown, ttlMs?: number): Promise<boolean> {
    this.backend.set(key, this.serialise({ value, expires: ttlMs ? Date.now() + ttlMs : null }));
    return true;
  }
  async delete(key: string): Promise<boolean> {
    return this.backend.delete(key);
  }
}

function entry(ttlMs = 60_000): CacheEntry {
  return {
    status: 200,
    headers: {
      'content-type': 'text/html; charset=utf-8',
      'set-cookie': [':colon-first', 'b=2'],
      'x-text': ':base64:looks-like-keyv',
    },
    body: Buffer.from([0, 1, 2, 0xff, 0xfe, 0x3a, ...Buffer.from('<p>ünïcode ✓</p>')]),
    created: Date.now(),
    expires: Date.now() + ttlMs,
    staleWhileRevalidate: 30_000,
    staleIfError: 60_000,
  };
}

const stores: Array<[string, () => CacheStore]> = [
  ["a Keyv-shaped store with Keyv's serialiser", () => new KeyvShaped(keyvSerialise, keyvDeserialise)],
  [
    "a Keyv-shaped store read back without the reviver (values stay ':base64:' strings)",
    () => new KeyvShaped(keyvSerialise, (text) => JSON.parse(text)),
  ],
  [
    'a Keyv-shaped store using plain JSON (Buffers become {type, data})',
    () => new KeyvShaped(JSON.stringify, (text) => JSON.parse(text)),
  ],
  ['a plain Map', () => new Map<string, unknown>()],
];

for (const [name, make] of stores) {
  test(`${name}: is taken as the cache store, and an entry survives it`, async (t) => {
    const store = make();
    t.is(resolveStore(store), store, 'resolveStore takes it as is');
    const original = entry();
    await store.set('buffer:k', encodeEntry(original), 60_000);
    t.deepEqual(decodeEntry(await store.get('buffer:k')), original);
    await store.delete('buffer:k');
    t.is(decodeEntry(await store.get('buffer:k')), undefined, 'deleted: a miss');
  });
}

test('the Keyv-shaped backend really holds text, not the Buffer', async (t) => {
  const store = new KeyvShaped(keyvSerialise, keyvDeserialise);
  await store.set('k', encodeEntry(entry()));
  const text = store.backend.get('k');
  t.is(typeof text, 'string');
  t.regex(text ?? '', /^\{"value":":base64:/, 'the value went through the serialiser');
});

test('a Map ignores the ttl, yet an expired entry read from it is not fresh', async (t) => {
  const store = new Map<string, unknown>();
  store.set('k', encodeEntry(entry(30)));
  await sleep(50);
  const decoded = decodeEntry(store.get('k'));
  t.truthy(decoded, 'the Map still returns the value');
  t.false(isFresh(decoded!), 'but the entry says it has expired');
});
