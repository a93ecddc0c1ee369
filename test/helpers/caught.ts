/** Catching what a call throws, for tests that look at the error itself. */
import { BufferOptionError } from '../../src/base/errors.ts';
import { buffer } from '../../src/buffer.ts';

/**
 * What `fn` throws; fails the test (by throwing) when it returns instead.
 *
 * @param fn - the call expected to throw
 */
export function caught(fn: () => unknown): Error & { code?: string } {
  try {
    fn();
  } catch (error) {
    return error as Error & { code?: string };
  }
  throw new Error('expected a throw');
}

/**
 * The BufferOptionError `buffer(options)` throws, or undefined when it
 * accepts them; any other error is thrown on.
 *
 * @param options - anything, as a JavaScript caller may pass it
 */
export function optionProblem(options: unknown): BufferOptionError | undefined {
  try {
    buffer(options as never);
    return undefined;
  } catch (error) {
    if (error instanceof BufferOptionError) return error;
    throw error;
  }
}
