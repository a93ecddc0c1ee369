/**
 * The waiting lock, with the semantics of OpenResty's
 * lua-resty-lock over any lock backend: try, and while the key is busy sleep
 * a step that grows by `ratio` up to `maxStep`, until `timeout` — or, when
 * the backend can be woken by the release (`waitForRelease`), wait for that.
 * Either way the event loop keeps running while a lock waits.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { Messages } from '../base/messages.ts';
import { errorText, shownValue, valueLiteral } from '../base/describe.ts';
import { type MessagesOption, messagesFrom } from './checks.ts';
import type { AcquireResult, LockBackend, ReleaseResult } from './protocol.ts';

/** Options of {@link Lock}, all in seconds; the names and defaults of lua-resty-lock. */
export interface LockOptions {
  /** Longest total wait of one `lock()`; `0` tries once. May not exceed `exptime`. @defaultValue 5 */
  timeout?: number;
  /** First sleep while the key is busy. Must be above 0. @defaultValue 0.001 */
  step?: number;
  /** Factor each sleep grows by. At least 1. @defaultValue 2 */
  ratio?: number;
  /** Longest single sleep. Must be above 0. @defaultValue 0.5 */
  maxStep?: number;
  /** Time to live of a taken lock, for backends that have one (Redis, Memory). Must be above 0. @defaultValue 30 */
  exptime?: number;
  /** Message overrides for the texts it returns, or a {@link Messages}. */
  messages?: MessagesOption;
}

/**
 * `lock()`'s answer: `[elapsed, undefined]` with the seconds slept (0 when it
 * did not wait), or `[null, error]` where `error` is `'timeout'`, `'locked'`
 * (this instance already holds a lock) or the backend's message.
 */
export type LockResult =
  [elapsed: number, error: undefined] | [elapsed: null, error: 'timeout' | 'locked' | (string & {})];

/**
 * `unlock()` and `expire()`'s answer: `[true, undefined]`, or `[null, error]`
 * where `error` is `'unlocked'` (nothing held) or the backend's message.
 */
export type UnlockResult = [ok: true, error: undefined] | [ok: null, error: 'unlocked' | (string & {})];

const defaults = { timeout: 5, step: 0.001, ratio: 2, maxStep: 0.5, exptime: 30 } as const;
type NumericOption = keyof typeof defaults;

/**
 * A lock that waits, one lock per instance, as lua-resty-lock's `resty.lock`.
 *
 * @example
 * const lock = new Lock(new FileLock({ dir: '/run/myapp' }), { timeout: 10 });
 * const [elapsed, error] = await lock.lock('nightly-report');
 * if (elapsed === null) throw new Error(`no lock: ${error}`);
 * try { await buildReport(); } finally { await lock.unlock(); }
 */
export class Lock<G = unknown> {
  /** The backend the locks are taken from. */
  readonly backend: LockBackend<G>;
  /** Longest total wait of one `lock()`, in seconds. */
  readonly timeout: number;
  /** First sleep, in seconds. */
  readonly step: number;
  /** Growth factor of the sleeps. */
  readonly ratio: number;
  /** Longest single sleep, in seconds. */
  readonly maxStep: number;
  /** Time to live passed to the backend, and the default of `expire()`, in seconds. */
  readonly exptime: number;

  readonly #messages: Messages;
  /** The held guard and its key, or 'pending' while a `lock()` is under way. */
  #held: { guard: G; key: string } | 'pending' | undefined;

  /**
   * @param backend - a FileLock, RedisLock, MemoryLock or any {@link LockBackend}
   * @param options - see {@link LockOptions}
   * @throws TypeError when `backend` lacks acquire/release, an option is not a finite number, or an option is unknown
   * @throws RangeError when an option is negative, `step`, `maxStep` or `exptime` is 0, `ratio` is below 1,
   *   or `timeout` exceeds `exptime`
   */
  constructor(backend: LockBackend<G>, options: LockOptions = {}) {
    // null means no options, as for FileLock, rather than a TypeError about reading a property of null.
    options ??= {};
    this.#messages = messagesFrom(options.messages);
    const m = this.#messages;
    if (
      backend === null ||
      typeof backend !== 'object' ||
      typeof backend.acquire !== 'function' ||
      typeof backend.release !== 'function'
    ) {
      throw new TypeError(
        `koa-buffer: ${m.text('option_cache_lock', { name: 'backend', value: shownValue(backend) })}`,
      );
    }
    for (const name of Object.keys(options)) {
      if (!(name in defaults) && name !== 'messages')
        throw new TypeError(`koa-buffer: ${m.text('lock_option_unknown', { name })}`);
    }
    const value = (name: NumericOption): number => {
      const given: unknown = options[name];
      if (given === undefined) return defaults[name];
      if (typeof given !== 'number' || !Number.isFinite(given)) {
        throw new TypeError(`koa-buffer: ${m.text('lock_option_number', { name, value: valueLiteral(given) })}`);
      }
      if (given < 0) throw new RangeError(`koa-buffer: ${m.text('lock_option_negative', { name, value: given })}`);
      return given;
    };
    this.backend = backend;
    this.timeout = value('timeout');
    this.step = value('step');
    this.ratio = value('ratio');
    this.maxStep = value('maxStep');
    this.exptime = value('exptime');
    for (const name of ['step', 'maxStep', 'exptime'] as const) {
      if (this[name] === 0) throw new RangeError(`koa-buffer: ${m.text('lock_option_positive', { name, value: 0 })}`);
    }
    if (this.ratio < 1) throw new RangeError(`koa-buffer: ${m.text('lock_option_ratio', { value: this.ratio })}`);
    if (this.timeout > this.exptime) {
      throw new RangeError(
        `koa-buffer: ${m.text('lock_timeout_exceeds_exptime', { timeout: this.timeout, exptime: this.exptime })}`,
      );
    }
  }

  /** True while this instance holds a lock (or is waiting for one). */
  get locked(): boolean {
    return this.#held !== undefined;
  }

  /** The key this instance holds, if any. */
  get key(): string | undefined {
    return typeof this.#held === 'object' ? this.#held.key : undefined;
  }

  /**
   * Takes the lock of `key`, waiting up to `timeout` seconds while it is busy.
   *
   * When the backend has `waitForRelease` (FileLock where flock(1) is
   * installed, RedisLock), the wait is woken by the holder's release and
   * `elapsed` is the wall-clock seconds waited. Otherwise the sleeps are
   * `step`, then each previous one times `ratio`, capped by `maxStep` and by
   * the time left, and `elapsed` is their sum, not wall-clock time. Either
   * way 0 means the lock was free at once.
   *
   * @param key - any string
   * @returns `[elapsed, undefined]`, or `[null, 'timeout' | 'locked' | message]`; never throws
   */
  async lock(key: string): Promise<LockResult> {
    if (this.#held !== undefined) return [null, 'locked'];
    this.#held = 'pending';
    try {
      let [guard, error] = await this.#attempt(key);
      let elapsed = 0;
      const backend = this.backend;
      if (
        guard === null &&
        error === undefined &&
        this.timeout > 1e-9 &&
        typeof backend.waitForRelease === 'function'
      ) {
        // Woken by the release itself: the waiter starts within a few milliseconds of the holder's end
        // instead of up to maxStep later. maxStep still bounds a wait without news, where news can be lost.
        const started = performance.now();
        [guard, error] = await this.#settleAcquire(() =>
          backend.waitForRelease!(key, this.timeout * 1000, { ttl: this.exptime, pollMs: this.maxStep * 1000 }),
        );
        elapsed = (performance.now() - started) / 1000;
        return this.#finish(key, guard, error, elapsed);
      }
      let left = this.timeout;
      let step = Math.min(this.step, this.maxStep);
      // Sums of decimal steps drift by a few ulps; a remainder below a nanosecond is no time left.
      while (guard === null && error === undefined && left > 1e-9) {
        // The first sleep is `step` itself, as in lua-resty-lock; later ones are capped by what is left.
        await sleep(step * 1000);
        elapsed += step;
        left -= step;
        [guard, error] = await this.#attempt(key);
        step = Math.min(step * this.ratio, left, this.maxStep);
      }
      return this.#finish(key, guard, error, elapsed);
    } catch (thrown) {
      this.#held = undefined;
      return [null, this.#messages.text('lock_backend_failed', { error: errorText(thrown) })];
    }
  }

  /**
   * Releases the lock this instance holds. The instance holds nothing
   * afterwards, whatever the answer: a FileLock is freed even when unlocking
   * reports an error, and a Redis or Memory lock by its time to live.
   *
   * @returns `[true, undefined]`, or `[null, 'unlocked']` when nothing is held, or `[null, message]`
   */
  async unlock(): Promise<UnlockResult> {
    const held = this.#held;
    if (held === undefined || held === 'pending') return [null, 'unlocked'];
    this.#held = undefined;
    return this.#settle(() => this.backend.release(held.guard));
  }

  /**
   * Resets the time to live of the held lock to `ttl` seconds, or to the
   * `exptime` given to `new` (which `expire` never changes).
   *
   * @param ttl - seconds, above 0
   * @returns `[true, undefined]`, or `[null, 'unlocked']` when nothing is held, or `[null, message]`
   *   (the lock was lost, or the backend has no time to live)
   * @throws TypeError or RangeError when `ttl` is given and is not a number above 0
   */
  async expire(ttl?: number): Promise<UnlockResult> {
    if (ttl !== undefined) {
      if (typeof ttl !== 'number' || !Number.isFinite(ttl)) {
        throw new TypeError(
          `koa-buffer: ${this.#messages.text('lock_option_number', { name: 'ttl', value: valueLiteral(ttl) })}`,
        );
      }
      if (ttl <= 0)
        throw new RangeError(`koa-buffer: ${this.#messages.text('lock_option_positive', { name: 'ttl', value: ttl })}`);
    }
    const held = this.#held;
    if (held === undefined || held === 'pending') return [null, 'unlocked'];
    const backend = this.backend;
    if (typeof backend.expire !== 'function') return [null, this.#messages.text('lock_expire_unsupported')];
    return this.#settle(() => backend.expire!(held.guard, ttl ?? this.exptime));
  }

  #finish(key: string, guard: G | null, error: string | undefined, elapsed: number): LockResult {
    if (guard !== null) {
      this.#held = { guard, key };
      return [elapsed, undefined];
    }
    this.#held = undefined;
    return [null, error ?? 'timeout'];
  }

  #attempt(key: string): Promise<AcquireResult<G>> {
    return this.#settleAcquire(() => this.backend.acquire(key, { ttl: this.exptime }));
  }

  async #settleAcquire(call: () => unknown): Promise<AcquireResult<G>> {
    const result: unknown = await call();
    if (!Array.isArray(result))
      return [null, this.#messages.text('lock_backend_failed', { error: valueLiteral(result) })];
    const [guard, error] = result as [unknown, unknown];
    // Hand-written backends often say "busy" with undefined or false rather than null.
    if (guard === null || guard === undefined || guard === false) {
      return error === undefined || error === null ? [null, undefined] : [null, String(error)];
    }
    return [guard as G, undefined];
  }

  async #settle(call: () => ReleaseResult | Promise<ReleaseResult>): Promise<UnlockResult> {
    try {
      const [ok, error] = await call();
      return ok
        ? [true, undefined]
        : [null, error ?? this.#messages.text('lock_backend_failed', { error: 'no reason given' })];
    } catch (thrown) {
      return [null, this.#messages.text('lock_backend_failed', { error: errorText(thrown) })];
    }
  }
}
