/**
 * Store and lock calls bounded in time (the `cacheStoreTimeout` option), so
 * a store that hangs costs a miss and a log line, never a hung request. A
 * synchronous answer (the memory and SQLite stores, FileLock) is returned
 * as it is, without a timer or a Promise.
 */
import { isThenable } from './thenable.ts';

/** The error a call that took too long rejects with. */
export class CallTimeout extends Error {
  readonly code = 'KB_CACHE_TIMEOUT';
  constructor(what: string, ms: number) {
    super(`${what} did not answer within ${ms} ms`);
  }
}
Object.defineProperty(CallTimeout.prototype, 'name', {
  value: 'CallTimeout',
  enumerable: false,
  writable: true,
  configurable: true,
});

/**
 * Calls `call` and bounds its answer to `ms` milliseconds.
 *
 * @param call - the store or lock call
 * @param ms - the time limit
 * @param what - names the call in the timeout's message
 * @param late - receives an answer that arrives after the time limit (to release a late lock guard)
 * @returns the answer itself when it is synchronous; else a Promise that
 *   rejects with {@link CallTimeout} when the limit passes first
 * @throws what `call` throws, synchronously
 */
export function bounded<T>(
  call: () => T | PromiseLike<T>,
  ms: number,
  what: string,
  late?: (value: T) => void,
): T | Promise<T> {
  return boundedAnswer(call(), ms, what, late);
}

/**
 * {@link bounded} for a call already made: its answer as it is when
 * synchronous, else bounded to `ms`. A hot path calls the store itself and
 * passes the answer here, so no closure is made per call.
 */
export function boundedAnswer<T>(
  answer: T | PromiseLike<T>,
  ms: number,
  what: string,
  late?: (value: T) => void,
): T | Promise<T> {
  if (!isThenable(answer)) return answer;
  return new Promise<T>((resolve, reject) => {
    let done = false;
    const timer = setTimeout(() => {
      done = true;
      reject(new CallTimeout(what, ms));
    }, ms);
    timer.unref();
    answer.then(
      (value) => {
        if (!done) {
          done = true;
          clearTimeout(timer);
          resolve(value as T);
        } else {
          late?.(value as T);
        }
      },
      (error: unknown) => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        reject(error);
      },
    );
  });
}
