/**
 * `cache: 'redis://…'` / `'rediss://…'`: a store shared by every host that
 * talks to one Redis, on ioredis (the client the Redis lock uses too).
 *
 * A cache must never make a request wait on a dead Redis, so the client this
 * store creates has no offline queue and short timeouts: a command fails at
 * once while the connection is down, and within `commandTimeoutMs` when Redis
 * stops answering on a live connection (frozen, partitioned). It reconnects on
 * its own in the background.
 *
 * ioredis is loaded on first use, so an application that never asks for a
 * Redis cache does not need it installed.
 *
 * An entry is stored at `namespace + {key}` (../hash-tag.ts): on a Redis
 * Cluster it shares its hash slot with the lock RedisLock takes for the same
 * cache key, and every command here touches one key, so an ioredis `Cluster`
 * works as the client.
 */
import { Buffer } from 'node:buffer';
import { createRequire } from 'node:module';
import { hashTagged } from '../hash-tag.ts';
import { normaliseTtl, type CacheStore } from '../../base/store.ts';

/**
 * The Redis commands this store sends, as ioredis names them. An ioredis
 * `Redis` or `Cluster` fits; so does any client offering the same methods.
 */
export interface RedisClientLike {
  getBuffer(key: string): Promise<Buffer | null>;
  set(key: string, value: Buffer | string): Promise<unknown>;
  set(key: string, value: Buffer | string, millisecondsToken: 'PX', milliseconds: number): Promise<unknown>;
  del(key: string): Promise<number>;
}

/** Options of {@link RedisStore}: give `url` or `client`, not both. */
export interface RedisStoreOptions {
  /** `redis://[user:password@]host[:port][/db]` or `rediss://…` (TLS); the store creates, and closes, its client. */
  url?: string;
  /** A client you manage (its timeouts are yours to set); `close()` leaves it open. */
  client?: RedisClientLike;
  /**
   * Prefix of every key, so the cache can share a Redis with other data.
   * Keep braces out of it: on a Redis Cluster they would replace the hash
   * tag each entry shares with its lock.
   * @defaultValue `'koa-buffer:cache:'`
   */
  namespace?: string;
  /**
   * Longest a command may take before it fails, and longest the first
   * connection may take. With a `client` of yours, the store enforces it by
   * racing each command against a timer.
   * @defaultValue 1000
   */
  commandTimeoutMs?: number;
}

/** What the store needs from the ioredis client it creates, beyond the commands. */
interface OwnClient extends RedisClientLike {
  readonly status: string;
  on(event: 'error' | 'ready', listener: (error: Error) => void): unknown;
  once(event: 'error' | 'ready', listener: (error: Error) => void): unknown;
  off(event: 'error' | 'ready', listener: (error: Error) => void): unknown;
  quit(): Promise<unknown>;
  disconnect(): void;
}
type RedisConstructor = new (url: string, options: Record<string, unknown>) => OwnClient;

const require = createRequire(import.meta.url);

function loadClient(): RedisConstructor {
  try {
    return require('ioredis') as RedisConstructor;
  } catch (error) {
    const missing = (error as NodeJS.ErrnoException).code === 'MODULE_NOT_FOUND';
    throw new Error(
      missing
        ? "koa-buffer: cache 'redis://…' needs the ioredis package: npm install ioredis"
        : `koa-buffer: ioredis does not load: ${(error as Error).message}`,
      {
        cause: error,
      },
    );
  }
}

/**
 * A cache store in Redis, binary-safe (values are stored and read as bytes,
 * with `PX` for the TTL). Methods return promises that reject on failure;
 * with the client the store creates, no promise stays pending longer than
 * about `commandTimeoutMs`.
 *
 * @example
 * const store = new RedisStore({ url: 'redis://127.0.0.1:6379/0' });
 * await store.set(key, encodeEntry(entry), 600_000);
 * decodeEntry(await store.get(key));
 * await store.close();
 */
export class RedisStore implements CacheStore {
  /** The key prefix. */
  readonly namespace: string;
  /** The command time limit, in ms. */
  readonly commandTimeoutMs: number;
  readonly #client: RedisClientLike;
  readonly #own: OwnClient | undefined;
  #everReady = false;
  #lastError: Error | undefined;

  /**
   * @param options - see {@link RedisStoreOptions}
   * @throws TypeError when neither or both of `url` and `client` are given, the
   *   URL is not a `redis:`/`rediss:` URL, or `client` lacks a command
   * @throws RangeError when `commandTimeoutMs` is not a positive number
   */
  constructor({ url, client, namespace = 'koa-buffer:cache:', commandTimeoutMs = 1000 }: RedisStoreOptions) {
    if ((url === undefined) === (client === undefined)) throw new TypeError('RedisStore needs either url or client');
    if (typeof namespace !== 'string') throw new TypeError('RedisStore namespace must be a string');
    if (!Number.isFinite(commandTimeoutMs) || commandTimeoutMs <= 0) {
      throw new RangeError(
        `RedisStore commandTimeoutMs must be a positive number of ms, got ${String(commandTimeoutMs)}`,
      );
    }
    this.namespace = namespace;
    this.commandTimeoutMs = commandTimeoutMs;
    if (client !== undefined) {
      for (const method of ['getBuffer', 'set', 'del'] as const) {
        if (typeof (client as unknown as Record<string, unknown>)?.[method] !== 'function')
          throw new TypeError(`RedisStore client has no ${method}() method`);
      }
      this.#client = client;
      return;
    }
    if (!isRedisUrl(url)) throw new TypeError(`RedisStore url must be a redis:// or rediss:// URL, got ${redact(url)}`);
    const Redis = loadClient();
    const own = new Redis(url, {
      // Fail at once while disconnected rather than queue: the page gets built instead.
      enableOfflineQueue: false,
      commandTimeout: commandTimeoutMs,
      connectTimeout: commandTimeoutMs,
      // A command caught by a dropped connection fails instead of being resent later.
      maxRetriesPerRequest: 0,
      autoResendUnfulfilledCommands: false,
      retryStrategy: (times: number) => Math.min(50 * 2 ** times, 1000),
    });
    own.on('ready', () => {
      this.#everReady = true;
      this.#lastError = undefined;
    });
    // Without a listener ioredis prints every connection error; the store keeps the last one to explain its failures.
    own.on('error', (error) => {
      this.#lastError = error;
    });
    this.#client = own;
    this.#own = own;
  }

  /**
   * @param key - the key (stored at `namespace + {key}`)
   * @returns the bytes stored, or `undefined` when absent or expired
   * @throws (rejects) when Redis is unreachable, too slow, or answers with an error
   */
  async get(key: string): Promise<Buffer | undefined> {
    await this.#connected();
    const value = await this.#bounded(this.#client.getBuffer(this.#name(key)));
    return value ?? undefined;
  }

  /**
   * @param key - the key (stored at `namespace + {key}`)
   * @param value - bytes (Buffer or Uint8Array) or a string; read back as a Buffer
   * @param ttlMs - milliseconds to keep it; `undefined` or `0` for no expiry
   * @returns true
   * @throws TypeError (rejects) when `value` is neither bytes nor a string
   */
  async set(key: string, value: unknown, ttlMs?: number): Promise<true> {
    const bytes = toStorable(value);
    const ttl = normaliseTtl(ttlMs);
    await this.#connected();
    const name = this.#name(key);
    await this.#bounded(ttl === undefined ? this.#client.set(name, bytes) : this.#client.set(name, bytes, 'PX', ttl));
    return true;
  }

  /**
   * @param key - the key (stored at `namespace + {key}`)
   * @returns true when something was removed
   */
  async delete(key: string): Promise<boolean> {
    await this.#connected();
    return (await this.#bounded(this.#client.del(this.#name(key)))) > 0;
  }

  /** Where `key` is stored: the namespace, then the key as a Cluster hash tag. */
  #name(key: string): string {
    return this.namespace + hashTagged(key);
  }

  /**
   * Closes the client this store created (politely with QUIT when connected);
   * a client given to the constructor is left alone. Closing twice is harmless.
   */
  async close(): Promise<void> {
    const own = this.#own;
    if (!own || own.status === 'end') return;
    if (own.status !== 'ready') {
      own.disconnect();
      return;
    }
    try {
      await this.#bounded(own.quit());
    } catch {
      own.disconnect();
    }
  }

  /**
   * Lets the first commands after start-up wait for the first connection (up
   * to the time limit) instead of failing because the socket is not open yet.
   * Later, while disconnected, commands fail at once.
   */
  async #connected(): Promise<void> {
    const own = this.#own;
    if (!own || own.status === 'ready') return;
    if (this.#everReady || this.#lastError !== undefined || own.status === 'end') throw this.#unavailable(own);
    await new Promise<void>((resolve, reject) => {
      const settle = (error?: Error) => {
        clearTimeout(timer);
        own.off('ready', onReady);
        own.off('error', onError);
        if (error) reject(error);
        else resolve();
      };
      const onReady = () => settle();
      // A refused first connection fails the waiting commands now, not at the time limit.
      const onError = () => settle(this.#unavailable(own));
      const timer = setTimeout(() => settle(this.#unavailable(own)), this.commandTimeoutMs);
      own.once('ready', onReady);
      own.once('error', onError);
    });
  }

  #unavailable(own: OwnClient, cause: unknown = this.#lastError): Error {
    const why = this.#lastError ? `: ${this.#lastError.message}` : '';
    return Object.assign(new Error(`koa-buffer: Redis cache is not connected (${own.status})${why}`, { cause }), {
      code: 'KB_REDIS_UNAVAILABLE',
    });
  }

  /**
   * The store's own client times commands out itself, and its failures get a
   * code to switch on; a client given to the store gets a timer.
   */
  #bounded<T>(promise: Promise<T>): Promise<T> {
    const own = this.#own;
    if (own) return promise.catch((error: unknown) => Promise.reject(this.#explain(own, error)));
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(this.#timedOut()), this.commandTimeoutMs);
    });
    return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
  }

  /** ioredis words these two failures without a code; give them the store's. */
  #explain(own: OwnClient, error: unknown): unknown {
    const message = error instanceof Error ? error.message : '';
    if (message === 'Command timed out') return this.#timedOut(error);
    // The socket closed before ioredis noticed (status still 'ready'), or while reconnecting.
    if (own.status !== 'ready' || message.includes('enableOfflineQueue')) return this.#unavailable(own, error);
    return error;
  }

  #timedOut(cause?: unknown): Error {
    return Object.assign(
      new Error(`koa-buffer: Redis command timed out after ${this.commandTimeoutMs} ms`, { cause }),
      { code: 'KB_REDIS_TIMEOUT' },
    );
  }
}

function isRedisUrl(url: unknown): url is string {
  if (typeof url !== 'string' || !/^rediss?:\/\//i.test(url)) return false;
  try {
    new URL(url);
    return true;
  } catch {
    return false;
  }
}

/** The URL without its password, for error messages. */
function redact(url: unknown): string {
  if (typeof url !== 'string') return String(url);
  return JSON.stringify(url.replace(/\/\/([^/@]*):[^/@]*@/, '//$1:***@'));
}

function toStorable(value: unknown): Buffer | string {
  if (typeof value === 'string' || Buffer.isBuffer(value)) return value;
  if (value instanceof Uint8Array) return Buffer.from(value.buffer, value.byteOffset, value.byteLength);
  throw new TypeError(`RedisStore stores bytes or strings, got ${value === null ? 'null' : typeof value}`);
}
