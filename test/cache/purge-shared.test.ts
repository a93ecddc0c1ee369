/**
 * Purges across processes sharing a store: 3 worker processes on one SQLite
 * file, 2 "hosts" (processes) on a real redis-server, and 2 on a real Redis
 * Cluster. A purge made through one process must take the old page away from
 * every other one within 1 s (each is asked until its page changes: the first
 * to miss rebuilds, so the others may then hit the new page), and a build in
 * flight when its URL is purged must not come back as fresh.
 */
import { join } from 'node:path';
import type { ExecutionContext } from 'ava';
import test from 'ava';
import { tempDir } from '../helpers/cache-workers.ts';
import { fixture, spawnChild } from '../helpers/children.ts';
import { clusterTest, useCluster } from '../helpers/redis-cluster.ts';
import { redisTest, useRedis } from '../helpers/redis.ts';
import { rawRequest } from '../helpers/serve.ts';

interface Worker {
  port: number;
  child: ReturnType<typeof spawnChild>;
}

const headers = { host: 'app.example' };

async function start(t: ExecutionContext, count: number, config: Record<string, unknown>): Promise<Worker[]> {
  const children = Array.from({ length: count }, () =>
    spawnChild(t, fixture('purge-server.ts'), [JSON.stringify(config)]),
  );
  return Promise.all(
    children.map(async (child) => {
      const { port } = await child.waitForJson<{ port?: number }>((m) => typeof m.port === 'number', 'the port');
      return { child, port: port! };
    }),
  );
}

async function page(worker: Worker, path: string): Promise<string> {
  const response = await rawRequest(worker.port, path, { headers });
  if (response.status !== 200) throw new Error(`${path}: status ${response.status}`);
  return response.body.toString();
}

async function post(worker: Worker, path: string): Promise<void> {
  const response = await rawRequest(worker.port, path, { method: 'POST', headers });
  if (response.status !== 200) throw new Error(`${path}: status ${response.status} ${response.body.toString()}`);
}

/** Ms until every worker answers `path` with something else than `old`; fails the test past 1 s. */
async function untilGone(t: ExecutionContext, workers: Worker[], path: string, old: string): Promise<number> {
  const at = Date.now();
  for (const worker of workers) {
    while ((await page(worker, path)) === old) {
      if (Date.now() - at > 1000) {
        t.fail(`worker on ${worker.port} still answers the purged ${path} after 1 s`);
        return Infinity;
      }
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
  }
  return Date.now() - at;
}

/** Warms `paths` through every worker and returns the page each shares. */
async function warm(t: ExecutionContext, workers: Worker[], paths: string[]): Promise<Record<string, string>> {
  const pages: Record<string, string> = {};
  for (const path of paths) {
    pages[path] = await page(workers[0]!, path);
    for (const worker of workers.slice(1)) t.is(await page(worker, path), pages[path], `${path} is shared`);
  }
  return pages;
}

async function scenario(t: ExecutionContext, workers: Worker[]): Promise<void> {
  const paths = ['/articles/1', '/articles/2', '/list', '/page?q=1'];
  let pages = await warm(t, workers, paths);
  const [first, ...others] = workers;

  await post(first!, `/purge?url=${encodeURIComponent('/articles/1')}&host=app.example`);
  t.log(`purge(url) seen by all in ${await untilGone(t, workers, '/articles/1', pages['/articles/1']!)} ms`);
  t.is(await page(others[0]!, '/articles/2'), pages['/articles/2']!, 'another URL stays');

  pages = await warm(t, workers, paths);
  await post(others[0]!, '/purge-tag?tag=article:2');
  t.log(`purgeTag seen by all in ${await untilGone(t, workers, '/articles/2', pages['/articles/2']!)} ms`);
  t.is(await page(first!, '/list'), pages['/list']!, 'an untagged page stays');

  pages = await warm(t, workers, paths);
  await post(first!, '/purge-tag?tag=list');
  t.log(`purgeTag (header tag) seen by all in ${await untilGone(t, workers, '/list', pages['/list']!)} ms`);

  pages = await warm(t, workers, paths);
  await post(others.at(-1)!, '/purge-all');
  for (const path of paths) t.log(`purgeAll ${path} gone in ${await untilGone(t, workers, path, pages[path]!)} ms`);

  // In flight: the builder's process learns of the purge from the store, after its build began.
  const building = others[0]!.child.waitForJson<{ building?: string }>((m) => m.building === '/slow', 'the build');
  const slow = page(others[0]!, '/slow');
  await building;
  await post(first!, '/purge?url=/slow');
  const built = await slow;
  for (const worker of workers) t.not(await page(worker, '/slow'), built, 'the build purged in flight is not served');
}

test('3 worker processes on one SQLite file: purge by URL, tag and all is seen by every worker within 1 s', async (t) => {
  const dir = tempDir(t, 'kb-purge-shared-');
  await scenario(t, await start(t, 3, { cache: `sqlite:${join(dir, 'cache.sqlite')}` }));
});

redisTest('2 hosts on a redis-server: purge by URL, tag and all is seen by the other within 1 s', async (t) => {
  const redis = await useRedis(t);
  await scenario(t, await start(t, 2, { cache: redis.url }));
});

clusterTest('2 hosts on a Redis Cluster: purge by URL, tag and all is seen by the other within 1 s', async (t) => {
  const cluster = await useCluster(t);
  await scenario(t, await start(t, 2, { cluster: cluster.ports }));
});
