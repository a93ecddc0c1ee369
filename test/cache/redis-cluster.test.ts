/**
 * Single flight across hosts on a real 3-master Redis Cluster: server
 * processes standing for hosts share one ioredis Cluster as their cache and
 * as a RedisLock's client. The entry and the lock of one cache key must live
 * in one hash slot (docs/decisions/0025-redis-cluster-one-hash-slot.md);
 * the keys of different pages spread over the masters.
 */
import { createHash } from 'node:crypto';
import { join } from 'node:path';
import type { Cluster } from 'ioredis';
import { tryLock, unlock } from '../../src/cache/flight/lock-calls.ts';
import { hashTagged } from '../../src/cache/hash-tag.ts';
import { RedisStore } from '../../src/cache/stores/redis.ts';
import { RedisLock } from '../../src/locks/redis-lock.ts';
import { defaultLogger } from '../../src/base/logger.ts';
import { Messages } from '../../src/base/messages.ts';
import { DecisionLog } from '../../src/base/decision-log.ts';
import {
  assertOneBuild,
  logLines,
  release,
  runs,
  startWorkers,
  tempDir,
  untilWaiting,
} from '../helpers/cache-workers.ts';
import { clusterTest, useCluster } from '../helpers/redis-cluster.ts';
import { rawRequest, type RawResponse } from '../helpers/serve.ts';

const get = (port: number, path = '/report'): Promise<RawResponse> =>
  rawRequest(port, path, { headers: { host: 'site.example' } });

/** Every key matching `pattern`, with the port of the master that holds it. */
async function keysOnMasters(cluster: Cluster, pattern: string): Promise<Array<{ key: string; port: number }>> {
  if (cluster.status !== 'ready') await new Promise((resolve) => cluster.once('ready', resolve));
  const masters = cluster.nodes('master');
  const found = await Promise.all(
    masters.map(async (node) => (await node.keys(pattern)).map((key) => ({ key, port: node.options.port! }))),
  );
  return found.flat();
}

const keySlot = (cluster: Cluster, key: string): Promise<number> => cluster.cluster('KEYSLOT', key);

clusterTest(
  'two hosts sharing a 3-master Redis Cluster as cache and RedisLock build a cold page once for 40 concurrent requests; its entry and lock share a slot',
  async (t) => {
    const cluster = await useCluster(t);
    const runsFile = join(tempDir(t, 'kb-cluster-hosts-'), 'runs');
    const hosts = await startWorkers(t, 2, { cluster: cluster.ports, lockTtl: 30, delayMs: 300, hold: true, runsFile });
    const pending = Promise.all(Array.from({ length: 40 }, (_, i) => get(hosts[i % 2]!.port)));
    await untilWaiting(hosts, 39);

    const client = cluster.client();
    const locks = await keysOnMasters(client, 'koa-buffer:{*');
    t.is(locks.length, 1, `one lock while the page is built: ${JSON.stringify(locks)}`);
    const lock = locks[0]!;
    t.regex(lock.key, /^koa-buffer:\{buffer:[0-9a-f]{32}\}$/);

    release(hosts);
    const responses = await pending;
    assertOneBuild(t, responses, runsFile, hosts);

    const entries = await keysOnMasters(client, 'koa-buffer:cache:*');
    t.is(entries.length, 1, 'one entry');
    const entry = entries[0]!;
    t.is(entry.key, `koa-buffer:cache:${lock.key.slice('koa-buffer:'.length)}`, 'the same hash tag');
    t.is(await keySlot(client, entry.key), await keySlot(client, lock.key), 'CLUSTER KEYSLOT: one slot');
    t.is(entry.port, lock.port, 'on one master');
    t.deepEqual(await keysOnMasters(client, 'koa-buffer:{*'), [], 'the lock was released');
    for (const host of hosts) t.is((await get(host.port)).headers['x-cache'], 'HIT', 'a hit on every host');
    t.is(runs(runsFile).length, 1);
  },
);

clusterTest('the entries of different pages spread over the slots and masters of the cluster', async (t) => {
  const cluster = await useCluster(t);
  const runsFile = join(tempDir(t, 'kb-cluster-spread-'), 'runs');
  const hosts = await startWorkers(t, 2, { cluster: cluster.ports, lockTtl: 30, delayMs: 0, runsFile });
  const paths = Array.from({ length: 24 }, (_, i) => `/page/${i}`);
  const first = await Promise.all(paths.map((path, i) => get(hosts[i % 2]!.port, path)));
  t.deepEqual(
    first.map((r) => r.headers['x-cache']),
    paths.map(() => 'MISS'),
  );
  // Each page asked again of the other host: stored once, on whichever master owns its slot.
  const again = await Promise.all(paths.map((path, i) => get(hosts[(i + 1) % 2]!.port, path)));
  t.deepEqual(
    again.map((r) => r.headers['x-cache']),
    paths.map(() => 'HIT'),
  );
  t.is(runs(runsFile).length, paths.length, 'each page built once');

  const client = cluster.client();
  const entries = await keysOnMasters(client, 'koa-buffer:cache:*');
  t.is(entries.length, paths.length);
  const slots = new Set(await Promise.all(entries.map((e) => keySlot(client, e.key))));
  const masters = new Set(entries.map((e) => e.port));
  // 24 random slots of 16384: a few may coincide, but not most; all on one master has odds of 3 in 3^24.
  t.true(slots.size >= 20, `${slots.size} slots for ${paths.length} pages`);
  t.true(masters.size >= 2, `entries on ${masters.size} masters`);
  t.deepEqual(logLines(hosts, 'error'), []);
});

clusterTest(
  'a cacheKey holding braces: its entry and its lock still share one slot, and RedisLock keys given by hand are stored as given',
  async (t) => {
    const cluster = await useCluster(t);
    const runsFile = join(tempDir(t, 'kb-cluster-key-'), 'runs');
    const cacheKey = 'user:{42}:home';
    const hosts = await startWorkers(t, 2, {
      cluster: cluster.ports,
      cacheKey,
      lockTtl: 30,
      delayMs: 100,
      hold: true,
      runsFile,
    });
    const pending = Promise.all(Array.from({ length: 10 }, (_, i) => get(hosts[i % 2]!.port)));
    await untilWaiting(hosts, 9);
    const client = cluster.client();
    const tag = `{${createHash('md5').update(cacheKey).digest('hex')}}${cacheKey}`;
    const locks = await keysOnMasters(client, 'koa-buffer:{*');
    t.deepEqual(
      locks.map((l) => l.key),
      [`koa-buffer:${tag}`],
    );
    release(hosts);
    for (const response of await pending) t.is(response.status, 200);
    t.is(runs(runsFile).length, 1);
    const entries = await keysOnMasters(client, 'koa-buffer:cache:*');
    t.deepEqual(
      entries.map((e) => e.key),
      [`koa-buffer:cache:${tag}`],
    );
    t.is(entries[0]!.port, locks[0]!.port);
    t.is(await keySlot(client, entries[0]!.key), await keySlot(client, locks[0]!.key));
    t.not(await keySlot(client, entries[0]!.key), await keySlot(client, 'x{42}'), 'not the slot of the braces inside');

    // A RedisLock used directly keeps its keys: namespace + key, its scripts run on the key's master.
    const locksByHand = new RedisLock({ redis: client, ttl: 5 });
    const [guard, error] = await locksByHand.acquire('nightly-report');
    t.truthy(guard, error);
    t.deepEqual(await locksByHand.acquire('nightly-report'), [null, undefined], 'busy');
    t.is(await client.exists('koa-buffer:nightly-report'), 1, 'stored as given');
    t.deepEqual(await locksByHand.expire(guard!, 20), [true, undefined]);
    t.true((await client.pttl('koa-buffer:nightly-report')) > 5000, 'extended by the script');
    t.deepEqual(await locksByHand.release(guard), [true, undefined]);
    t.is(await client.exists('koa-buffer:nightly-report'), 0, 'released by the script');
    await locksByHand.close();
    t.is(client.status, 'ready', 'close() leaves a Cluster it was given open');
  },
);

clusterTest('awkward cache keys: each keeps an entry of its own, in the slot of its lock', async (t) => {
  const cluster = await useCluster(t);
  const client = cluster.client();
  const store = new RedisStore({ client });
  const locks = new RedisLock({ redis: client, ttl: 30 });
  const log = new DecisionLog(defaultLogger, new Messages());
  const keys = ['buffer:0123', 'x', '{x}', '}x', '{', '}', '{}', 'a{}b', 'ü {ключ} 🗝', ' '];
  for (const key of keys) {
    await store.set(key, `value of ${key}`, 60_000);
    const attempt = await tryLock(locks, key, 1000, log);
    t.true(typeof attempt === 'object' && 'guard' in attempt, `the lock of ${JSON.stringify(key)}`);
    const entryName = `koa-buffer:cache:${hashTagged(key)}`;
    const lockName = `koa-buffer:${hashTagged(key)}`;
    t.is(await client.exists(entryName), 1, entryName);
    t.is(await client.exists(lockName), 1, lockName);
    t.is(await keySlot(client, entryName), await keySlot(client, lockName), `one slot for ${JSON.stringify(key)}`);
    if (typeof attempt === 'object' && 'guard' in attempt) await unlock(locks, attempt.guard, key, 1000, log);
    t.is(await client.exists(lockName), 0, 'released');
  }
  for (const key of keys) t.is((await store.get(key))?.toString(), `value of ${key}`, 'no key overwrote another');
  t.is(new Set(keys.map(hashTagged)).size, keys.length);
  await locks.close();
  await store.close();
});
