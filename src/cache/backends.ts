/**
 * The backend a store or lock call goes to, as the call counters name it
 * (`memory`, `sqlite`, `redis`, `file`, or `custom` for an object of the
 * application's), so an operator sees which one is slow or failing.
 */
import type { Backend } from '../base/stats.ts';
import type { CacheStore } from '../base/store.ts';
import { FileLock } from '../locks/file-lock.ts';
import { MemoryLock } from '../locks/memory-lock.ts';
import { RedisLock } from '../locks/redis-lock.ts';
import { LruCacheStore } from './stores/lru-cache-store.ts';
import { MemoryStore } from './stores/memory.ts';
import { NearStore } from './stores/near.ts';
import { RedisStore } from './stores/redis.ts';
import { SqliteStore } from './stores/sqlite.ts';

/** The backend behind a store (a near cache counts as the store it fronts). */
export function storeBackend(store: CacheStore): Backend {
  const behind = store instanceof NearStore ? store.store : store;
  if (behind instanceof MemoryStore || behind instanceof LruCacheStore || behind instanceof Map) return 'memory';
  if (behind instanceof SqliteStore) return 'sqlite';
  if (behind instanceof RedisStore) return 'redis';
  return 'custom';
}

/** The backend of a lock. */
export function lockBackend(lock: unknown): Backend {
  if (lock instanceof FileLock) return 'file';
  if (lock instanceof RedisLock) return 'redis';
  if (lock instanceof MemoryLock) return 'memory';
  return 'custom';
}
