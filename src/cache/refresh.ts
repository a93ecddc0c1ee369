/**
 * The background refresh of stale-while-revalidate (docs/architecture.md,
 * "Stale entries"): a visitor that was answered a stale entry starts it, and
 * nobody waits for it. It runs the application's middleware on a request of
 * its own, made in this process (no socket, nothing sent): the visitor's
 * request replayed, with its URL, headers, HTTP version, and what its
 * connection said (TLS or not, the client's address), minus what asks for
 * less than the whole page, so the action builds the page that visitor would
 * get. koa-buffer recognises that request by a private symbol on it, which no
 * client can send, and builds the entry under the visitor's key through the
 * usual flight and lock, so one refresh per key runs across this process, the
 * host and the hosts.
 */
import { IncomingMessage, ServerResponse } from 'node:http';
import { Socket } from 'node:net';
import type { TLSSocket } from 'node:tls';
import type { Context, Middleware } from 'koa';
import type { CacheEntry } from './entry.ts';
import type { CacheRuntime } from './runtime.ts';

/** Marks the refresh's own request; its value is the key to rebuild and the stale entry that was answered. */
const refreshKey = Symbol('koa-buffer refresh');

/** What a refresh rebuilds: the key, and the stale entry its build may revalidate rather than render again. */
export interface Refresh {
  readonly key: string;
  readonly entry: CacheEntry;
}

/** A Node.js request that may be a refresh's own. */
type MaybeRefresh = IncomingMessage & { [refreshKey]?: Refresh };

/** What a refresh rebuilds, when `ctx` is a refresh's own request. */
export function refreshOf(ctx: Context): Refresh | undefined {
  return (ctx.req as MaybeRefresh)[refreshKey];
}

/** Request headers the refresh does not repeat. */
const notRepeated = new Set([
  // It wants the whole page, not a 304 or a range.
  'if-none-match',
  'if-modified-since',
  'if-match',
  'if-unmodified-since',
  'if-range',
  'range',
  // Its answer is never sent: the entry holds the uncompressed entity, and a coding would be made for nobody.
  'accept-encoding',
  'available-dictionary',
  // They describe the visitor's connection and request body, which the refresh has not.
  'connection',
  'keep-alive',
  'proxy-connection',
  'transfer-encoding',
  'content-length',
  'expect',
  'upgrade',
  'te',
  'trailer',
  'http2-settings',
]);

/**
 * Starts the refresh of `key` unless one is under way in this process (or a
 * build of the key is). Returns at once; failures are logged, never thrown.
 *
 * @param ctx - the visitor's request, answered stale
 * @param runtime - the middleware's cache
 * @param key - the stale entry's key
 * @param entry - the stale entry
 */
export function revalidate(ctx: Context, runtime: CacheRuntime, key: string, entry: CacheEntry): void {
  if (runtime.revalidating.has(key) || runtime.table.has(key)) return;
  runtime.revalidating.add(key);
  runtime.log.debug('log_revalidating', { key });
  const failed = (error: unknown): void => runtime.log.error('log_revalidate_failed', { key, error: error });
  let request: MaybeRefresh;
  try {
    request = refreshRequest(ctx, { key, entry });
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

/**
 * A GET of the visitor's URL, replayed: its headers (less {@link notRepeated}),
 * its HTTP version (Koa takes an HTTP/2 request's host from `:authority`) and
 * a socket that says what the visitor's said, read now while it is open.
 */
function refreshRequest(ctx: Context, refresh: Refresh): MaybeRefresh {
  const visitor = ctx.req;
  const request: MaybeRefresh = new IncomingMessage(replayedSocket(visitor.socket as Socket | null));
  request.method = 'GET';
  request.url = ctx.originalUrl;
  request.httpVersion = visitor.httpVersion;
  request.httpVersionMajor = visitor.httpVersionMajor;
  request.httpVersionMinor = visitor.httpVersionMinor;
  const headers: Record<string, string | string[] | undefined> = {};
  for (const [name, value] of Object.entries(visitor.headers)) if (!notRepeated.has(name)) headers[name] = value;
  if (headers[':method'] !== undefined) headers[':method'] = 'GET';
  request.headers = headers;
  const raw: string[] = [];
  const given = visitor.rawHeaders;
  for (let i = 0; i + 1 < given.length; i += 2) {
    const name = given[i]!.toLowerCase();
    if (notRepeated.has(name)) continue;
    raw.push(given[i]!, name === ':method' ? 'GET' : given[i + 1]!);
  }
  request.rawHeaders = raw;
  // HTTP/2's compatibility request names these apart from its headers.
  for (const name of ['authority', 'scheme'] as const) {
    const value = (visitor as unknown as Record<string, unknown>)[name];
    if (typeof value === 'string') Object.defineProperty(request, name, { value, enumerable: true });
  }
  request.push(null); // a GET has no body
  request[refreshKey] = refresh;
  return request;
}

/** What a socket tells an application about its connection, beside the bytes. */
const connectionFacts = ['remoteAddress', 'remotePort', 'remoteFamily', 'localAddress', 'localPort'] as const;

/**
 * A socket that never connects, answering as the visitor's did: its peer
 * and local addresses (ctx.ip) and whether it was TLS (ctx.protocol). An
 * HTTP/2 request's socket is a proxy of its session's, which answers the same.
 */
function replayedSocket(from: Socket | null): Socket {
  const socket = new Socket();
  if (from === null) return socket;
  for (const name of connectionFacts) Object.defineProperty(socket, name, { value: from[name], enumerable: true });
  if ((from as Partial<TLSSocket>).encrypted === true)
    Object.defineProperty(socket, 'encrypted', { value: true, enumerable: true });
  return socket;
}

/**
 * Runs every middleware of the visitor's application on `request`, then
 * ends the response as Koa would, to no socket: the build is judged on the
 * head as sent (../http/sent-head.ts), and the response is dropped.
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
