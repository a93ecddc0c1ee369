/**
 * Single flight across hosts (SPEC 7): several server processes, standing
 * for several hosts, sharing a real redis-server for the cache and for
 * RedisLock. Then Redis is killed in the middle of a build.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ExecutionContext } from 'ava';
import { fixture, spawnChild, type LineChild } from '../helpers/children.ts';
import { redisRestartTest, redisTest, useRedis } from '../helpers/redis.ts';
import { rawRequest, type RawResponse } from '../helpers/serve.ts';

interface Host {
  child: LineChild;
  port: number;
}

function tempDir(t: ExecutionContext): string {
  const dir = mkdtempSync(join(tmpdir(), 'kb-hosts-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

async function startHosts(t: ExecutionContext, count: number, config: Record<string, unknown>): Promise<Host[]> {
  const children = Array.from({ length: count }, () => spawnChild(t, fixture('cache-server.ts'), [JSON.stringify(config)]));
  return Promise.all(children.map(async (child) => {
    const { port } = await child.waitForJson<{ port?: number }>((m) => typeof m.port === 'number', 'the port');
    return { child, port: port! };
  }));
}

function runs(file: string): number {
  try {
    return readFileSync(file, 'utf8').split('\n').filter((l) => l !== '').length;
  } catch {
    return 0;
  }
}

/** Every host answers for one site name. */
const get = (port: number): Promise<RawResponse> => rawRequest(port, '/report', { headers: { host: 'site.example' } });

function logLines(hosts: Host[], level: string): string[] {
  return hosts.flatMap((h) => h.child.lines.flatMap((line) => {
    try {
      const message = JSON.parse(line) as { log?: string; message?: string };
      return message.log === level ? [message.message!] : [];
    } catch {
      return [];
    }
  }));
}

redisTest('three hosts sharing a Redis cache and a RedisLock build a cold page once for 45 concurrent requests', async (t) => {
  const redis = await useRedis(t);
  const dir = tempDir(t);
  const runsFile = join(dir, 'runs');
  const hosts = await startHosts(t, 3, { cache: redis.url, redisLock: redis.url, lockTtl: 30, delayMs: 500, runsFile });
  const responses = await Promise.all(Array.from({ length: 45 }, (_, i) => get(hosts[i % 3]!.port)));
  t.is(runs(runsFile), 1, 'one build in total');
  for (const response of responses) t.is(response.status, 200);
  t.is(new Set(responses.map((r) => r.body.toString())).size, 1, 'one page for all');
  const statuses = responses.map((r) => r.headers['cache-status']);
  t.is(statuses.filter((s) => s === 'koa-buffer; fwd=miss; stored').length, 1);
  t.is(statuses.filter((s) => s === 'koa-buffer; fwd=miss; collapsed').length, 44);
  t.deepEqual(logLines(hosts, 'error'), [], 'nothing went wrong');
  t.is((await get(hosts[2]!.port)).headers['x-cache'], 'HIT');
});

redisRestartTest('Redis killed mid-flight: every request still gets an answer, and the log says why', async (t) => {
  const redis = await useRedis(t);
  const dir = tempDir(t);
  const runsFile = join(dir, 'runs');
  const hosts = await startHosts(t, 3, { cache: redis.url, redisLock: redis.url, lockTtl: 30, delayMs: 1200, cacheLockTimeout: 8, runsFile });
  const pending = Array.from({ length: 30 }, (_, i) => ({ host: i % 3, answer: get(hosts[i % 3]!.port) }));
  const builder = await Promise.race(hosts.map((h, index) => h.child.waitForJson<{ building?: number }>((m) => m.building !== undefined).then(() => index)));
  await new Promise((resolve) => setTimeout(resolve, 300));
  await redis.stop();
  const started = Date.now();
  const answers = await Promise.all(pending.map(async (p) => ({ host: p.host, response: await p.answer })));
  t.true(Date.now() - started < 6000, 'nobody waited for cacheLockTimeout');
  for (const { host, response } of answers) {
    if (host === builder) {
      t.is(response.status, 200, "the builder's own process answers from the build itself");
    } else {
      t.true(response.status === 503 || response.status === 200, `a watcher answers (${response.status})`);
      if (response.status === 503) t.is(response.headers['cache-status'], 'koa-buffer; fwd=miss; collapsed; detail=LOCK-ERROR');
    }
  }
  const errors = logLines(hosts, 'error');
  t.log(answers.map((a) => `${a.host}${a.host === builder ? '(builder)' : ''} ${a.response.status} ${a.response.headers['cache-status']}`).sort().join('\n'));
  t.true(errors.some((m) => /^cache set buffer:[0-9a-f]{32} failed: /.test(m)), `the builder says its page could not be stored:\n${errors.join('\n')}`);
  t.true(errors.some((m) => /^lock for buffer:[0-9a-f]{32} failed while waiting for another process: Redis lock .* failed: /.test(m)), 'the watchers say the lock failed');

  // With Redis still down, a new request bypasses the cache and is built.
  const later = await get(hosts[0]!.port);
  t.is(later.status, 200);
  t.is(later.headers['cache-status'], 'koa-buffer; fwd=bypass; detail=STORE-ERROR');
  t.true(logLines(hosts, 'error').some((m) => /^cache get buffer:[0-9a-f]{32} failed: /.test(m)));
  t.is(runs(runsFile), 2, 'the first build, and the bypassed request');
});
