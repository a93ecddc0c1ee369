/**
 * koa-buffer's `node:diagnostics_channel` channels, for APM tools and the
 * OpenTelemetry bridge (observe/otel.ts) to subscribe to. Publishing costs a
 * `hasSubscribers` check when nobody listens; messages are built only for
 * listeners. docs/observability.md gives each message's shape.
 *
 * Tracing channels (start, end, asyncStart, asyncEnd, error, as
 * `diagnostics_channel.tracingChannel` names them), one context object per
 * traced operation:
 * - `koa-buffer:build`: a request builds a cache entry, from the decision to
 *   build to its end (stored, not storable, failed);
 * - `koa-buffer:wait`: a request waits for another request's build;
 * - `koa-buffer:store`: one call to the cache store (get, set, delete);
 * - `koa-buffer:lock`: one call to the lock backend (acquire, release).
 *
 * Plain channels, one message per event:
 * - `koa-buffer:request`: a request that went through `ctx.bufferIsCached()`,
 *   once it is done, with its outcome and Cache-Status;
 * - `koa-buffer:purge`: a purge made through this process;
 * - `koa-buffer:upgrade`: a hot body recompressed (or dropped, or failed).
 */
import diagnostics from 'node:diagnostics_channel';

/** The context object of a traced build. */
export interface BuildMessage {
  readonly key: string;
  readonly url: string;
  /** Set when it ends: 'stored', 'not-stored' (with `detail`) or 'failed'. */
  result?: 'stored' | 'not-stored' | 'failed';
  detail?: string;
  error?: unknown;
}

/** The context object of a traced wait. */
export interface WaitMessage {
  readonly key: string;
  readonly url: string;
  /** Set when it ends: 'answered', or the failure the build ended with. */
  result?: string;
}

/** The context object of a traced store or lock call. */
export interface CallMessage {
  readonly operation: 'get' | 'set' | 'delete' | 'acquire' | 'release';
  readonly backend: string;
  readonly key: string;
  error?: unknown;
}

/** The message of `koa-buffer:request`. */
export interface RequestMessage {
  readonly method: string;
  readonly url: string;
  readonly host: string;
  /** hit, stale, collapsed, miss, bypass or not-stored (derived from Cache-Status). */
  readonly outcome: string;
  readonly cacheStatus: string | undefined;
  readonly status: number;
}

/** The message of `koa-buffer:purge`. */
export interface PurgeMessage {
  readonly kind: 'url' | 'tag' | 'all';
  readonly target: string | undefined;
}

/** The message of `koa-buffer:upgrade`. */
export interface UpgradeMessage {
  readonly result: 'done' | 'dropped' | 'failed';
  readonly coding: string;
  readonly level: number;
  readonly size: number;
  readonly compressedSize?: number;
  readonly seconds?: number;
}

export const buildChannel = diagnostics.tracingChannel<BuildMessage>('koa-buffer:build');
export const waitChannel = diagnostics.tracingChannel<WaitMessage>('koa-buffer:wait');
export const storeChannel = diagnostics.tracingChannel<CallMessage>('koa-buffer:store');
export const lockChannel = diagnostics.tracingChannel<CallMessage>('koa-buffer:lock');
export const requestChannel = diagnostics.channel('koa-buffer:request');
export const purgeChannel = diagnostics.channel('koa-buffer:purge');
export const upgradeChannel = diagnostics.channel('koa-buffer:upgrade');

/** The sub-channels of a tracing channel, as TracingChannel exposes them. */
type Traced<M> = diagnostics.TracingChannel<M, M & object>;

/**
 * Publishes the start and end of the synchronous part of a traced
 * operation; its asynchronous end follows with {@link tracedEnd}. Undefined
 * when nobody listens (nothing is built then).
 */
export function tracedStart<M extends object>(channel: Traced<M>, message: () => M): M | undefined {
  if (!channel.hasSubscribers) return undefined;
  const made = message();
  channel.start.publish(made);
  channel.end.publish(made);
  return made;
}

/** Publishes the asynchronous end of a traced operation (and its error first, when it failed). */
export function tracedEnd<M extends object>(channel: Traced<M>, message: M | undefined, error?: unknown): void {
  if (message === undefined) return;
  if (error !== undefined) {
    (message as { error?: unknown }).error = error;
    channel.error.publish(message);
  }
  channel.asyncStart.publish(message);
  channel.asyncEnd.publish(message);
}
