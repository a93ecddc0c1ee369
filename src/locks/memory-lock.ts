/**
 * MemoryLock: the lock backend for one process, like a
 * lua_shared_dict in lua-resty-lock. Its locks live in the instance, so
 * every user must share one instance; it honours a time to live so a holder
 * that forgets to release cannot block a key for ever.
 */
import type { Messages } from '../base/messages.ts';
import { type MessagesOption, isTtl, keyProblem, messagesFrom } from './checks.ts';
import type { AcquireOptions, AcquireResult, LockBackend, ReleaseResult } from './protocol.ts';

interface Entry {
  /** Tells this holding apart from a later one of the same key. */
  token: number;
  /** `performance.now()` milliseconds; Infinity when the lock has no ttl. */
  expiresAt: number;
}

/** The guard of a {@link MemoryLock}: opaque, give it back to `release`. */
export class MemoryLockGuard {
  /** @internal */
  constructor(
    /** @internal */ readonly owner: MemoryLock,
    /** @internal */ readonly key: string,
    /** @internal */ readonly token: number,
  ) {}
  /** @internal */
  released = false;
}

/** Options of {@link MemoryLock}. */
export interface MemoryLockOptions {
  /** Message overrides, or a {@link Messages}. */
  messages?: MessagesOption;
}

/**
 * A lock backend inside one process: for a single-process server, for the
 * waiting {@link Lock} between async tasks, and for tests.
 *
 * Locks belong to the instance: create one and share it. A lock taken with
 * `acquire(key, {ttl})` expires after `ttl` seconds unless released or
 * extended with `expire`; without a ttl it lasts until released. Like the
 * other backends it is not re-entrant: a held key is busy for everyone,
 * this instance included.
 *
 * @example
 * const locks = new MemoryLock();
 * const [guard] = locks.acquire('report', { ttl: 30 });
 * if (guard) try { await build(); } finally { locks.release(guard); }
 */
export class MemoryLock implements LockBackend<MemoryLockGuard> {
  readonly #entries = new Map<string, Entry>();
  readonly #messages: Messages;
  #nextToken = 1;
  /** Expired entries are swept when the map has doubled since the last sweep. */
  #sweepAt = 1024;

  /**
   * @param options - `messages`: overrides for the texts it returns
   * @throws BufferOptionError `option_messages` when `messages` is not usable
   */
  constructor(options: MemoryLockOptions = {}) {
    // null means no options, as for FileLock, rather than a TypeError about reading a property of null.
    this.#messages = messagesFrom((options ?? {}).messages);
  }

  /**
   * Takes the lock of `key` if it is free or its ttl ran out.
   *
   * @param key - any string
   * @param options - `ttl`: seconds until the lock frees itself
   * @returns `[guard, undefined]`, `[null, undefined]` when busy, or `[null, message]` for a bad key or ttl
   */
  acquire(key: string, options?: AcquireOptions): AcquireResult<MemoryLockGuard> {
    const problem = keyProblem(key, this.#messages);
    if (problem !== undefined) return [null, problem];
    const ttl = options?.ttl;
    if (ttl !== undefined && !isTtl(ttl)) return [null, this.#messages.text('lock_ttl_invalid', { ttl: String(ttl) })];
    const now = performance.now();
    const held = this.#entries.get(key);
    if (held !== undefined && held.expiresAt > now) return [null, undefined];
    if (this.#entries.size >= this.#sweepAt) this.#sweep(now);
    const token = this.#nextToken++;
    this.#entries.set(key, { token, expiresAt: ttl === undefined ? Infinity : now + ttl * 1000 });
    return [new MemoryLockGuard(this, key, token), undefined];
  }

  /**
   * Releases a lock taken by `acquire`.
   *
   * @returns `[true, undefined]`; `[false, message]` when the lock's ttl ran out
   *   before the release (someone else may have held it since) or the guard is foreign
   */
  release(guard: MemoryLockGuard | null | undefined): ReleaseResult {
    if (guard === null || guard === undefined) return [true, undefined];
    if (!(guard instanceof MemoryLockGuard) || guard.owner !== this)
      return [false, this.#messages.text('lock_guard_invalid')];
    if (guard.released) return [true, undefined];
    guard.released = true;
    const held = this.#entries.get(guard.key);
    if (held === undefined || held.token !== guard.token || held.expiresAt <= performance.now()) {
      if (held !== undefined && held.token === guard.token) this.#entries.delete(guard.key);
      return [false, this.#messages.text('lock_lost', { key: guard.key })];
    }
    this.#entries.delete(guard.key);
    return [true, undefined];
  }

  /**
   * Resets the ttl of a held lock to `ttl` seconds from now.
   *
   * @returns `[true, undefined]`, or `[false, message]` when the guard no longer owns the lock or `ttl` is bad
   */
  expire(guard: MemoryLockGuard, ttl: number): ReleaseResult {
    if (!(guard instanceof MemoryLockGuard) || guard.owner !== this)
      return [false, this.#messages.text('lock_guard_invalid')];
    if (!isTtl(ttl)) return [false, this.#messages.text('lock_ttl_invalid', { ttl: String(ttl) })];
    const held = this.#entries.get(guard.key);
    const now = performance.now();
    if (guard.released || held === undefined || held.token !== guard.token || held.expiresAt <= now) {
      return [false, this.#messages.text('lock_lost', { key: guard.key })];
    }
    held.expiresAt = now + ttl * 1000;
    return [true, undefined];
  }

  /** Number of keys held right now (expired ones not counted). */
  get size(): number {
    this.#sweep(performance.now());
    return this.#entries.size;
  }

  #sweep(now: number): void {
    for (const [key, entry] of this.#entries) if (entry.expiresAt <= now) this.#entries.delete(key);
    this.#sweepAt = Math.max(1024, this.#entries.size * 2);
  }
}
