/**
 * The waiting Lock over a RedisLock is woken by the release's message, on a
 * real redis-server: the holder is another process, the time from its
 * release to the waiter's acquire is measured on the monotonic clock every
 * process shares, and the waiter's subscription is gone afterwards.
 */
import type { ExecutionContext } from 'ava';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { Lock } from '../../src/locks/lock.ts';
import type { LockBackend } from '../../src/locks/protocol.ts';
import { RedisLock } from '../../src/locks/redis-lock.ts';
import { fixture, spawnChild, type LineChild } from '../helpers/children.ts';
import { redisTest, useRedis, type TestRedis } from '../helpers/redis.ts';

/** Generous for a noisy shared machine; polling with the default maxStep of 0.5 s takes up to 500 ms. */
const wokenWithinMs = 150;

function lockOn(t: ExecutionContext, redis: TestRedis): RedisLock {
  const lock = new RedisLock({ redis: redis.url, namespace: redis.namespace });
  t.teardown(() => lock.close());
  return lock;
}

function inspector(t: ExecutionContext, redis: TestRedis): Redis {
  const client = new Redis(redis.url);
  t.teardown(() => client.disconnect());
  return client;
}

async function holderOf(t: ExecutionContext, redis: TestRedis, key: string): Promise<LineChild> {
  const agent = spawnChild(t, fixture('../../support/lock-agent.ts'), ['redis', redis.url]);
  await agent.waitForJson((m) => m.ready === true, 'the agent to start');
  // The agent's RedisLock uses the default namespace: the waiter must ask for the same key.
  const held = await agent.request<{ taken: boolean; error?: string }>({ op: 'acquire', key: redis.namespace + key });
  t.true(held.taken, `the holder has the key${held.error === undefined ? '' : `: ${held.error}`}`);
  return agent;
}

/** How many connections listen on the release channel of the lock at `redisKey`. */
async function listeners(raw: Redis, redisKey: string): Promise<number> {
  const answer = (await raw.call('PUBSUB', 'NUMSUB', `${redisKey}:released`)) as [string, number];
  return Number(answer[1]);
}

/** The listeners once the server has seen the waiter's connection close (it is not waited for), up to 2 s. */
async function listenersLeft(raw: Redis, redisKey: string): Promise<number> {
  const until = performance.now() + 2000;
  let count = await listeners(raw, redisKey);
  while (count > 0 && performance.now() < until) {
    await sleep(10);
    count = await listeners(raw, redisKey);
  }
  return count;
}

/** The same backend without waitForRelease: the waiting Lock polls it, as before. */
function pollingOnly(backend: RedisLock): LockBackend {
  return { acquire: (key) => backend.acquire(key), release: (guard) => backend.release(guard as never) };
}

async function latencyAfterRelease(t: ExecutionContext, redis: TestRedis, backend: LockBackend): Promise<number> {
  const raw = inspector(t, redis);
  const key = `${redis.namespace}report`;
  const agent = await holderOf(t, redis, 'report');
  const lock = new Lock(backend, { timeout: 10, exptime: 30 });
  const waiting = lock.lock(key).then((result) => ({ result, at: process.hrtime.bigint() }));
  // Long enough for the polling sleeps to have grown to their 0.5 s cap.
  await sleep(1200);
  t.true(lock.locked, 'still waiting while the other process holds it');
  const released = await agent.request<{ ok: boolean; at: string }>({ op: 'release', key });
  t.true(released.ok);
  const { result, at } = await waiting;
  t.is(result[1], undefined);
  t.is(await listenersLeft(raw, `koa-buffer:${key}`), 0, 'the subscription is closed once the lock is taken');
  t.deepEqual(await lock.unlock(), [true, undefined]);
  return Number(at - BigInt(released.at)) / 1e6;
}

/** A RedisLock whose namespace is empty, so keys given to it are the agent's keys verbatim. */
function bareLockOn(t: ExecutionContext, redis: TestRedis): RedisLock {
  const lock = new RedisLock({ redis: redis.url, namespace: 'koa-buffer:' });
  t.teardown(() => lock.close());
  return lock;
}

redisTest('a Redis waiter is woken by the release’s message, not by its next poll', async (t) => {
  const redis = await useRedis(t);
  const backend = bareLockOn(t, redis);
  const woken = await latencyAfterRelease(t, redis, backend);
  const polled = await latencyAfterRelease(t, redis, pollingOnly(backend));
  t.log(`release → acquire: ${woken.toFixed(1)} ms woken, ${polled.toFixed(1)} ms polling`);
  t.true(woken < wokenWithinMs, `woken ${woken.toFixed(1)} ms after the release`);
});

redisTest(
  'a release without a message (the key deleted, a lost message) still reaches the waiter by polling',
  async (t) => {
    const redis = await useRedis(t);
    const raw = inspector(t, redis);
    const locks = lockOn(t, redis);
    const [held] = await locks.acquire('report');
    t.not(held, null);
    const lock = new Lock(locks, { timeout: 10, maxStep: 0.2, exptime: 30 });
    const waiting = lock.lock('report').then((result) => ({ result, at: performance.now() }));
    await sleep(300);
    const deleted = performance.now();
    await raw.del(`${redis.namespace}report`);
    const { result, at } = await waiting;
    t.is(result[1], undefined);
    t.log(`silent delete → acquire: ${(at - deleted).toFixed(1)} ms (pollMs 200)`);
    t.true(at - deleted < 200 + wokenWithinMs, 'within one poll');
    t.deepEqual(await lock.unlock(), [true, undefined]);
  },
);

redisTest('a Redis wait that times out says timeout and leaves no subscription', async (t) => {
  const redis = await useRedis(t);
  const raw = inspector(t, redis);
  const locks = lockOn(t, redis);
  const [held] = await locks.acquire('report');
  t.not(held, null);
  const lock = new Lock(locks, { timeout: 0.3, exptime: 30 });
  const started = performance.now();
  const waiting = lock.lock('report');
  await sleep(150);
  t.is(await listeners(raw, `${redis.namespace}report`), 1, 'the waiter listens while it waits');
  t.deepEqual(await waiting, [null, 'timeout']);
  t.true(performance.now() - started >= 300, 'it waited the whole timeout');
  t.is(await listenersLeft(raw, `${redis.namespace}report`), 0, 'and stopped listening when it gave up');
  t.deepEqual(await locks.release(held), [true, undefined]);
});
