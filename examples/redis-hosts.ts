/**
 * Recipe: several hosts. Each host runs this server (alone, or under
 * node:cluster); they share one Redis as the cache (`cache: 'redis://…'`)
 * and as the lock that elects one builder per page (`RedisLock`), so a page
 * built on one host is a hit on every other, and concurrent misses across
 * hosts build it once.
 *
 *   REDIS_URL=redis://redis.internal:6379 node --import tsx examples/redis-hosts.ts
 *
 * Rules: the lock's `ttl` must be longer than `cacheLockTimeout` (buffer()
 * checks it) and than the slowest cached page, or a second host starts
 * building while the first still is. RedisLock builds its client lazily, on
 * first use, so under node:cluster each worker gets its own connection. The
 * generated cache key includes the request's Host, so the hosts share entries
 * when the load balancer passes the site's name on (or set `cacheKey`).
 */
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import Koa from 'koa';
import { buffer, RedisLock } from 'koa-buffer';

const redisUrl = process.env.REDIS_URL || 'redis://127.0.0.1:6379';
const host = process.env.HOST_NAME || `host-${process.pid}`; // a name for this "host" in the logs

// Short command timeouts: a dead Redis answers with an error in about a second, never a hang.
const lock = new RedisLock({ redis: redisUrl, namespace: 'myapp:buffer-lock:', ttl: 30, timeoutMs: 1000 });

const app = new Koa();
app.use(async (ctx, next) => {
  await next();
  ctx.set('X-Host', host);
});
app.use(
  buffer({
    optimiseContent: 1,
    cache: redisUrl, // entries carry their own expiry (cacheDuration) and a Redis TTL
    cacheLock: lock,
    cacheLockTimeout: 10, // below the lock's ttl
    cacheDuration: '10 minutes',
  }),
);
app.use(async (ctx) => {
  if (ctx.path !== '/report') return;
  if (await ctx.bufferIsCached()) return;
  console.log(`${host} builds ${ctx.url}`);
  await sleep(500);
  ctx.type = 'html';
  ctx.body = `<!doctype html>
<html>
  <body>
    <p>
      Built on ${host} at ${new Date().toISOString()}.
    </p>
  </body>
</html>
`;
});

const server = app.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => {
  console.log(`listening on http://127.0.0.1:${(server.address() as AddressInfo).port} (${host}, Redis ${redisUrl})`);
});
const stop = (): void => {
  server.close(() => {
    // The Redis cache store was opened by buffer() from the URL; exiting closes its connection.
    void lock.close().finally(() => process.exit(0));
  });
};
process.on('SIGINT', stop);
process.on('SIGTERM', stop);
