/**
 * Diagnostics that help only when a test fails: a table of statuses, the
 * log lines of child servers, timings. Printed with `t.log` from a teardown,
 * and only when the test has failed, so a passing run shows no rows of
 * `503` or `error` that a reader would have to check are expected.
 */
import type { ExecutionContext } from 'ava';

/**
 * Logs `text` after the test, if it failed.
 *
 * @param t - the test
 * @param text - the diagnostics, or a function making them (called only on failure)
 */
export function logOnFailure(t: ExecutionContext, text: string | (() => string)): void {
  t.teardown(() => {
    if (!t.passed) t.log(typeof text === 'function' ? text() : text);
  });
}
