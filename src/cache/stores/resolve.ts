/**
 * Turns the `cache` option into a store: `true`, a `sqlite:` or `redis://`
 * URL string, or a store object given as is.
 */
import { createRequire } from 'node:module';
import { resolve as resolvePath } from 'node:path';
import { errorText, shownValue } from '../../base/describe.ts';
import { BufferOptionError } from '../../base/errors.ts';
import type { Messages } from '../../base/messages.ts';
import { isCacheStore, type CacheStore } from '../../base/store.ts';
import { isLruCache, LruCacheStore } from './lru-cache-store.ts';
import { MemoryStore } from './memory.ts';
import { RedisStore, type RedisClientLike } from './redis.ts';
import { SqliteStore } from './sqlite.ts';

/** What the `cache` option accepts. */
export type CacheOption = boolean | string | CacheStore | null | undefined;

/**
 * The store the `cache` option names, or `undefined` for no cache.
 *
 * | option                                   | store                                          |
 * |------------------------------------------|------------------------------------------------|
 * | `undefined`, `null`, `false`              | none                                           |
 * | `true`                                   | `new MemoryStore({ maxBytes: memoryBytes })` (this process) |
 * | `'sqlite:PATH'`, `'sqlite://PATH'`       | `new SqliteStore({ path })`, PATH relative to the working directory; `sqlite::memory:` for tests |
 * | `'redis://…'`, `'rediss://…'`            | `new RedisStore({ url })`                      |
 * | an ioredis `Redis` or `Cluster`          | `new RedisStore({ client })` (the client stays yours) |
 * | an lru-cache `LRUCache`                  | `new LruCacheStore(lru)` (`set` takes `{ttl}`)  |
 * | an object with `get`, `set`, `delete`     | itself (a Keyv, a Keyv adapter, a Map, …)      |
 *
 * @param option - the `cache` option
 * @param messages - the catalog to word errors with (the `messages` option)
 * @param memoryBytes - the byte budget of the store `true` makes (the `cacheMemoryBytes` option)
 * @returns the store, or `undefined`
 * @throws BufferOptionError with key `option_cache` for any other value (an
 *   unknown scheme, an empty path, a number, an object lacking a method)
 * @throws Error when the SQLite file cannot be opened or a store's package is missing
 *
 * @example
 * const store = resolveStore('sqlite:var/cache.sqlite'); // shared by this host's workers
 */
export function resolveStore(
  option: unknown,
  messages?: Messages,
  memoryBytes = defaultMemoryBytes,
): CacheStore | undefined {
  if (option === undefined || option === null || option === false) return undefined;
  if (option === true) return new MemoryStore({ maxBytes: memoryBytes });
  if (typeof option === 'object') {
    // The same object gets the same adapter: a per-response `cache` value is resolved on every request.
    const adapted = adapters.get(option);
    if (adapted !== undefined) return adapted;
    if (isRedisClient(option)) return adapt(option, new RedisStore({ client: option }));
    if (isLruCache(option)) return adapt(option, new LruCacheStore(option));
  }
  if (isCacheStore(option)) return option;
  if (typeof option === 'string') {
    const path = sqlitePath(option);
    if (path !== undefined) return new SqliteStore({ path: path === ':memory:' ? path : resolvePath(path) });
    if (/^rediss?:\/\/./i.test(option)) {
      try {
        return new RedisStore({ url: option });
      } catch (error) {
        if (error instanceof TypeError) throw notACache(option, messages);
        throw error;
      }
    }
  }
  throw notACache(option, messages);
}

/** The error for a `cache` value that names no store, showing it without a password it may hold. */
const notACache = (option: unknown, messages: Messages | undefined): BufferOptionError =>
  new BufferOptionError('option_cache', { name: 'cache', value: shownValue(option) }, messages);

/** The package each URL form of the `cache` option is driven by, loaded by its store (sqlite.ts, redis.ts). */
export function driverOf(option: string): 'better-sqlite3' | 'ioredis' | undefined {
  if (/^sqlite:/i.test(option)) return 'better-sqlite3';
  if (/^rediss?:\/\//i.test(option)) return 'ioredis';
  return undefined;
}

// Resolved from this directory, as the stores beside this file resolve their drivers.
const requireHere = createRequire(import.meta.url);

/**
 * Makes sure the driver of a `cache` URL is installed and loads, when
 * `buffer()` runs. The store itself is opened on first use, so that a
 * `redis://` store does not connect, nor a SQLite file appear, before a
 * request needs one; but a missing driver found then only cost a log line,
 * and the application ran with no cache at all, which is not what its
 * configuration says. Loading the driver has no effect beyond the process
 * (it opens and connects nothing), and a native one (better-sqlite3) built
 * for another Node.js fails here too, rather than at the first request.
 *
 * @param option - the `cache` option as `buffer()` resolved it
 * @throws BufferOptionError `option_cache_driver` when the package is not installed,
 *   `option_cache_driver_broken` when it is and does not load
 */
export function checkDriver(option: unknown, messages?: Messages): void {
  if (typeof option !== 'string') return;
  const name = driverOf(option);
  if (name === undefined) return;
  const args = { name: 'cache', value: shownValue(option), package: name };
  try {
    requireHere.resolve(name);
  } catch {
    throw new BufferOptionError('option_cache_driver', args, messages);
  }
  try {
    requireHere(name);
  } catch (error) {
    throw new BufferOptionError('option_cache_driver_broken', { ...args, error: errorText(error) }, messages);
  }
}

/** The byte budget of the in-memory store by default: 64 MiB. */
export const defaultMemoryBytes = 64 * 1024 * 1024;

/** Adapters made for the user's objects, by object. */
const adapters = new WeakMap<object, CacheStore>();

function adapt(option: object, store: CacheStore): CacheStore {
  adapters.set(option, store);
  return store;
}

/**
 * True for an ioredis `Redis` or `Cluster` (the forms RedisLock takes): the
 * binary-safe read koa-buffer needs, and `defineCommand`, which only ioredis
 * clients have. Their `get` returns text and they have no `delete`, so they
 * could not serve as a store as they are.
 */
function isRedisClient(value: object): value is RedisClientLike {
  const v = value as Record<string, unknown>;
  return (
    typeof v.getBuffer === 'function' &&
    typeof v.set === 'function' &&
    typeof v.del === 'function' &&
    typeof v.defineCommand === 'function'
  );
}

/** PATH of `sqlite:PATH` or `sqlite://PATH` (Keyv's spelling), `undefined` when not a usable sqlite URL. */
function sqlitePath(option: string): string | undefined {
  const match = /^sqlite:(?:\/\/)?(.*)$/is.exec(option);
  const path = match?.[1];
  return path === undefined || path.trim() === '' || path.includes('\0') ? undefined : path;
}
