/**
 * examples/redis-hosts.ts: two "hosts" (two processes) sharing a real
 * redis-server as cache and lock, run as a user would. Skipped, saying what
 * to install, when redis-server is absent.
 */
import { decode } from '../../helpers/serve.ts';
import { startExample } from '../../helpers/examples.ts';
import { redisTest, useRedis } from '../../helpers/redis.ts';

redisTest(
  'concurrent misses on two hosts build the page once; the other host then hits; SIGTERM exits 0',
  async (t) => {
    const redis = await useRedis(t);
    const [a, b] = await Promise.all(
      ['a', 'b'].map((name) =>
        startExample(t, 'redis-hosts.ts', { env: { REDIS_URL: redis.url, HOST_NAME: `host-${name}` } }),
      ),
    );
    // Behind a load balancer every host sees the site's name in Host, and Host is part of the cache key.
    const site = { Host: 'www.example.test', 'Accept-Encoding': 'br' };
    const first = await Promise.all(
      Array.from({ length: 8 }, (_, i) => (i % 2 === 0 ? a! : b!).request('/report', site)),
    );
    t.true(
      first.every((r) => r.status === 200),
      `every request is answered 200 (${first.map((r) => r.status).join(' ')})`,
    );
    const caches = first.map((r) => r.headers['x-cache']);
    t.is(caches.filter((c) => c === 'MISS').length, 1, `one request builds (X-Cache: ${caches.join(' ')})`);
    t.is(new Set(first.map((r) => decode(r).toString('utf8'))).size, 1, 'both hosts sent the same page');
    const builds = [...a!.child.lines, ...b!.child.lines].filter((line) => / builds \/report$/.test(line));
    t.is(builds.length, 1, `one build across the hosts: ${builds.join(' | ')}`);

    const later = await Promise.all([a!.request('/report', site), b!.request('/report', site)]);
    t.deepEqual(
      later.map((r) => r.headers['x-cache']),
      ['HIT', 'HIT'],
      'both hosts now answer from Redis',
    );

    for (const host of [a!, b!]) host.child.process.kill('SIGTERM');
    t.deepEqual(await Promise.all([a!.child.exited, b!.child.exited]), [
      { code: 0, signal: null },
      { code: 0, signal: null },
    ]);
  },
);
