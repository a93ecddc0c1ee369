/**
 * The background refresh of stale-while-revalidate (docs/architecture.md,
 * "Stale entries"): a visitor that was answered a stale entry starts it, and
 * nobody waits for it. It runs the application's middleware on a request of
 * its own, made in this process (no socket, nothing sent): the same URL and
 * request headers, minus the conditional ones, so the action sees the request
 * the stale entry was built for. koa-buffer recognises that request by a
 * private symbol on it, which no client can send, and builds the entry under
 * the visitor's key through the usual flight and lock, so one refresh per key
 * runs across this process, the host and the hosts.
 */
import { IncomingMessage, ServerResponse } from 'node:http';
import { Socket } from 'node:net';
import type { Context, Middleware } from 'koa';
import { errorText } from '../describe.ts';
import type { CacheRuntime } from './runtime.ts';

/** Marks the refresh's own request; its value is the key to rebuild. */
export const revalidationKey = Symbol('koa-buffer revalidation');

/** A Node.js request that may be a refresh's own. */
type MaybeRevalidation = IncomingMessage & { [revalidationKey]?: string };

/** The key a refresh rebuilds, when `ctx` is a refresh's own request. */
export function revalidatedKey(ctx: Context): string | undefined {
  return (ctx.req as MaybeRevalidation)[revalidationKey];
}

/** Request headers the refresh does not repeat: it wants the whole page, not a 304 or a range. */
const notRepeated = new Set([
  'if-none-match',
  'if-modified-since',
  'if-match',
  'if-unmodified-since',
  'if-range',
  'range',
]);

/**
 * Starts the refresh of `key` unless one is under way in this process (or a
 * build of the key is). Returns at once; failures are logged, never thrown.
 *
 * @param ctx - the visitor's request, answered stale
 * @param runtime - the middleware's cache
 * @param key - the stale entry's key
 */
export function revalidate(ctx: Context, runtime: CacheRuntime, key: string): void {
  if (runtime.revalidating.has(key) || runtime.table.has(key)) return;
  runtime.revalidating.add(key);
  runtime.log.debug('log_revalidating', { key });
  const failed = (error: unknown): void => runtime.log.error('log_revalidate_failed', { key, error: errorText(error) });
  let request: MaybeRevalidation;
  try {
    request = refreshRequest(ctx, key);
  } catch (error) {
    runtime.revalidating.delete(key);
    return failed(error);
  }
  // A turn later, so the visitor's answer goes first.
  setImmediate(() => {
    runApplication(ctx, request)
      .catch(failed)
      .finally(() => runtime.revalidating.delete(key));
  });
}

/** A GET of the visitor's URL with its headers, marked as the refresh of `key`. */
function refreshRequest(ctx: Context, key: string): MaybeRevalidation {
  const request: MaybeRevalidation = new IncomingMessage(new Socket());
  request.method = 'GET';
  request.url = ctx.originalUrl;
  request.httpVersion = ctx.req.httpVersion;
  const headers: Record<string, string | string[] | undefined> = {};
  for (const [name, value] of Object.entries(ctx.req.headers)) if (!notRepeated.has(name)) headers[name] = value;
  request.headers = headers;
  request.push(null); // a GET has no body
  request[revalidationKey] = key;
  return request;
}

/**
 * Runs every middleware of the visitor's application on `request`, then
 * ends the response as Koa would, to no socket: the build is judged on the
 * head as sent (../response/sent-head.ts), and the response is dropped.
 */
async function runApplication(ctx: Context, request: IncomingMessage): Promise<void> {
  const app = ctx.app;
  const response = new ServerResponse(request);
  const refreshCtx = app.createContext(request, response);
  // Koa 3.1 composes with app.compose; earlier versions compose the same way.
  const compose = (app as { compose?: (stack: Middleware[]) => (context: Context) => Promise<unknown> }).compose;
  try {
    await (compose ? compose(app.middleware) : chain(app.middleware))(refreshCtx);
  } finally {
    // Thrown or not, the head goes out (Koa would send an error page): a build waiting on it is judged.
    if (!response.writableEnded) response.end();
  }
}

/** Koa's composition: each middleware gets a `next` that runs the rest. */
function chain(stack: readonly Middleware[]): (context: Context) => Promise<unknown> {
  return (context) => {
    const dispatch = (index: number): Promise<unknown> =>
      index === stack.length ? Promise.resolve() : Promise.resolve(stack[index]!(context, () => dispatch(index + 1)));
    return dispatch(0);
  };
}
