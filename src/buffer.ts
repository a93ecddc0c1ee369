/**
 * `buffer(options)`: resolves the options once, builds the parts one
 * middleware shares between its requests (the memo, the upgrades, the
 * cache, the dictionaries), and returns the middleware that reworks every
 * response on its way out (pipeline/run.ts):
 *
 *   CHECK → OPTIMISE → COMPRESS → STORE → VALIDATE (304) → SEND, then FINISH
 *
 * FINISH runs in a `finally`, so a request that built a cache entry always
 * answers its waiters and releases its lock, also when a step throws.
 */
import type { Context, Middleware, Next } from 'koa';
import { DecisionLog } from './base/decision-log.ts';
import type { CacheStore } from './base/store.ts';
import { purgeMethods, type PurgeMethods } from './cache/purge/api.ts';
import { CacheRuntime } from './cache/runtime.ts';
import { actionDone, afterWrite, failed as buildFailed, finish } from './cache/seam.ts';
import { resolveOptions, type BufferOptions, type ResolvedOptions } from './config/options.ts';
import { resolveResponseOptions } from './config/per-response.ts';
import { ChangingBodies } from './encoding/changing.ts';
import { Dictionaries } from './encoding/dictionaries/dictionaries.ts';
import { RepresentationMemo } from './encoding/memo.ts';
import { Upgrades } from './encoding/upgrades.ts';
import { takeTagHeader } from './http/tags.ts';
import { MemoAnswers } from './pipeline/replay/memo-answers.ts';
import { PreparedHits } from './pipeline/replay/prepared-hits.ts';
import { respond } from './pipeline/run.ts';
import { enrol } from './observe/cluster.ts';
import { prometheusText, registerOn } from './observe/prometheus.ts';
import { countRoute, publishRequest } from './observe/request.ts';
import { openTelemetry } from './observe/otel.ts';
import { keyTablesBytes, keyTableBytesMax, leaveOutIgnoredCookies } from './cache/key.ts';
import { streaksBytesMax } from './encoding/changing.ts';
import { sightingsBytesMax } from './encoding/memo.ts';
import { keptStatsBytes, statsBytesMax } from './pipeline/file-stats.ts';
import { queuedMaxBytes } from './encoding/upgrades.ts';
import { versionsBytesMax } from './encoding/dictionaries/keeper.ts';
import type { StatsSnapshot } from './base/stats.ts';
import { bufferIsCached, openState, requestState } from './pipeline/state.ts';
import type { Shared } from './pipeline/work.ts';
import { frontMarkOf, learn } from './front/learn.ts';
import { linkShared } from './front/link.ts';

/** The middleware `buffer()` returns: with `purge`, `purgeTag` and `purgeAll` (cache/purge/api.ts). */
export interface BufferMiddleware extends Middleware, PurgeMethods {
  /**
   * Closes the cache stores this middleware opened itself (`cache: true`,
   * `'sqlite:PATH'`, `'redis://…'`), for a graceful shutdown: a SQLite file is
   * checkpointed and closed, a Redis connection quit, so nothing keeps the
   * process alive. A store object you passed stays yours to close. A request
   * after `close()` opens the stores again.
   *
   * @example
   * const middleware = buffer({ cache: 'redis://cache.internal:6379' });
   * process.on('SIGTERM', () => server.close(() => void middleware.close()));
   */
  close(): Promise<void>;
  /**
   * What this middleware has done since it started: requests by outcome,
   * builds, waiters, purges, store and lock calls per backend, responses and
   * bytes per coding, upgrades, dictionaries, how full each memory budget is,
   * and histograms of build, wait and hit times. A copy, safe to keep.
   * docs/observability.md says what each field counts.
   */
  stats(): StatsSnapshot;
  /**
   * The same as Prometheus text exposition (`text/plain; version=0.0.4`),
   * for a `/metrics` route: `ctx.type = prometheusContentType; ctx.body = mw.metrics()`.
   */
  metrics(): string;
}

/** Registers a reading of every in-process memory budget with the stats (read only when a snapshot is made). */
function countBudgets(shared: Shared): void {
  const { budgets } = shared.log.stats;
  const { memo, changing, prepared, upgrades, dictionaries, cache } = shared;
  budgets.memo = () => ({ bytes: memo.size, limit: memo.maxSize });
  budgets.sightings = () => ({ bytes: memo.sightingsBytes, limit: memo.enabled ? sightingsBytesMax : 0 });
  budgets.changing = () => ({ bytes: changing.bytes, limit: streaksBytesMax });
  budgets.prepared = () => ({ bytes: prepared.bytes, limit: prepared.maxBytes });
  budgets.upgrades = () => ({ bytes: upgrades.bytes, limit: queuedMaxBytes });
  budgets.keyTables = () => {
    const { recent, signatures } = keyTablesBytes();
    return { bytes: recent + signatures, limit: 2 * keyTableBytesMax };
  };
  budgets.fileStats = () => ({ bytes: keptStatsBytes(), limit: statsBytesMax });
  if (dictionaries !== undefined)
    budgets.dictionaryVersions = () => ({ bytes: dictionaries.versionsBytes, limit: versionsBytesMax });
  for (const name of ['store', 'near', 'purgeBook']) budgets[name] = () => cache?.budgets()[name];
}

/**
 * The cache store dictionaries are shared through: one other processes and
 * hosts can read; not the in-process store of `cache: true`, which would
 * only hold a second copy of what the memo holds.
 */
function sharedStore(cache: CacheRuntime, config: ResolvedOptions): CacheStore | undefined {
  if (config.cache === undefined || config.cache === true) return undefined;
  const store = cache.storeFor(config.cache);
  return store === undefined || 'error' in store ? undefined : store;
}

/**
 * The koa-buffer middleware: optimises HTML, compresses with br,
 * zstd or gzip, adds ETag and Last-Modified and answers 304 Not Modified,
 * for every response of the routes mounted after it. It installs
 * `ctx.bufferIsCached()` on every request it sees.
 *
 * @param options - see {@link BufferOptions}; all optional
 * @returns the Koa middleware
 * @throws BufferOptionError naming the first bad option, in ASCII order of option names
 * @example
 * const app = new Koa();
 * app.use(buffer({ optimiseContent: 1 }));
 * app.use((ctx) => { ctx.body = '<!doctype html><p>Hello</p>'; });
 */
export function buffer(options?: BufferOptions): BufferMiddleware {
  const config = resolveOptions(options);
  const memo = new RepresentationMemo(config.memoMaxSize);
  const log = new DecisionLog(config.logger, config.messages);
  const cache = new CacheRuntime(config, log);
  const shared: Shared = {
    config,
    memo,
    log,
    compressing: new Map(),
    upgrades: new Upgrades(memo, log),
    changing: new ChangingBodies(),
    dictionaries: Dictionaries.of(config.dictionaries, {
      memo,
      log,
      store: () => sharedStore(cache, config),
      storeTimeoutMs: config.cacheStoreTimeout * 1000,
    }),
    answers: new MemoAnswers(),
    prepared: new PreparedHits(),
    cache,
  };
  countBudgets(shared);
  enrol(log.stats);
  openTelemetry(log.stats);
  const { registry, routes } = config.metrics;
  if (registry !== undefined) registerOn(registry, () => log.stats.snapshot());
  const middleware = async function bufferMiddleware(ctx: Context, next: Next): Promise<void> {
    // An outer buffer() already reworks this request; a second pass would only redo its work.
    if (requestState(ctx)) return next();
    const state = openState(ctx, config, cache);
    leaveOutIgnoredCookies(ctx, config.cacheIgnoreCookies, config.varyBy);
    ctx.bufferIsCached = bufferIsCached;
    try {
      let threw = false;
      try {
        await next();
      } catch (error) {
        threw = true;
        // stale-if-error: a build that threw may be answered from its stale entry (cache/build.ts).
        if (!buildFailed(ctx, error)) throw error;
      } finally {
        // A revalidating build's action saw the entry's validators: the visitor's come back, a 304 renews it.
        actionDone(ctx, threw);
      }
      if (ctx.response.status >= 500) buildFailed(ctx, undefined);
      resolveResponseOptions(ctx, state); // sections and ctx.state.buffer have had their say
      const invalidating = afterWrite(ctx, cache, config.cache !== undefined);
      if (invalidating !== undefined) await invalidating;
      takeTagHeader(ctx.res, state); // stored with the entry, never sent
      const responding = respond(ctx, state, shared);
      if (responding !== undefined) await responding;
      else if (state.answeredAgain !== undefined) {
        // A hit answered again with final bytes: a front that handed this request over may learn it (front/learn.ts).
        const mark = frontMarkOf(ctx.req);
        if (mark !== undefined) learn(ctx, state, mark);
      }
    } catch (error) {
      state.failed = true; // a build that threw ends its flight with ERROR
      throw error;
    } finally {
      if (state.cacheAnswer !== undefined) {
        publishRequest(ctx);
        if (routes !== undefined) countRoute(ctx, routes, log.stats);
      }
      try {
        const finishing = finish(ctx, state.failed);
        if (finishing !== undefined) await finishing;
      } catch (error) {
        log.error('log_finish_waiter_failed', { key: '', error: (error as Error)?.message ?? String(error) });
      }
    }
  };
  linkShared(middleware, shared);
  return Object.assign(
    middleware,
    {
      close: () => cache.closeStores(),
      stats: () => log.stats.snapshot(),
      metrics: () => prometheusText(log.stats.snapshot()),
    },
    purgeMethods(cache, config.messages),
  );
}
