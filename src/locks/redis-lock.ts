/**
 * RedisLock: the lock backend for workers on several hosts.
 *
 * acquire is `SET key token NX PX ttl` with a random token; release and
 * expire are Lua scripts that act only while the key still holds that token,
 * so an owner whose ttl ran out can never delete or extend the next owner's
 * lock. Every call has a deadline, so a dead Redis answers with a message
 * in about a second instead of hanging the request that asked.
 *
 * The client is ioredis rather than node-redis: it has a per-client
 * `commandTimeout`, `enableOfflineQueue: false` to fail at once while
 * disconnected instead of queueing, `autoResendUnfulfilledCommands: false`
 * (a resent `SET NX` could make its own holder think the key is busy), and
 * `defineCommand`, which runs the scripts by EVALSHA with an EVAL fallback.
 * redlock builds on it too, so the bench compares both on one client.
 */
import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import { BufferOptionError } from '../base/errors.ts';
import type { Messages } from '../base/messages.ts';
import { errorText, shownValue } from '../base/describe.ts';
import { type MessagesOption, isTtl, keyProblem, messagesFrom } from './checks.ts';
import type { AcquireOptions, AcquireResult, LockBackend, ReleaseResult, WaitOptions } from './protocol.ts';

/** The part of an ioredis client (Redis or Cluster) RedisLock uses. */
export interface RedisLockClient {
  status: string;
  set(key: string, value: string, px: 'PX', ms: number, nx: 'NX'): Promise<'OK' | null>;
  defineCommand(name: string, definition: { numberOfKeys: number; lua: string }): void;
  once(event: string, listener: (...args: unknown[]) => void): unknown;
  off(event: string, listener: (...args: unknown[]) => void): unknown;
}

/** Where RedisLock gets its client: an ioredis client, a `redis://`/`rediss://` URL, or a function returning a client. */
export type RedisSource = RedisLockClient | string | (() => RedisLockClient | Promise<RedisLockClient>);

/** Options of {@link RedisLock}. */
export interface RedisLockOptions {
  /** An ioredis client, a `redis://` or `rediss://` URL, or a function returning a client (called once, on first use). */
  redis: RedisSource;
  /**
   * Prefix of every lock key in Redis. Keep braces out of it: on a Redis
   * Cluster they would replace the hash tag a cache key's lock shares with
   * its entry. @defaultValue 'koa-buffer:'
   */
  namespace?: string;
  /** Seconds a lock lives unless released or extended; must exceed the middleware's `cacheLockTimeout`. @defaultValue 60 */
  ttl?: number;
  /** Longest a call may take, in milliseconds, connecting included. @defaultValue 1000 */
  timeoutMs?: number;
  /** Message overrides, or a {@link Messages}. */
  messages?: MessagesOption;
}

/** The channel a release publishes on is the lock's Redis key followed by this. */
const releasedSuffix = ':released';
/** Longest wait without news when the waiting Lock gives no pollMs: a lost message costs at most this. */
const defaultPollMs = 500;

/** The guard of a {@link RedisLock}: opaque, give it back to `release`. */
export class RedisLockGuard {
  /** @internal */
  released = false;
  /** @internal */
  constructor(
    /** @internal */ readonly owner: RedisLock,
    /** @internal */ readonly key: string,
    /** @internal */ readonly token: string,
  ) {}
}

// KEYS[1] the lock, ARGV[1] the owner's token. The message wakes the waiters subscribed to the key's channel.
const releaseScript = `if redis.call('get', KEYS[1]) == ARGV[1] then redis.call('del', KEYS[1]) redis.call('publish', KEYS[1] .. '${releasedSuffix}', '1') return 1 end return 0`;
// KEYS[1] the lock, ARGV[1] the owner's token, ARGV[2] the new ttl in milliseconds.
const expireScript = `if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) end return 0`;
const releaseCommand = 'koaBufferLockReleaseAndTell';
const expireCommand = 'koaBufferLockExpire';

type ScriptClient = RedisLockClient & Record<string, (key: string, ...args: string[]) => Promise<number>>;

/**
 * A lock backend in Redis, for workers on several hosts.
 *
 * @example
 * const locks = new RedisLock({ redis: 'redis://cache.internal:6379', ttl: 30 });
 * const [guard, error] = await locks.acquire('nightly-report');
 * if (guard) try { await build(); } finally { await locks.release(guard); }
 * await locks.close();
 */
export class RedisLock implements LockBackend<RedisLockGuard> {
  /** Seconds a lock lives unless released or extended. */
  readonly ttl: number;
  /** Prefix of every lock key in Redis. */
  readonly namespace: string;
  /** Longest a call may take, in milliseconds. */
  readonly timeoutMs: number;
  /**
   * As the `cacheLock` of `buffer()`, the lock of a cache key is taken at
   * `namespace + {key}`, in the hash slot of the entry's key on a Redis
   * Cluster. Keys you pass to `acquire` yourself are stored as given.
   */
  readonly hashTagCacheKeys = true;

  readonly #source: RedisSource;
  readonly #messages: Messages;
  #client: ScriptClient | undefined;
  #pending: Promise<ScriptClient> | undefined;
  /** The client was built here from a URL, so `close()` may quit it. */
  #ownClient = false;
  #lastError: string | undefined;
  #closed = false;

  /**
   * @param options - see {@link RedisLockOptions}
   * @throws BufferOptionError `option_lock_redis`, `option_lock_namespace`, `option_lock_ttl`,
   *   `option_lock_timeout_ms` or `option_messages`
   */
  constructor(options: RedisLockOptions) {
    const given = (options ?? {}) as Partial<RedisLockOptions>;
    this.#messages = messagesFrom(given.messages);
    const { redis, namespace = 'koa-buffer:', ttl = 60, timeoutMs = 1000 } = given;
    const refuse = (key: string, name: string, value: unknown): BufferOptionError =>
      new BufferOptionError(key, { name, value: shownValue(value) }, this.#messages);
    if (!isRedisSource(redis)) throw refuse('option_lock_redis', 'redis', redis);
    if (typeof namespace !== 'string') throw refuse('option_lock_namespace', 'namespace', namespace);
    if (!isTtl(ttl)) throw refuse('option_lock_ttl', 'ttl', ttl);
    if (!isTtl(timeoutMs)) throw refuse('option_lock_timeout_ms', 'timeoutMs', timeoutMs);
    this.#source = redis;
    this.namespace = namespace;
    this.ttl = ttl;
    this.timeoutMs = timeoutMs;
  }

  /**
   * Tries once to take the lock of `key` (stored at `namespace + key`).
   *
   * @param key - any string
   * @param options - `ttl`: seconds, instead of the constructor's
   * @returns `[guard, undefined]`, `[null, undefined]` when busy, or `[null, message]` when Redis failed or is unreachable
   */
  async acquire(key: string, options?: AcquireOptions): Promise<AcquireResult<RedisLockGuard>> {
    const problem = keyProblem(key, this.#messages);
    if (problem !== undefined) return [null, problem];
    const ttl = options?.ttl ?? this.ttl;
    if (!isTtl(ttl)) return [null, this.#messages.text('lock_ttl_invalid', { ttl: String(ttl) })];
    const redisKey = this.namespace + key;
    const token = randomBytes(16).toString('hex');
    try {
      const answer = await this.#call((client) => client.set(redisKey, token, 'PX', milliseconds(ttl), 'NX'));
      return answer === 'OK' ? [new RedisLockGuard(this, redisKey, token), undefined] : [null, undefined];
    } catch (error) {
      return [null, this.#messages.text('redis_lock_failed', { key: redisKey, error: this.#describe(error) })];
    }
  }

  /**
   * Deletes the lock if this guard still owns it.
   *
   * @returns `[true, undefined]`; `[false, message]` when the ttl ran out first (`redis_lock_lost`) or Redis failed
   *   (`redis_unlock_failed`; the guard stays usable for another try, and the ttl frees the lock anyway)
   */
  async release(guard: RedisLockGuard | null | undefined): Promise<ReleaseResult> {
    if (guard === null || guard === undefined) return [true, undefined];
    if (!(guard instanceof RedisLockGuard) || guard.owner !== this)
      return [false, this.#messages.text('lock_guard_invalid')];
    if (guard.released) return [true, undefined];
    try {
      const deleted = await this.#call((client) => client[releaseCommand]!(guard.key, guard.token));
      guard.released = true;
      return deleted === 1 ? [true, undefined] : [false, this.#messages.text('redis_lock_lost', { key: guard.key })];
    } catch (error) {
      return [false, this.#messages.text('redis_unlock_failed', { key: guard.key, error: this.#describe(error) })];
    }
  }

  /**
   * Resets the ttl of a held lock to `ttl` seconds, if this guard still owns it.
   *
   * @returns `[true, undefined]`, or `[false, message]` when the lock was lost, released, or Redis failed
   */
  async expire(guard: RedisLockGuard, ttl: number): Promise<ReleaseResult> {
    if (!(guard instanceof RedisLockGuard) || guard.owner !== this)
      return [false, this.#messages.text('lock_guard_invalid')];
    if (!isTtl(ttl)) return [false, this.#messages.text('lock_ttl_invalid', { ttl: String(ttl) })];
    if (guard.released) return [false, this.#messages.text('redis_lock_lost', { key: guard.key })];
    try {
      const extended = await this.#call((client) =>
        client[expireCommand]!(guard.key, guard.token, String(milliseconds(ttl))),
      );
      return extended === 1 ? [true, undefined] : [false, this.#messages.text('redis_lock_lost', { key: guard.key })];
    } catch (error) {
      return [false, this.#messages.text('redis_expire_failed', { key: guard.key, error: this.#describe(error) })];
    }
  }

  /**
   * Takes the lock of `key`, waiting up to `ms` milliseconds, woken by the
   * holder's release: `release` publishes on `namespace + key + ':released'`,
   * and the waiter listens there on a connection of its own (a duplicate of
   * the client), closed when it returns. A lock freed by its ttl says
   * nothing, and a message can be lost (a reconnection), so it also tries
   * again after `pollMs` without news; it only polls when it cannot subscribe.
   *
   * @param key - any string
   * @param ms - longest wait, in milliseconds
   * @param options - `ttl` as for `acquire`; `pollMs`, the longest stretch without a try (default 500)
   * @returns as `acquire`; `[null, undefined]` when still busy after `ms`
   */
  async waitForRelease(key: string, ms: number, options?: WaitOptions): Promise<AcquireResult<RedisLockGuard>> {
    const deadline = performance.now() + ms;
    const pollMs = options?.pollMs !== undefined && options.pollMs > 0 ? options.pollMs : defaultPollMs;
    const acquireOptions = options?.ttl === undefined ? undefined : { ttl: options.ttl };
    // A release seen while no one was listening for it (during a try) still counts.
    let released = false;
    let wake: (() => void) | undefined;
    const subscriber =
      typeof key === 'string'
        ? await this.#subscribe(this.namespace + key + releasedSuffix, () => {
            released = true;
            wake?.();
          })
        : undefined;
    try {
      for (;;) {
        released = false;
        // Subscribed first, then tried: a release between the caller's try and the subscription is not missed.
        const tried = await this.acquire(key, acquireOptions);
        if (tried[0] !== null || tried[1] !== undefined) return tried;
        const left = deadline - performance.now();
        if (left <= 0) return tried;
        if (released) continue;
        await new Promise<void>((resolve) => {
          const done = (): void => {
            clearTimeout(timer);
            wake = undefined;
            resolve();
          };
          const timer = setTimeout(done, Math.min(left, pollMs));
          wake = done;
        });
      }
    } finally {
      subscriber?.disconnect();
    }
  }

  /**
   * A connection of its own subscribed to `channel`, or undefined when none
   * could be made within `timeoutMs` (the caller then polls).
   */
  async #subscribe(channel: string, onMessage: () => void): Promise<Redis | undefined> {
    let subscriber: Redis | undefined;
    try {
      const client = (await this.#call(async (ready) => ready)) as unknown as Redis;
      if (typeof client.duplicate !== 'function') return undefined;
      const started = performance.now();
      subscriber = client.duplicate();
      subscriber.on('error', () => undefined);
      subscriber.on('message', onMessage);
      await this.#ready(subscriber as unknown as RedisLockClient, this.timeoutMs);
      await deadline(subscriber.subscribe(channel), this.timeoutMs - (performance.now() - started));
      return subscriber;
    } catch {
      subscriber?.disconnect();
      return undefined;
    }
  }

  /**
   * Quits the client RedisLock built from a URL; a client you gave (or a
   * factory returned) is yours to close. Later calls answer with a message.
   */
  async close(): Promise<void> {
    this.#closed = true;
    const client = this.#client ?? (await this.#pending?.catch(() => undefined));
    if (!this.#ownClient || client === undefined) return;
    const redis = client as unknown as Redis;
    await deadline(redis.quit(), this.timeoutMs).catch(() => undefined);
    redis.disconnect();
  }

  /** Runs one command against the client within `timeoutMs`, connecting first if needed. */
  async #call<T>(command: (client: ScriptClient) => Promise<T>): Promise<T> {
    if (this.#closed) throw new Error('the RedisLock was closed');
    const started = performance.now();
    const client = this.#client ?? (await deadline(this.#connect(), this.timeoutMs));
    if (client.status !== 'ready') await this.#ready(client, this.timeoutMs - (performance.now() - started));
    // A client built here times its commands out itself (commandTimeout); a given one may not.
    if (this.#ownClient) return command(client);
    return deadline(command(client), this.timeoutMs - (performance.now() - started));
  }

  /** The client, made or fetched once; a failed factory is tried again next time. */
  #connect(): Promise<ScriptClient> {
    this.#pending ??= this.#makeClient().then(
      (client) => (this.#client = client),
      (error: unknown) => {
        this.#pending = undefined;
        throw error;
      },
    );
    return this.#pending;
  }

  async #makeClient(): Promise<ScriptClient> {
    const source = this.#source;
    let client: RedisLockClient;
    if (typeof source === 'string') {
      // Loaded on first use: an application that hands over its own client needs nothing more installed.
      const { Redis } = await import('ioredis');
      const own = new Redis(source, {
        connectTimeout: this.timeoutMs,
        commandTimeout: this.timeoutMs,
        enableOfflineQueue: false,
        maxRetriesPerRequest: 0,
        autoResendUnfulfilledCommands: false,
        // The INFO round trip only guards against a Redis still loading its data set; a SET
        // against one fails with LOADING, which is a message like any other. One round trip less.
        enableReadyCheck: false,
        // Reconnect soon after Redis comes back, and keep trying.
        retryStrategy: (times) => Math.min(times * 50, 500),
      });
      // Errors reach the caller through the failing command; keep the last one to say why.
      own.on('error', (error: Error) => {
        this.#lastError = error.message;
      });
      this.#ownClient = true;
      client = own as unknown as RedisLockClient;
    } else if (typeof source === 'function') {
      client = await source();
      if (!isClient(client))
        throw new Error(
          this.#messages.text('option_lock_redis', { name: 'what redis() returned', value: shownValue(client) }),
        );
    } else {
      client = source;
    }
    const scripted = client as ScriptClient;
    if (typeof scripted[releaseCommand] !== 'function')
      client.defineCommand(releaseCommand, { numberOfKeys: 1, lua: releaseScript });
    if (typeof scripted[expireCommand] !== 'function')
      client.defineCommand(expireCommand, { numberOfKeys: 1, lua: expireScript });
    return scripted;
  }

  /**
   * Waits for a connecting client to become ready, for at most `ms`. Nothing
   * is sent before: a command queued in a disconnected client could run
   * minutes later and take a lock nobody would release.
   */
  #ready(client: RedisLockClient, ms: number): Promise<void> {
    // A lazyConnect client connects on its first command.
    if (client.status === 'wait' || client.status === 'ready') return Promise.resolve();
    // Between reconnection attempts the server is known to be down: say so at once rather
    // than make every caller wait out the deadline. Only an attempt under way is waited for.
    if (client.status !== 'connecting' && client.status !== 'connect') {
      return Promise.reject(new Error(`Redis is not reachable (${client.status})`));
    }
    return new Promise((resolve, reject) => {
      const settle = (error?: Error): void => {
        clearTimeout(timer);
        client.off('ready', ready);
        client.off('error', failed);
        client.off('close', closed);
        if (error) reject(error);
        else resolve();
      };
      const ready = (): void => settle();
      const failed = (error: unknown): void => settle(error instanceof Error ? error : new Error(String(error)));
      const closed = (): void => settle(new Error('Redis closed the connection'));
      const timer = setTimeout(
        () => afterPendingIo(() => settle(new Error(`Redis is not reachable (${client.status})`))),
        Math.max(0, ms),
      );
      client.once('ready', ready);
      client.once('error', failed);
      client.once('close', closed);
    });
  }

  #describe(error: unknown): string {
    const text = errorText(error);
    return this.#lastError !== undefined && !text.includes(this.#lastError) ? `${text} (${this.#lastError})` : text;
  }
}

function milliseconds(seconds: number): number {
  return Math.max(1, Math.round(seconds * 1000));
}

/** `promise`, or a rejection once `ms` milliseconds have passed. */
function deadline<T>(promise: Promise<T>, ms: number): Promise<T> {
  if (ms <= 0) return Promise.reject(new Error('Redis did not answer in time'));
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => afterPendingIo(() => reject(new Error(`Redis did not answer within ${Math.round(ms)} ms`))),
      ms,
    );
  });
  return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

/**
 * Runs `fn` after the I/O already waiting has been read. Timers run before
 * I/O in each turn of the event loop, so after a busy stretch a deadline
 * would otherwise fire while the answer it waits for sits unread.
 */
function afterPendingIo(fn: () => void): void {
  setImmediate(fn);
}

function isClient(value: unknown): value is RedisLockClient {
  if (value === null || typeof value !== 'object') return false;
  const v = value as Record<string, unknown>;
  return typeof v.set === 'function' && typeof v.defineCommand === 'function' && typeof v.once === 'function';
}

function isRedisSource(value: unknown): value is RedisSource {
  if (typeof value === 'function') return true;
  if (typeof value === 'string') return /^rediss?:\/\//i.test(value);
  return isClient(value);
}
