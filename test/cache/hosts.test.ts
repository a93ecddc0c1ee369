/**
 * Single flight across hosts (docs/architecture.md): several server processes, standing
 * for several hosts, sharing a real redis-server for the cache and for
 * RedisLock. Then Redis is killed in the middle of a build.
 */
import { join } from 'node:path';
import {
  assertOneBuild,
  logLines,
  release,
  runs,
  startWorkers,
  tempDir,
  untilWaiting,
} from '../helpers/cache-workers.ts';
import { logOnFailure } from '../helpers/log-on-failure.ts';
import { redisRestartTest, redisTest, useRedis } from '../helpers/redis.ts';
import { rawRequest, type RawResponse } from '../helpers/serve.ts';

/** Every host answers for one site name. */
const get = (port: number): Promise<RawResponse> => rawRequest(port, '/report', { headers: { host: 'site.example' } });

redisTest(
  'three hosts sharing a Redis cache and a RedisLock build a cold page once for 45 concurrent requests',
  async (t) => {
    const redis = await useRedis(t);
    const dir = tempDir(t, 'kb-hosts-');
    const runsFile = join(dir, 'runs');
    const hosts = await startWorkers(t, 3, {
      cache: redis.url,
      redisLock: redis.url,
      lockTtl: 30,
      delayMs: 300,
      hold: true,
      runsFile,
    });
    const pending = Promise.all(Array.from({ length: 45 }, (_, i) => get(hosts[i % 3]!.port)));
    await untilWaiting(hosts, 44);
    release(hosts);
    const responses = await pending;
    assertOneBuild(t, responses, runsFile, hosts);
    t.is((await get(hosts[2]!.port)).headers['x-cache'], 'HIT');
  },
);

redisRestartTest('Redis killed mid-flight: every request still gets an answer, and the log says why', async (t) => {
  const redis = await useRedis(t);
  const dir = tempDir(t, 'kb-hosts-');
  const runsFile = join(dir, 'runs');
  const hosts = await startWorkers(t, 3, {
    cache: redis.url,
    redisLock: redis.url,
    lockTtl: 30,
    delayMs: 0,
    hold: true,
    cacheLockTimeout: 8,
    runsFile,
  });
  const pending = Array.from({ length: 30 }, (_, i) => ({ host: i % 3, answer: get(hosts[i % 3]!.port) }));
  const builder = await Promise.race(
    hosts.map((h, index) =>
      h.child.waitForJson<{ building?: number }>((m) => m.building !== undefined).then(() => index),
    ),
  );
  await untilWaiting(hosts, 29);
  await redis.stop();
  release(hosts); // the build ends with Redis gone
  const started = Date.now();
  const answers = await Promise.all(pending.map(async (p) => ({ host: p.host, response: await p.answer })));
  // Every answer, by host: expected to hold 503s (LOCK-ERROR) from the watchers, so shown only on failure.
  logOnFailure(t, () =>
    answers
      .map(
        (a) =>
          `${a.host}${a.host === builder ? '(builder)' : ''} ${a.response.status} ${a.response.headers['cache-status']}`,
      )
      .sort()
      .join('\n'),
  );
  t.true(Date.now() - started < 6000, 'nobody waited for cacheLockTimeout');
  for (const { host, response } of answers) {
    if (host === builder) {
      t.is(response.status, 200, "the builder's own process answers from the build itself");
    } else {
      t.true(response.status === 503 || response.status === 200, `a watcher answers (${response.status})`);
      if (response.status === 503)
        t.is(response.headers['cache-status'], 'koa-buffer; fwd=miss; collapsed; detail=LOCK-ERROR');
    }
  }
  const errors = logLines(hosts, 'error');
  t.true(
    errors.some((m) => /^cache set buffer:[0-9a-f]{32} failed: /.test(m)),
    `the builder says its page could not be stored:\n${errors.join('\n')}`,
  );
  t.true(
    errors.some((m) =>
      /^lock for buffer:[0-9a-f]{32} failed while waiting for another process: Redis lock .* failed: /.test(m),
    ),
    'the watchers say the lock failed',
  );

  // With Redis still down, a new request bypasses the cache and is built.
  const later = await get(hosts[0]!.port);
  t.is(later.status, 200);
  t.is(later.headers['cache-status'], 'koa-buffer; fwd=bypass; detail=STORE-ERROR');
  t.true(logLines(hosts, 'error').some((m) => /^cache get buffer:[0-9a-f]{32} failed: /.test(m)));
  t.is(runs(runsFile).length, 2, 'the first build, and the bypassed request');
});
