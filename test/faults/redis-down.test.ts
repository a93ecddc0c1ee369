/**
 * Redis killed and restarted under two server processes that share it for
 * the cache and for RedisLock (issue 7). While it is down every request is
 * answered at once, built by its own process, with a log line saying why;
 * once it is back (empty: the test's Redis keeps nothing) both the cache and
 * the lock work again without a restart of the servers: a cold page is
 * built once across the two processes and then hit.
 *
 * (test/cache/hosts.test.ts covers Redis killed in the middle of a build.)
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { ExecutionContext } from 'ava';
import { logOnFailure } from '../helpers/log-on-failure.ts';
import { fixture, spawnChild, type LineChild } from '../helpers/children.ts';
import { redisRestartTest, useRedis } from '../helpers/redis.ts';
import { rawRequest, type RawResponse } from '../helpers/serve.ts';

interface Server {
  child: LineChild;
  port: number;
}

async function startServers(t: ExecutionContext, url: string): Promise<Server[]> {
  const config = JSON.stringify({ cache: url, redisLock: url, lockTtl: 30, cacheLockTimeout: 8 });
  const children = [0, 1].map(() => spawnChild(t, fixture('fault-server.ts'), [config]));
  return Promise.all(
    children.map(async (child) => {
      const { port } = await child.waitForJson<{ port: number }>((m) => typeof m.port === 'number', 'the port');
      return { child, port };
    }),
  );
}

/** Every server answers for one site name: the host is part of the key. */
const get = (server: Server, path: string): Promise<RawResponse> =>
  rawRequest(server.port, path, { headers: { host: 'site.example' } });

function builds(servers: Server[], path: string): number {
  return servers.reduce(
    (sum, s) =>
      sum + s.child.lines.filter((l) => l.includes('"building"') && l.includes(`"${path.split('?')[0]}"`)).length,
    0,
  );
}

function errorLines(servers: Server[]): string[] {
  return servers.flatMap((s) =>
    s.child.lines.flatMap((l) => {
      try {
        const m = JSON.parse(l) as { log?: string; message?: string };
        return m.log === 'error' ? [m.message!] : [];
      } catch {
        return [];
      }
    }),
  );
}

/** Ten concurrent requests for a cold page over both servers. */
async function coldBurst(t: ExecutionContext, servers: Server[], path: string): Promise<void> {
  const responses = await Promise.all(Array.from({ length: 10 }, (_, i) => get(servers[i % 2]!, `${path}?delay=300`)));
  for (const response of responses) t.is(response.status, 200, `${path}: every request gets the page`);
  t.is(new Set(responses.map((r) => r.body.toString())).size, 1, `${path}: one page for all`);
  t.is(builds(servers, path), 1, `${path}: built once across the two processes`);
  const statuses = responses.map((r) => r.headers['cache-status']);
  t.is(
    statuses.filter((s) => s === 'koa-buffer; fwd=miss; stored').length,
    1,
    `${path}: one builder (${statuses.join(' | ')})`,
  );
  t.is((await get(servers[1]!, `${path}?delay=300`)).headers['x-cache'], 'HIT', `${path}: then a hit`);
}

redisRestartTest(
  'Redis killed and restarted: requests are answered at once while it is down, and afterwards the cache and RedisLock work again without restarting the servers',
  async (t) => {
    const redis = await useRedis(t);
    const servers = await startServers(t, redis.url);
    await coldBurst(t, servers, '/page/before');

    await redis.stop();
    const started = performance.now();
    const down = await Promise.all([
      ...Array.from({ length: 4 }, (_, i) => get(servers[i % 2]!, '/page/before?delay=300')),
      ...Array.from({ length: 4 }, (_, i) => get(servers[i % 2]!, '/page/during?delay=0')),
    ]);
    const took = performance.now() - started;
    for (const [i, response] of down.entries()) {
      t.is(response.status, 200, 'answered while Redis is down');
      const status = response.headers['cache-status'];
      // A page each process already holds in its near cache is still fresh there; nothing else is cached.
      if (i < 4)
        t.regex(String(status), /^koa-buffer; (hit; ttl=\d+|fwd=bypass; detail=STORE-ERROR)$/, 'near copy or bypass');
      else t.is(status, 'koa-buffer; fwd=bypass; detail=STORE-ERROR', 'the cache is bypassed');
    }
    t.true(took < 2500, `all eight answered within ${Math.round(took)} ms: no wait for Redis`);
    t.true(
      errorLines(servers).some((m) =>
        /^cache get buffer:[0-9a-f]{32} failed: koa-buffer: Redis cache is not connected/.test(m),
      ),
      `the log says why:\n${errorLines(servers).join('\n')}`,
    );

    await redis.start();
    const restarted = performance.now();
    // ioredis reconnects on its own schedule (the store backs off up to 1 s, the lock 0.5 s): poll each server
    // with fresh keys until one builds, stores and hits with nothing logged, rather than guess a delay.
    for (const [i, server] of servers.entries()) {
      const deadline = Date.now() + 8000;
      for (let probe = 0; ; probe++) {
        const errorsBefore = errorLines(servers).length;
        const path = `/page/probe-${i}-${probe}?delay=0`;
        const first = await get(server, path);
        t.is(first.status, 200, 'answered while reconnecting');
        const second = await get(server, path);
        if (
          first.headers['cache-status'] === 'koa-buffer; fwd=miss; stored' &&
          second.headers['x-cache'] === 'HIT' &&
          errorLines(servers).length === errorsBefore
        ) {
          logOnFailure(
            t,
            `server ${i} used Redis again ${Math.round(performance.now() - restarted)} ms after the restart (probe ${probe})`,
          );
          break;
        }
        if (Date.now() > deadline) {
          t.fail(
            `server ${i} does not use Redis again 8 s after the restart: ${first.headers['cache-status']}\n${errorLines(servers).slice(-4).join('\n')}`,
          );
          return;
        }
        await sleep(100);
      }
    }
    const errorsBefore = errorLines(servers).length;
    await coldBurst(t, servers, '/page/after');
    t.deepEqual(errorLines(servers).slice(errorsBefore), [], 'nothing goes wrong any more');
  },
);
