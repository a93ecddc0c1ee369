import test, { type ExecutionContext } from 'ava';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { BufferOptionError } from '../../src/base/errors.ts';
import { Lock } from '../../src/locks/lock.ts';
import { RedisLock, type RedisLockClient } from '../../src/locks/redis-lock.ts';
import { fixture, spawnChild } from '../helpers/children.ts';
import { freePort, redisRestartTest, redisTest, useRedis, type TestRedis } from '../helpers/redis.ts';

/** A RedisLock on the test's server and namespace, closed in teardown. */
function lockOn(t: ExecutionContext, redis: TestRedis, options: { ttl?: number } = {}): RedisLock {
  const lock = new RedisLock({ redis: redis.url, namespace: redis.namespace, ...options });
  t.teardown(() => lock.close());
  return lock;
}

/** A plain ioredis client to look at what the lock wrote, closed in teardown. */
function inspector(t: ExecutionContext, redis: TestRedis): Redis {
  const client = new Redis(redis.url);
  t.teardown(() => client.disconnect());
  return client;
}

const ms = (at: unknown): number => Number(BigInt(at as string) / 1_000_000n);

redisTest('acquire sets namespace+key to a random token with the ttl, NX: a second acquire is busy', async (t) => {
  const redis = await useRedis(t);
  const raw = inspector(t, redis);
  const lock = lockOn(t, redis, { ttl: 20 });
  const [guard, error] = await lock.acquire('report');
  t.truthy(guard);
  t.is(error, undefined);
  const token = await raw.get(`${redis.namespace}report`);
  t.regex(token ?? '', /^[0-9a-f]{32}$/, 'the value is a 128-bit random token');
  const pttl = await raw.pttl(`${redis.namespace}report`);
  t.true(pttl > 19_000 && pttl <= 20_000, `PTTL ${pttl} is the ttl of 20 s`);
  t.deepEqual(await lock.acquire('report'), [null, undefined], 'the same object sees busy');
  t.deepEqual(await lockOn(t, redis).acquire('report'), [null, undefined], 'another object sees busy');

  const [short] = await lock.acquire('short', { ttl: 1.5 });
  const shortTtl = await raw.pttl(`${redis.namespace}short`);
  t.true(shortTtl > 1000 && shortTtl <= 1500, `acquire's own ttl wins (PTTL ${shortTtl})`);
  t.not(await raw.get(`${redis.namespace}short`), token, 'every acquire draws a new token');
  t.deepEqual(await lock.release(short), [true, undefined]);
});

redisTest('release deletes the key; null, undefined and a second release are harmless', async (t) => {
  const redis = await useRedis(t);
  const raw = inspector(t, redis);
  const lock = lockOn(t, redis);
  const [guard] = await lock.acquire('k');
  t.deepEqual(await lock.release(guard), [true, undefined]);
  t.is(await raw.exists(`${redis.namespace}k`), 0, 'the key is gone');
  t.deepEqual(await lock.release(guard), [true, undefined]);
  t.deepEqual(await lock.release(null), [true, undefined]);
  t.deepEqual(await lock.release(undefined), [true, undefined]);
  t.truthy((await lock.acquire('k'))[0], 'free again');
});

redisTest('an owner whose ttl ran out can neither release nor extend the next owner’s lock', async (t) => {
  const redis = await useRedis(t);
  const raw = inspector(t, redis);
  const lock = lockOn(t, redis);
  const [late] = await lock.acquire('k', { ttl: 0.1 });
  await sleep(150);
  const [next] = await lock.acquire('k', { ttl: 30 });
  t.truthy(next, 'the key was free after the ttl');
  const nextToken = await raw.get(`${redis.namespace}k`);
  const [extended, expireError] = await lock.expire(late!, 600);
  t.false(extended);
  t.regex(expireError!, /no longer held by this owner/);
  const [released, releaseError] = await lock.release(late);
  t.false(released);
  t.regex(releaseError!, /no longer held by this owner/);
  t.is(await raw.get(`${redis.namespace}k`), nextToken, 'the next owner still holds it');
  t.true((await raw.pttl(`${redis.namespace}k`)) <= 30_000, 'with its own ttl, not the late owner’s');
});

redisTest('expire resets the ttl of a held lock', async (t) => {
  const redis = await useRedis(t);
  const raw = inspector(t, redis);
  const lock = lockOn(t, redis, { ttl: 2 });
  const [guard] = await lock.acquire('k');
  t.deepEqual(await lock.expire(guard!, 50), [true, undefined]);
  const pttl = await raw.pttl(`${redis.namespace}k`);
  t.true(pttl > 49_000, `PTTL ${pttl} after expire(50)`);
  t.regex((await lock.expire(guard!, 0))[1]!, /ttl must be a positive number/);
  await lock.release(guard);
  t.regex((await lock.expire(guard!, 5))[1]!, /no longer held/, 'a released guard cannot extend');
});

redisTest('the waiting Lock over Redis: exptime frees a forgotten lock, expire() extends one', async (t) => {
  const redis = await useRedis(t);
  const backend = lockOn(t, redis);
  const forgetful = new Lock(backend, { timeout: 0, exptime: 0.3 });
  const started = performance.now(); // before the lock is taken: its exptime counts from then at the latest
  t.deepEqual(await forgetful.lock('k'), [0, undefined]);
  const waiter = new Lock(backend, { timeout: 2, maxStep: 0.05 });
  const [elapsed, error] = await waiter.lock('k');
  t.is(error, undefined);
  t.true(elapsed! > 0 && performance.now() - started >= 250, 'taken only once the exptime ran out');
  t.regex((await forgetful.unlock())[1]!, /no longer held/, 'the forgetful owner is told');

  t.deepEqual(await waiter.expire(0.2), [true, undefined]);
  t.deepEqual(await waiter.expire(5), [true, undefined]);
  t.deepEqual(
    await new Lock(backend, { timeout: 0.4 }).lock('k'),
    [null, 'timeout'],
    'held past the 0.2 s it was shortened to',
  );
  t.deepEqual(await waiter.unlock(), [true, undefined]);
});

redisTest('concurrent acquires of one key from many RedisLocks: exactly one wins', async (t) => {
  const redis = await useRedis(t);
  const locks = Array.from({ length: 10 }, () => lockOn(t, redis));
  const results = await Promise.all(locks.map((lock) => lock.acquire('race')));
  t.is(results.filter(([guard]) => guard !== null).length, 1);
  t.true(results.every(([, error]) => error === undefined));
});

redisTest('the empty string, emoji and a 100 KB key are distinct keys', async (t) => {
  const redis = await useRedis(t);
  const lock = lockOn(t, redis);
  const big = '🔑'.repeat(50 * 1024);
  for (const key of ['', '🔒🦊', big])
    t.truthy((await lock.acquire(key))[0], `key of ${key.length} UTF-16 units is taken`);
  for (const key of ['', '🔒🦊', big])
    t.deepEqual(await lock.acquire(key), [null, undefined], `key of ${key.length} units is busy`);
  t.truthy((await lock.acquire(`${big}!`))[0], 'a key differing at its end is another lock');
  t.deepEqual(await lock.acquire(undefined as unknown as string), [null, 'cache key is not defined']);
});

redisTest('redis may be a client (left open by close), or a factory called once, on first use', async (t) => {
  const redis = await useRedis(t);
  const client = inspector(t, redis);
  const given = new RedisLock({ redis: client as unknown as RedisLockClient, namespace: redis.namespace });
  const [guard] = await given.acquire('a');
  t.truthy(guard);
  await given.release(guard);
  await given.close();
  t.is(await client.ping(), 'PONG', 'close() leaves a given client open');

  let calls = 0;
  const fromFactory = new RedisLock({
    redis: () => {
      calls++;
      return client as unknown as RedisLockClient;
    },
    namespace: redis.namespace,
  });
  t.is(calls, 0, 'not called by the constructor');
  await Promise.all([fromFactory.acquire('b'), fromFactory.acquire('c'), fromFactory.acquire('d')]);
  await fromFactory.acquire('e');
  t.is(calls, 1, 'called once');

  const own = new RedisLock({ redis: redis.url, namespace: redis.namespace });
  await own.acquire('f');
  await own.close();
  t.regex((await own.acquire('g'))[1]!, /closed/, 'a closed RedisLock answers with a message');
});

test('bad options throw BufferOptionError naming them', (t) => {
  for (const redis of [undefined, 42, 'http://x', {}, { set() {} }]) {
    const error = t.throws(() => new RedisLock({ redis } as never), { instanceOf: BufferOptionError });
    t.is(error?.key, 'option_lock_redis', `redis ${JSON.stringify(redis)}`);
  }
  for (const ttl of [0, -1, Number.NaN, '60']) {
    const error = t.throws(() => new RedisLock({ redis: 'redis://127.0.0.1:1', ttl } as never), {
      instanceOf: BufferOptionError,
    });
    t.is(error?.key, 'option_lock_ttl', `ttl ${String(ttl)}`);
  }
  const error = t.throws(() => new RedisLock({ redis: 'redis://127.0.0.1:1', namespace: 7 } as never), {
    instanceOf: BufferOptionError,
  });
  t.is(error?.key, 'option_lock_namespace');
  t.is(new RedisLock({ redis: 'redis://127.0.0.1:1', ttl: 90 }).ttl, 90, 'ttl is public');
});

test('an unreachable Redis answers with a message within about a second, never a hang', async (t) => {
  const port = await freePort();
  const lock = new RedisLock({
    redis: `redis://127.0.0.1:${port}`,
    messages: { redis_lock_failed: 'no Redis for %{key}: %{error}' },
  });
  t.teardown(() => lock.close());
  for (let i = 0; i < 2; i++) {
    const started = performance.now();
    const [guard, error] = await lock.acquire('k');
    const took = performance.now() - started;
    t.is(guard, null);
    t.regex(error ?? '', /^no Redis for koa-buffer:k: /, 'the override words it');
    t.true(took < 1500, `answered in ${took.toFixed(0)} ms`);
  }
});

redisRestartTest(
  'Redis stopped mid-test: calls answer with a message at once, and the lock works again after a restart',
  async (t) => {
    const redis = await useRedis(t);
    const lock = lockOn(t, redis);
    const [held] = await lock.acquire('k');
    t.truthy(held);
    await redis.stop();
    for (const call of [() => lock.acquire('other'), () => lock.release(held), () => lock.expire(held!, 5)]) {
      const started = performance.now();
      const [ok, error] = await call();
      const took = performance.now() - started;
      t.falsy(ok);
      t.regex(error ?? '', /Redis (lock|unlock|expire) .* failed/);
      t.true(took < 1200, `answered in ${took.toFixed(0)} ms`);
    }
    await redis.start();
    // ioredis reconnects on its own schedule (at most 500 ms apart); poll rather than guess.
    const deadline = Date.now() + 5000;
    let result = await lock.acquire('after');
    while (result[0] === null && Date.now() < deadline) {
      await sleep(50);
      result = await lock.acquire('after');
    }
    t.truthy(result[0], `taken after the restart (last answer ${String(result[1])})`);
    t.deepEqual(await lock.release(result[0]), [true, undefined]);
    const [released, lost] = await lock.release(held);
    t.false(released, 'a Redis without persistence forgot the lock taken before it stopped');
    t.regex(lost ?? '', /no longer held/, 'and the release from before says so');
  },
);

redisTest(
  'three processes: a holder killed mid-lock is taken over only after its 2 s ttl, and a third waits for the second',
  async (t) => {
    const redis = await useRedis(t);
    const agent = fixture('../../support/lock-agent.ts');
    const [a, b, c] = [0, 1, 2].map(() => spawnChild(t, agent, ['redis', redis.url, '2'])) as [
      ReturnType<typeof spawnChild>,
      ReturnType<typeof spawnChild>,
      ReturnType<typeof spawnChild>,
    ];
    await Promise.all([a, b, c].map((child) => child.waitForJson((m) => m.ready === true, 'ready')));
    const key = `${redis.namespace}three`;
    // Each agent is ready once it has connected (support/lock-agent.ts): this test times the ttl, not a connection.

    const taken = await a.request({ op: 'acquire', key });
    t.true(taken.taken, 'A takes the lock with a 2 s ttl');
    await a.kill('SIGKILL');
    t.false(
      (await c.request({ op: 'acquire', key })).taken,
      'the dead holder’s lock is still busy: Redis cannot know it died',
    );

    // B waits for the lock; its sleeps are capped at 50 ms so it notices the ttl soon after it runs out.
    const bLock = await b.request({ op: 'lock', key, options: { timeout: 5, exptime: 10, maxStep: 0.05 } });
    t.is(bLock.error, undefined, 'B gets the lock once the ttl ran out');
    // Measured from just before A's SET: the ttl cannot have run out earlier than 2 s after that.
    const heldAfter = ms(bLock.at) - ms(taken.before);
    t.true(heldAfter >= 1990, `B got it ${heldAfter} ms after A asked for it, not before the 2 s ttl`);
    t.true(heldAfter < 3000, `and soon after (${heldAfter} ms)`);

    // C waits while B holds (B's exptime 10 s is far away): only B's unlock lets it in.
    c.send(JSON.stringify({ op: 'lock', key, options: { timeout: 5, exptime: 5, maxStep: 0.05 }, id: 99 }));
    await c.waitForJson((m) => m.id === 99 && m.started === true, 'C waiting');
    await sleep(300);
    t.false(
      c.lines.some((line) => line.includes('"id":99') && line.includes('"done":true')),
      'C is still blocked while B holds',
    );
    const unlocked = await b.request({ op: 'unlock', key });
    t.true(unlocked.ok);
    const cLock = await c.waitForJson((m) => m.id === 99 && m.done === true, 'C’s lock');
    t.is(cLock.error, undefined);
    t.true(ms(cLock.at) >= ms(unlocked.at), 'C got it after B let go');
    t.true((cLock.elapsed as number) > 0, 'C had to wait');
  },
);
