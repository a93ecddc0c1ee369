import test, { type ExecutionContext } from 'ava';
import { Redis } from 'ioredis';
import { Buffer } from 'node:buffer';
import { createServer, type Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { decodeEntry, encodeEntry } from '../../../src/cache/entry.ts';
import { RedisStore } from '../../../src/cache/stores/redis.ts';
import { logOnFailure } from '../../helpers/log-on-failure.ts';
import { freePort, redisRestartTest, redisTest, useRedis, type TestRedis } from '../../helpers/redis.ts';

/** The store under test, closed in teardown. */
function storeFor(t: ExecutionContext, redis: TestRedis): RedisStore {
  const store = new RedisStore({ url: redis.url, namespace: redis.namespace });
  t.teardown(() => store.close());
  return store;
}

/** A plain client to look at Redis behind the store's back; removes the test's keys in teardown. */
function rawClient(t: ExecutionContext, redis: TestRedis): Redis {
  const client = new Redis(redis.url, { maxRetriesPerRequest: 0 });
  client.on('error', () => undefined);
  t.teardown(async () => {
    try {
      const keys = await client.keys(`${redis.namespace}*`);
      if (keys.length > 0) await client.del(...keys);
    } catch {
      // The server may be stopped by the test: nothing left to clean.
    }
    client.disconnect();
  });
  return client;
}

/** How long `promise` took to reject, and with what; fails the test if it resolves. */
async function rejection(
  t: ExecutionContext,
  promise: Promise<unknown>,
): Promise<{ ms: number; error: Error & { code?: string } }> {
  const start = performance.now();
  const error = await t.throwsAsync(promise);
  return { ms: performance.now() - start, error: error as Error & { code?: string } };
}

async function until(what: string, check: () => Promise<boolean>, timeoutMs = 5000): Promise<number> {
  const start = performance.now();
  for (;;) {
    try {
      if (await check()) return performance.now() - start;
    } catch {
      // not yet
    }
    if (performance.now() - start > timeoutMs) throw new Error(`${what} did not happen within ${timeoutMs} ms`);
    await sleep(20);
  }
}

redisTest('every byte value and an encoded entry with a 1 MiB body round-trip through Redis unchanged', async (t) => {
  const redis = await useRedis(t);
  const store = storeFor(t, redis);
  const raw = rawClient(t, redis);
  const allBytes = Buffer.from(Array.from({ length: 256 }, (_, i) => i));
  await store.set('bytes', allBytes);
  t.deepEqual(await store.get('bytes'), allBytes, 'all 256 byte values, including NUL and invalid UTF-8, come back');

  const body = Buffer.alloc(1024 * 1024);
  for (let i = 0; i < body.length; i++) body[i] = (i * 2654435761) >>> 24;
  const entry = {
    status: 200,
    headers: { 'content-type': 'text/html; charset=utf-8', vary: ['accept-encoding', 'cookie'] },
    body,
    created: Date.now(),
    expires: Date.now() + 60_000,
    staleWhileRevalidate: 0,
    staleIfError: 3_600_000,
  };
  await store.set('buffer:page', encodeEntry(entry), 60_000);
  const decoded = decodeEntry(await store.get('buffer:page'));
  // Compared apart: ava's deepEqual walks a 1 MiB Buffer for about a second, stalling the other tests' timers.
  t.true(decoded?.body.equals(body), 'the 1 MiB body comes back byte for byte');
  t.deepEqual({ ...decoded, body: undefined }, { ...entry, body: undefined }, 'and the rest of the entry too');

  t.is(await raw.exists(`${redis.namespace}{buffer:page}`), 1, 'the key is stored under the namespace, as a hash tag');
  t.is(await raw.exists('buffer:page'), 0, 'and not without it');
  t.is(await store.get('absent'), undefined, 'an absent key is undefined, not null');
  t.true(await store.delete('buffer:page'));
  t.false(await store.delete('buffer:page'), 'deleting an absent key is not an error');
  t.is(await store.get('buffer:page'), undefined);
});

redisTest('a ttl becomes a PX expiry and the entry disappears after it; without a ttl there is none', async (t) => {
  const redis = await useRedis(t);
  const store = storeFor(t, redis);
  const raw = rawClient(t, redis);
  await store.set('short', Buffer.from('x'), 500);
  await store.set('forever', Buffer.from('y'));
  await store.set('zero', Buffer.from('z'), 0);
  const pttl = await raw.pttl(`${redis.namespace}{short}`);
  t.true(pttl > 0 && pttl <= 500, `PTTL ${pttl} is within the 500 ms asked`);
  t.is(await raw.pttl(`${redis.namespace}{forever}`), -1, 'no ttl: no expiry');
  t.is(await raw.pttl(`${redis.namespace}{zero}`), -1, 'ttl 0 means no expiry, as in Keyv');
  t.deepEqual(await store.get('short'), Buffer.from('x'));
  await sleep(600);
  t.is(await store.get('short'), undefined, 'gone after its ttl');
});

redisTest('a client of the caller works with the namespace, and close() leaves it open', async (t) => {
  const redis = await useRedis(t);
  const raw = rawClient(t, redis);
  const store = new RedisStore({ client: raw, namespace: redis.namespace });
  await store.set('k', Buffer.from('v'), 10_000);
  t.deepEqual(await raw.getBuffer(`${redis.namespace}{k}`), Buffer.from('v'));
  await store.close();
  t.is(raw.status, 'ready', "the caller's client is still connected");
  t.deepEqual(await store.get('k'), Buffer.from('v'), 'and the store still works through it');
});

redisRestartTest(
  'Redis killed: get and set reject at once; Redis restarted: the store works again by itself',
  async (t) => {
    const redis = await useRedis(t);
    const store = storeFor(t, redis);
    await store.set('k', Buffer.from('before'));
    await redis.stop();
    for (const [name, call] of [
      ['get', () => store.get('k')],
      ['set', () => store.set('k', Buffer.from('during'))],
      ['delete', () => store.delete('k')],
    ] as const) {
      const { ms, error } = await rejection(t, call());
      t.true(ms < 1500, `${name} rejected in ${ms.toFixed(0)} ms (< 1500)`);
      t.is(error.code, 'KB_REDIS_UNAVAILABLE', `${name}: ${error.message}`);
    }
    await redis.start();
    const ms = await until('the store reconnecting', async () => (await store.set('k', Buffer.from('after')), true));
    logOnFailure(t, `working again ${ms.toFixed(0)} ms after the restart`);
    t.deepEqual(await store.get('k'), Buffer.from('after'), 'reads and writes work after the restart');
  },
);

redisRestartTest(
  'Redis frozen (SIGSTOP) on a live connection: get and set reject after about commandTimeoutMs, never hang',
  async (t) => {
    const redis = await useRedis(t);
    const store = storeFor(t, redis);
    const raw = rawClient(t, redis);
    await store.set('k', Buffer.from('v'));
    const pid = Number(/process_id:(\d+)/.exec(await raw.info('server'))?.[1]);
    t.true(pid > 0, 'the server says its pid');
    process.kill(pid, 'SIGSTOP');
    t.teardown(() => {
      try {
        process.kill(pid, 'SIGCONT');
      } catch {
        // already gone
      }
    });
    const [get, set] = await Promise.all([
      rejection(t, store.get('k')),
      rejection(t, store.set('k', Buffer.from('w'))),
    ]);
    for (const [name, { ms, error }] of [
      ['get', get],
      ['set', set],
    ] as const) {
      t.true(ms >= 900 && ms < 1500, `${name} rejected after ${ms.toFixed(0)} ms (about the 1000 ms limit, < 1500)`);
      t.is(error.code, 'KB_REDIS_TIMEOUT', error.message);
    }
    process.kill(pid, 'SIGCONT');
    await until('the thawed server answering', async () => (await store.get('k')) !== undefined);
    t.pass();
  },
);

test('no Redis listening at start-up: the first get rejects at once with the connection error', async (t) => {
  const port = await freePort();
  const store = new RedisStore({ url: `redis://127.0.0.1:${port}` });
  t.teardown(() => store.close());
  const { ms, error } = await rejection(t, store.get('k'));
  t.true(ms < 1500, `rejected in ${ms.toFixed(0)} ms`);
  t.is(error.code, 'KB_REDIS_UNAVAILABLE');
  t.regex(error.message, /ECONNREFUSED/, 'the message says why');
});

test('a server that accepts but never answers: the first get rejects after about commandTimeoutMs', async (t) => {
  const sockets = new Set<Socket>();
  const silent = createServer((socket) => {
    sockets.add(socket);
    socket.on('error', () => undefined);
  });
  await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
  t.teardown(() => {
    for (const socket of sockets) socket.destroy();
    silent.close();
  });
  const { port } = silent.address() as { port: number };
  const store = new RedisStore({ url: `redis://127.0.0.1:${port}`, commandTimeoutMs: 500 });
  t.teardown(() => store.close());
  const { ms, error } = await rejection(t, store.get('k'));
  t.true(ms >= 400 && ms < 1500, `rejected after ${ms.toFixed(0)} ms (limit 500)`);
  t.is(error.code, 'KB_REDIS_UNAVAILABLE', error.message);
  // The silent server's accept runs on this same event loop: under load it may come after the rejection.
  for (let i = 0; i < 100 && sockets.size === 0; i++) await new Promise((resolve) => setTimeout(resolve, 20));
  t.true(sockets.size > 0, 'the store did reach the server');
});

test('bad options and values are refused with errors saying what was wrong', async (t) => {
  t.throws(() => new RedisStore({}), { instanceOf: TypeError, message: /either url or client/ });
  t.throws(() => new RedisStore({ url: 'redis://x', client: {} as never }), {
    instanceOf: TypeError,
    message: /either url or client/,
  });
  t.throws(() => new RedisStore({ url: 'http://127.0.0.1:6379' }), {
    instanceOf: TypeError,
    message: /redis:\/\/ or rediss:\/\/ URL/,
  });
  t.throws(
    () => new RedisStore({ url: 'redis://user:secret@[bad' }),
    { instanceOf: TypeError, message: /user:\*\*\*@/ },
    'the password is not echoed',
  );
  t.throws(() => new RedisStore({ client: { getBuffer() {}, set() {} } as never }), {
    instanceOf: TypeError,
    message: /no del\(\) method/,
  });
  t.throws(() => new RedisStore({ url: 'redis://127.0.0.1:1', commandTimeoutMs: 0 }), {
    instanceOf: RangeError,
    message: /commandTimeoutMs/,
  });
  const store = new RedisStore({ url: `redis://127.0.0.1:${await freePort()}` });
  t.teardown(() => store.close());
  await t.throwsAsync(store.set('k', { an: 'object' }), {
    instanceOf: TypeError,
    message: /bytes or strings, got object/,
  });
  await t.throwsAsync(store.set('k', Buffer.from('x'), -1), { instanceOf: RangeError, message: /ttlMs/ });
});

redisTest('close() twice is harmless and a closed store rejects', async (t) => {
  const redis = await useRedis(t);
  const store = new RedisStore({ url: redis.url, namespace: redis.namespace });
  await store.set('k', Buffer.from('v'), 10_000);
  await store.close();
  await store.close();
  await t.throwsAsync(store.get('k'), { code: 'KB_REDIS_UNAVAILABLE' });
});
