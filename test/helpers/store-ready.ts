/**
 * Waiting for a Redis store's first connection. A store fails its calls
 * while it first connects (a cache never waits for Redis), so a test, or a
 * test server, that needs its first request to reach the store asks until
 * it answers. Types only from ava: the multi-process fixtures use it too.
 */
import type { ExecutionContext } from 'ava';
import { RedisStore } from '../../src/cache/stores/redis.ts';

/** Resolves once `store` answers a get; throws the store's last error after 20 s. */
export async function untilStoreAnswers(store: RedisStore): Promise<void> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    try {
      await store.get('ready');
      return;
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
}

/**
 * A Redis store whose connection is up, closed when the test ends. Beside
 * busy processes a first connection can take longer than a site's first
 * request: nothing would reach the store, and a test of what is shared
 * would fail, or pass, for that alone.
 */
export async function readyStore(
  t: ExecutionContext,
  url: string,
  options: { namespace?: string } = {},
): Promise<RedisStore> {
  const store = new RedisStore({ url, ...options });
  t.teardown(() => store.close());
  await untilStoreAnswers(store);
  return store;
}
