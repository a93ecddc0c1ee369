/**
 * The `Cache-Status` response header (RFC 9211) beside the older
 * `X-Cache`, on every response that went through `bufferIsCached`:
 *
 * | what happened                                  | Cache-Status                                   | X-Cache |
 * |------------------------------------------------|------------------------------------------------|---------|
 * | a fresh entry replayed                         | `koa-buffer; hit; ttl=N`                       | HIT     |
 * | not looked up (a bypass rule)                  | `koa-buffer; fwd=bypass; detail=AUTHORIZATION` | —       |
 * | built and stored                               | `koa-buffer; fwd=miss; stored`                 | MISS    |
 * | built over a stale entry, stored               | `koa-buffer; fwd=stale; stored`                | MISS    |
 * | the action answered the entry's validators 304 | `koa-buffer; fwd=stale; fwd-status=304; stored; detail=REVALIDATED` | REVALIDATED |
 * | rebuilt for a request's no-cache, stored        | `koa-buffer; fwd=request; stored`              | MISS    |
 * | built, not storable                            | `koa-buffer; fwd=uri-miss; detail=SET-COOKIE`  | MISS    |
 * | answered from another request's build          | `koa-buffer; fwd=miss; collapsed`              | HIT     |
 * | waited, the build failed: 503                  | `koa-buffer; fwd=miss; collapsed; detail=TIMEOUT` | MISS |
 * | past its TTL, within stale-while-revalidate    | `koa-buffer; hit; fwd=stale; ttl=-N`           | STALE   |
 * | the build failed, within stale-if-error        | `koa-buffer; hit; fwd=stale; ttl=-N; detail=ERROR` | STALE |
 * | the build answered 500, within stale-if-error  | `koa-buffer; hit; fwd=stale; fwd-status=500; ttl=-N; detail=STATUS` | STALE |
 *
 * A stale answer is a `hit` (RFC 9211 2.1: the response came from the cache)
 * with `fwd=stale` (2.2: the entry was stale, so the cache went to the
 * action) and a negative `ttl` (2.4: how long ago freshness ended). For a
 * stale-if-error answer, `detail` (2.8) names why the fresh response could
 * not be used (ERROR, TIMEOUT, NO-ENTRY, LOCK-ERROR, STATUS), and
 * `fwd-status` (2.3) the status the action answered.
 */
import type { Context } from 'koa';
import type { Stats } from '../base/stats.ts';

/** The cache's name in the header (RFC 9211 2: the first member identifies the cache). */
const cacheName = 'koa-buffer';

/**
 * How a miss went to the action (RFC 9211 2.2): `stale` when an entry existed
 * but could not be used, `request` when the request's own no-cache asked
 * for a rebuild (`cacheRequestNoCache: 'refresh'`).
 */
export type Forward = 'miss' | 'stale' | 'request';

/** Sets Cache-Status, unless the headers are already on their way; the name in lower case, as X-Cache's (see hit/replay.ts). */
function put(ctx: Context, value: string): void {
  if (!ctx.res.headersSent) ctx.res.setHeader('cache-status', value);
}

/** The last hit's text and its ttl: hits within the same second send the same text, not a new string each. */
let hitSeconds = -1;
let hitText = '';

/** A fresh entry was replayed; `ttlMs` is what remains of its freshness. */
export function statusHit(ctx: Context, stats: Stats, ttlMs: number): void {
  stats.requests.hit++;
  put(ctx, hitStatus(ttlMs));
}

/** The Cache-Status of a fresh hit with `ttlMs` of freshness left (a front answers with it too). */
export function hitStatus(ttlMs: number): string {
  const seconds = Math.floor(ttlMs / 1000);
  if (seconds !== hitSeconds) {
    hitSeconds = seconds;
    hitText = `${cacheName}; hit; ttl=${seconds}`;
  }
  return hitText;
}

/** The cache was not consulted, for `detail`. */
export function statusBypass(ctx: Context, stats: Stats, detail: string): void {
  stats.bypassed(detail);
  put(ctx, `${cacheName}; fwd=bypass; detail=${detail}`);
}

/** The request went to the action (no answer yet about storing it). */
export function statusMiss(ctx: Context, forward: Forward): void {
  put(ctx, `${cacheName}; fwd=${forward}`);
}

/**
 * The action's response was stored; `revalidated` when the action answered
 * the stored entry's validators with 304 and the entry was renewed.
 */
export function statusStored(ctx: Context, stats: Stats, forward: Forward, revalidated = false): void {
  stats.requests.stored++;
  put(
    ctx,
    revalidated
      ? `${cacheName}; fwd=stale; fwd-status=304; stored; detail=REVALIDATED`
      : `${cacheName}; fwd=${forward}; stored`,
  );
}

/** The action's response was not stored, for `detail` (`fwd=uri-miss; detail=…`). */
export function statusNotStored(ctx: Context, stats: Stats, detail: string): void {
  stats.notStored(detail);
  put(ctx, `${cacheName}; fwd=uri-miss; detail=${detail}`);
}

/** Answered from another request's build. */
export function statusCollapsed(ctx: Context, stats: Stats): void {
  stats.requests.collapsed++;
  stats.waiters.woken++;
  put(ctx, `${cacheName}; fwd=miss; collapsed`);
}

/** Waited for another request's build, which failed for `detail`; the answer is a 503 (or the action runs). */
export function statusCollapsedFailed(ctx: Context, detail: string): void {
  put(ctx, `${cacheName}; fwd=miss; collapsed; detail=${detail}`);
}

/** Seconds since freshness ended, as a negative ttl (RFC 9211 2.4); at least one second, so never `-0`. */
function staleTtl(overMs: number): number {
  return -Math.max(1, Math.ceil(overMs / 1000));
}

/** An entry past its TTL was answered while a background refresh runs; `overMs` is how long it has been stale. */
export function statusStale(ctx: Context, stats: Stats, overMs: number): void {
  stats.requests.stale++;
  put(ctx, `${cacheName}; hit; fwd=stale; ttl=${staleTtl(overMs)}`);
}

/** An entry past its TTL was answered because its build failed for `detail` (with the action's 5xx `status`). */
export function statusStaleOnError(ctx: Context, stats: Stats, overMs: number, detail: string, status?: number): void {
  stats.requests.staleOnError++;
  const forwarded = status === undefined ? '' : `; fwd-status=${status}`;
  put(ctx, `${cacheName}; hit; fwd=stale${forwarded}; ttl=${staleTtl(overMs)}; detail=${detail}`);
}
