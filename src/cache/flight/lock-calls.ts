/**
 * The cache-lock protocol (locks/protocol.ts) as the middleware uses it: answers sync
 * or async, a throw or a malformed answer counts as a failure of the
 * backend, and every call is bounded in time so a hanging backend cannot
 * hold a request past its flight.
 */
import type { CacheLock } from '../../config/options.ts';
import type { DecisionLog } from '../../base/decision-log.ts';
import { errorText } from '../../base/describe.ts';
import { bounded } from '../../base/bounded.ts';
import { lockChannel, tracedEnd, tracedStart, type CallMessage } from '../../base/channels.ts';
import { countFailure } from '../../base/stats.ts';
import { lockBackend } from '../backends.ts';
import { hashTagged } from '../hash-tag.ts';

/** What one try at the lock found. */
export type Attempt = { readonly guard: unknown } | 'busy' | { readonly error: string };

/**
 * Tries once, without waiting, to take the lock of `key`.
 *
 * @param lock - the backend
 * @param key - the cache key
 * @param ms - how long the backend may take; a guard that arrives later is released at once
 * @param log - where a late release's failure goes
 */
export async function tryLock(lock: CacheLock, key: string, ms: number, log: DecisionLog): Promise<Attempt> {
  let answer: unknown;
  // A Redis backend gets the key in the hash tag of the entry's key: one Cluster slot for both.
  const lockKey = lock.hashTagCacheKeys === true ? hashTagged(key) : key;
  const backend = lockBackend(lock);
  const counts = log.stats.lockCalls(backend);
  counts.calls++;
  const traced = tracedStart(lockChannel, (): CallMessage => ({ operation: 'acquire', backend, key }));
  try {
    answer = await bounded(
      () => lock.acquire(lockKey) as unknown,
      Math.max(1, ms),
      'cache lock acquire',
      (late) => {
        // The backend took the lock after we stopped waiting: give it back, or it is held until its ttl.
        if (Array.isArray(late) && late[0]) void unlock(lock, late[0], key, ms, log);
      },
    );
  } catch (error) {
    countFailure(counts, error);
    tracedEnd(lockChannel, traced, error);
    return { error: errorText(error) };
  }
  tracedEnd(lockChannel, traced);
  if (!Array.isArray(answer)) {
    counts.errors++;
    return { error: `acquire answered ${answer === null ? 'null' : typeof answer}, not [guard, error]` };
  }
  const [guard, error] = answer as [unknown, unknown];
  if (guard) return { guard };
  if (error !== undefined && error !== null) {
    counts.errors++;
    return { error: String(error) };
  }
  return 'busy';
}

/**
 * Gives a guard back. A failure is logged; the backend's own expiry (a
 * Redis ttl, a closed descriptor) frees the lock in the end.
 */
export async function unlock(
  lock: CacheLock,
  guard: unknown,
  key: string,
  ms: number,
  log: DecisionLog,
): Promise<void> {
  const backend = lockBackend(lock);
  const counts = log.stats.lockCalls(backend);
  counts.calls++;
  const traced = tracedStart(lockChannel, (): CallMessage => ({ operation: 'release', backend, key }));
  try {
    const answer = await bounded(() => lock.release(guard) as unknown, Math.max(1, ms), 'cache lock release');
    // A backend that answers nothing has released the lock, as the protocol's release allows.
    if (Array.isArray(answer) && answer[0] === false) {
      counts.errors++;
      log.error('log_unlock_failed', { key, error: String(answer[1]) });
    }
    tracedEnd(lockChannel, traced);
  } catch (error) {
    countFailure(counts, error);
    tracedEnd(lockChannel, traced, error);
    log.error('log_unlock_failed', { key, error: error });
  }
}
