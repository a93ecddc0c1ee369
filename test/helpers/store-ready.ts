/**
 * Waiting for a Redis store's first connection. A store fails its calls
 * while it first connects (a cache never waits for Redis), so a test, or a
 * test server, that needs its first request to reach the store asks until
 * it answers. No ava import: the multi-process fixtures use it too.
 */
import type { RedisStore } from '../../src/cache/stores/redis.ts';

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
