/**
 * A real Redis for tests: a `redis-server` started on a free loopback port
 * with no persistence, stopped in teardown — or the server named by
 * `KOA_BUFFER_REDIS_URL`, which must then answer or the test fails. Without
 * either, Redis tests are skipped with a title saying what to install.
 */
import { spawnSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import test, { type ExecutionContext, type Implementation } from 'ava';
import { Redis } from 'ioredis';
import { startServer } from '../../support/redis-server.ts';

export { startServer, freePort } from '../../support/redis-server.ts';

const externalUrl = process.env.KOA_BUFFER_REDIS_URL || undefined;
const haveServer = externalUrl === undefined && !spawnSync('redis-server', ['--version']).error;

/** Why Redis tests cannot run here, or undefined when they can. */
export const redisSkipReason: string | undefined =
  externalUrl !== undefined || haveServer
    ? undefined
    : 'install redis-server (Debian package redis-server) or set KOA_BUFFER_REDIS_URL';

/** Why tests that stop and restart Redis cannot run here, or undefined. */
export const restartSkipReason: string | undefined =
  redisSkipReason ??
  (externalUrl !== undefined
    ? 'stopping Redis needs the redis-server the test starts itself; unset KOA_BUFFER_REDIS_URL'
    : undefined);

/** `test`, or `test.skip` with the reason in the title when Redis is unavailable. */
export function redisTest(title: string, implementation: Implementation<[]>): void {
  if (redisSkipReason === undefined) test(title, implementation);
  else test.skip(`${title} (skipped: ${redisSkipReason})`, implementation);
}

/** As {@link redisTest}, for tests that stop and restart the server. */
export function redisRestartTest(title: string, implementation: Implementation<[]>): void {
  if (restartSkipReason === undefined) test(title, implementation);
  else test.skip(`${title} (skipped: ${restartSkipReason})`, implementation);
}

/** A Redis a test can use. */
export interface TestRedis {
  url: string;
  /** A key prefix no other test uses (servers may be shared through KOA_BUFFER_REDIS_URL). */
  namespace: string;
  /** Stops the server (own servers only). */
  stop(): Promise<void>;
  /** Starts it again on the same port (own servers only). */
  start(): Promise<void>;
}

/** A Redis for this test, stopped in its teardown. */
export async function useRedis(t: ExecutionContext): Promise<TestRedis> {
  const namespace = `kbtest:${randomUUID()}:`;
  if (externalUrl !== undefined) {
    await pingUrl(externalUrl);
    const refuse = async (): Promise<void> => {
      throw new Error('cannot stop or start the Redis of KOA_BUFFER_REDIS_URL');
    };
    return { url: externalUrl, namespace, stop: refuse, start: refuse };
  }
  if (redisSkipReason !== undefined) throw new Error(redisSkipReason);
  const server = await startServer();
  t.teardown(() => server.stop());
  return { url: `redis://127.0.0.1:${server.port}`, namespace, stop: () => server.stop(), start: () => server.start() };
}

async function pingUrl(url: string): Promise<void> {
  const client = new Redis(url, {
    lazyConnect: true,
    connectTimeout: 2000,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
  });
  client.on('error', () => undefined);
  try {
    await client.connect();
    const pong = await client.ping();
    if (pong !== 'PONG') throw new Error(`PING answered ${pong}`);
  } catch (error) {
    throw new Error(`KOA_BUFFER_REDIS_URL=${url} does not answer: ${String(error)}`);
  } finally {
    client.disconnect();
  }
}
