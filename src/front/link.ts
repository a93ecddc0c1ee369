/**
 * The link from a `buffer()` middleware to the parts it shares between its
 * requests, which a front (front.ts) answers from. Kept under a symbol on
 * the middleware function, so finding it among `app.middleware` needs no
 * registry, and a function that is not a buffer() middleware has none.
 */
import type { Shared } from '../pipeline/work.ts';

const sharedKey = Symbol('koa-buffer shared parts');

/** Links `middleware` to its shared parts (called once, by buffer()). */
export function linkShared(middleware: object, shared: Shared): void {
  Object.defineProperty(middleware, sharedKey, { value: shared });
}

/** The shared parts of a buffer() middleware; undefined for anything else. */
export function sharedOf(value: unknown): Shared | undefined {
  if (typeof value !== 'function') return undefined;
  return (value as unknown as { [sharedKey]?: Shared })[sharedKey];
}
