/**
 * The start-up probe of a `cache` object koa-buffer does not recognise: one
 * entry is written, read back and removed under a key of its own, so that a
 * store which cannot keep koa-buffer's entries (a wrong `set` signature, a
 * get that returns something else) is refused when the middleware starts,
 * not discovered as a failure on every request.
 */
import { randomBytes } from 'node:crypto';
import { decodeEntry, encodeEntry } from '../entry.ts';
import type { CacheStore } from '../../base/store.ts';
import { isThenable } from '../../base/thenable.ts';

/** A value for a message: its type, or its class. */
function describe(value: unknown): string {
  if (value === null) return 'null';
  if (typeof value !== 'object') return typeof value;
  return (value as object).constructor?.name ?? 'an object';
}

/** What the probe found wrong; `thrown` when a method threw or rejected (perhaps a backend down for now). */
export interface ProbeProblem {
  readonly problem: string;
  readonly thrown: boolean;
}

function failure(method: string, error: unknown): ProbeProblem {
  return { problem: `${method}() failed: ${error instanceof Error ? error.message : String(error)}`, thrown: true };
}

type Step = [method: string, call: () => unknown, check: (answer: unknown) => ProbeProblem | undefined];

/**
 * Probes `store` once.
 *
 * @param store - an object with get, set and delete
 * @returns undefined when it keeps an entry, else what is wrong; a Promise
 *   of either when the store answers asynchronously
 */
export function probeStore(store: CacheStore): ProbeProblem | undefined | Promise<ProbeProblem | undefined> {
  const key = `koa-buffer:probe:${randomBytes(8).toString('hex')}`;
  const now = Date.now();
  const value = encodeEntry({
    status: 200,
    headers: {},
    body: Buffer.from('probe'),
    created: now,
    expires: now + 60_000,
  });
  const steps: Step[] = [
    ['set', () => store.set(key, value, 60_000), () => undefined],
    ['get', () => store.get(key), (answer) => kept(answer)],
    ['delete', () => store.delete(key), () => undefined],
  ];
  return run(steps, 0);
}

/** What is wrong with what get returned, or undefined when it is the entry set stored. */
function kept(answer: unknown): ProbeProblem | undefined {
  const entry = decodeEntry(answer);
  if (entry?.body.toString() === 'probe') return undefined;
  return {
    problem: `get() did not return what set(key, bytes, ttlMs) stored (it returned ${describe(answer)})`,
    thrown: false,
  };
}

function run(steps: Step[], from: number): ProbeProblem | undefined | Promise<ProbeProblem | undefined> {
  for (let i = from; i < steps.length; i++) {
    const [method, call, check] = steps[i]!;
    let answer: unknown;
    try {
      answer = call();
    } catch (error) {
      return failure(method, error);
    }
    if (isThenable(answer))
      return Promise.resolve(answer).then(
        (settled) => check(settled) ?? run(steps, i + 1),
        (error: unknown) => failure(method, error),
      );
    const problem = check(answer);
    if (problem !== undefined) return problem;
  }
  return undefined;
}
