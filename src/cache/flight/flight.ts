/**
 * Single flight (docs/architecture.md, "Three single-flight scopes"): one `Flight` per key
 * in this process, in a table that every request of the process consults.
 *
 * The first request of a key in the process opens the flight and either
 * builds the page (no cross-process lock, or it took the lock, or the lock
 * failed) or, when another process holds the lock, watches the shared store
 * for the entry, as the process's single remote watcher. Every later request
 * of the key in this process just waits for the flight's outcome, so N
 * requests over P processes poll the store from at most P watchers.
 *
 * A flight ends with an outcome (the entry, or why there is none) when the
 * build is stored or fails, when the watcher sees the entry or gives up, or
 * when `cacheLockTimeout` passes. Its lock is released on every path; a late
 * builder still stores its page.
 */
import type { CacheLock } from '../../config/options.ts';
import type { DecisionLog } from '../../base/decision-log.ts';
import type { CacheEntry } from '../entry.ts';
import { tryLock, unlock } from './lock-calls.ts';
import { lookup, type Slot } from '../hit/lookup.ts';

/** Why a flight ended without an entry, as a Cache-Status detail token. */
export type FlightFailure =
  /** cacheLockTimeout passed first. */
  | 'TIMEOUT'
  /** The action threw. */
  | 'ERROR'
  /** The response was not buffered (a stream, an empty body, koa-buffer turned off…). */
  | 'NOT-BUFFERED'
  /** The lock was found free and the store still had no entry: the other process's build failed. */
  | 'NO-ENTRY'
  /** The lock backend failed while watching. */
  | 'LOCK-ERROR'
  /** The builder's client left before its response was sent: nothing was kept, a waiter builds. */
  | 'ABANDONED'
  /** The key is marked not storable (a hit-for-miss marker): its waiters run the action. */
  | 'HIT-FOR-MISS'
  /** The response may not be stored (see ../storable.ts), or the store refused it. */
  | (string & {});

/** How a flight ended. */
export type Outcome =
  | {
      readonly entry: CacheEntry;
      /**
       * The builder's request headers named by the response's Vary (Accept-Encoding
       * aside); a waiter whose own differ is not handed the page. Absent for an
       * entry read from the store: the key already covers it.
       */
      readonly vary?: Readonly<Record<string, string | undefined>>;
    }
  | { readonly failure: FlightFailure };

/** What a watcher's flight ends with when it finds the key marked not storable. */
const notStorableMark = 'HIT-FOR-MISS';

/** The first pause of a watcher between two looks at the store, ms. */
export const firstPauseMs = 1;
/** The longest pause of a watcher between two looks, ms: bounds how late a waiter learns that the entry is there. */
export const maxPauseMs = 8;

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** What every flight of one middleware shares. */
export interface FlightContext {
  readonly table: Map<string, Flight>;
  readonly lock: CacheLock | undefined;
  readonly log: DecisionLog;
}

/** One key in flight in this process. */
export class Flight {
  readonly slot: Slot;
  /** performance.now() ms at which the flight gives up. */
  readonly deadline: number;
  /** Settles once, with the outcome every waiter is answered from. */
  readonly done: Promise<Outcome>;
  /** The outcome, once there is one. */
  outcome: Outcome | undefined;

  readonly #context: FlightContext;
  #resolve!: (outcome: Outcome) => void;
  #guard: unknown = null;
  #closed = false;
  #release: Promise<void> | undefined;
  readonly #timer: NodeJS.Timeout;
  /** The opener's turn when it watches: an outcome, or 'build' when the watcher takes the build over. */
  #turn: ((turn: Outcome | 'build') => void) | undefined;

  /**
   * Opens a flight and enters it in the table.
   *
   * @param context - the table, the lock and the log
   * @param slot - the store and key
   * @param timeoutMs - cacheLockTimeout in ms
   */
  constructor(context: FlightContext, slot: Slot, timeoutMs: number) {
    this.#context = context;
    this.slot = slot;
    this.deadline = performance.now() + timeoutMs;
    this.done = new Promise((resolve) => (this.#resolve = resolve));
    context.table.set(slot.key, this);
    this.#timer = setTimeout(() => this.#expire(), timeoutMs);
    // A flight never keeps a process alive on its own: its requests do.
    this.#timer.unref();
  }

  /** Milliseconds left before the flight gives up, at least 1. */
  get remainingMs(): number {
    return Math.max(1, this.deadline - performance.now());
  }

  /**
   * Tries to take the cross-process lock for this flight.
   *
   * @returns 'taken' (the flight holds it until it closes), 'busy', or the backend's failure
   */
  async takeLock(): Promise<'taken' | 'busy' | { error: string }> {
    const lock = this.#context.lock!;
    // One call to the backend is bounded like a store call: a backend that hangs costs this miss
    // cacheStoreTimeout and a log line, not the whole cacheLockTimeout a waiter may wait.
    const ms = Math.min(this.remainingMs, this.#storeMs());
    const attempt = await tryLock(lock, this.slot.key, ms, this.#context.log);
    if (attempt === 'busy' || 'error' in attempt) return attempt;
    if (this.#closed) {
      // The flight ended while the backend answered: nobody will release it later.
      void unlock(lock, attempt.guard, this.slot.key, this.#storeMs(), this.#context.log);
      return 'busy';
    }
    this.#guard = attempt.guard;
    return 'taken';
  }

  /**
   * Ends the flight with `outcome`, once; later calls change nothing. A
   * failure also closes the flight at once (the lock is released, the next
   * request starts afresh), unless `keepLock` says the caller closes it
   * after one more store write (a hit-for-miss marker); an entry keeps it
   * open until {@link close}, so requests arriving meanwhile are answered
   * from memory.
   *
   * @returns true when this call settled it
   */
  settle(outcome: Outcome, { keepLock = false }: { keepLock?: boolean } = {}): boolean {
    if (this.outcome !== undefined) return false;
    this.outcome = outcome;
    this.#resolve(outcome);
    this.#turn?.(outcome);
    if ('failure' in outcome && !keepLock) void this.close();
    return true;
  }

  /**
   * Leaves the table and releases the lock, once. Idempotent.
   *
   * @returns when the lock has been released
   */
  close(): Promise<void> {
    if (this.#release) return this.#release;
    this.#closed = true;
    clearTimeout(this.#timer);
    const { table, lock, log } = this.#context;
    if (table.get(this.slot.key) === this) table.delete(this.slot.key);
    const guard = this.#guard;
    this.#guard = null;
    this.#release = guard && lock ? unlock(lock, guard, this.slot.key, this.#storeMs(), log) : Promise.resolve();
    return this.#release;
  }

  /**
   * Watches the shared store while another process builds (the
   * watcher of docs/architecture.md, "The waiter's path"), with pauses of 1 ms doubling up
   * to 8 ms. Each look that finds no entry tries the lock: still busy, look
   * again; free, look once more with the lock held, then end the flight with
   * the entry, or without one (503), or with `cacheWaitFailure: 'run'` hand
   * the build to the opener, which keeps the lock.
   *
   * @param waitFailure - the opener's cacheWaitFailure
   * @returns the opener's turn: an outcome, or 'build'
   */
  watch(waitFailure: 'retry-later' | 'run'): Promise<Outcome | 'build'> {
    const turn = new Promise<Outcome | 'build'>((resolve) => (this.#turn = resolve));
    void this.#watch(waitFailure).catch((error: unknown) => {
      this.#context.log.error('log_finish_waiter_failed', {
        key: this.slot.key,
        url: this.slot.url,
        error: String(error),
      });
      this.settle({ failure: 'ERROR' });
    });
    return turn;
  }

  async #watch(waitFailure: 'retry-later' | 'run'): Promise<void> {
    const { log } = this.#context;
    let pause = firstPauseMs;
    let storeFailed = false;
    while (this.outcome === undefined) {
      const seen = await lookup(this.slot);
      if (this.outcome !== undefined) return;
      if ('found' in seen) return this.#found(seen.found);
      if ('pass' in seen) return void this.settle({ failure: notStorableMark });
      if ('error' in seen && !storeFailed) {
        // Logged once per flight: a dead store would otherwise log every few ms.
        storeFailed = true;
        log.error('log_cache_get_failed', {
          key: this.slot.key,
          error: String((seen.error as Error)?.message ?? seen.error),
        });
      }
      const taken = await this.takeLock();
      if (this.outcome !== undefined) return;
      if (typeof taken === 'object') {
        log.error('log_wait_lock_failed', { key: this.slot.key, url: this.slot.url, error: taken.error });
        // 503 by default (docs/decisions/0011-waiters-503-or-their-own-build.md); 'run' builds here with a per-process flight instead.
        if (waitFailure === 'run') return this.#handOver();
        this.settle({ failure: 'LOCK-ERROR' });
        return;
      }
      if (taken === 'taken') {
        // The lock is free: the build ended. One last look, with the lock held, before giving up.
        const last = await lookup(this.slot);
        if (this.outcome !== undefined) return;
        if ('found' in last) return this.#found(last.found);
        if ('pass' in last) return void this.settle({ failure: notStorableMark });
        if (waitFailure === 'run') return this.#handOver();
        this.settle({ failure: 'NO-ENTRY' });
        return;
      }
      await sleep(Math.min(pause, this.remainingMs));
      pause = Math.min(pause * 2, maxPauseMs);
    }
  }

  #found(entry: CacheEntry): void {
    this.settle({ entry });
    void this.close();
  }

  /** The opener builds; the flight (and any lock it holds) stays, so the other waiters wait for that build. */
  #handOver(): void {
    const turn = this.#turn;
    this.#turn = undefined;
    turn?.('build');
  }

  /** cacheLockTimeout passed: waiters get 503, the lock is released. */
  #expire(): void {
    if (this.settle({ failure: 'TIMEOUT' })) this.#context.log.stats.builds.timedOut++;
  }

  #storeMs(): number {
    return this.slot.options.cacheStoreTimeout * 1000;
  }
}
