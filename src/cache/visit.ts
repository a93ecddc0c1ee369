/**
 * What the cache keeps of one request: kept on the context under a symbol
 * of the cache's own, so nothing outside `cache/` writes it, and it goes when
 * the request does. The pipeline reads a few plain facts of it (see
 * {@link CacheFacts}) and reaches the rest only through the calls of
 * seam.ts: it never holds a callback of the cache's.
 *
 * Not a WeakMap keyed by the context: every request would add an
 * ephemeron, which each scavenge must process specially, and on a cache hit
 * that made the collector's share of a request several times larger
 * (docs/decisions/0009-hit-path-is-measured.md).
 */
import type { Context } from 'koa';
import type { BuildMessage } from '../base/channels.ts';
import type { ResolvedOptions } from '../config/options.ts';
import type { Forward } from './cache-status.ts';
import type { CacheEntry } from './entry.ts';
import type { Flight } from './flight/flight.ts';
import type { Slot } from './hit/lookup.ts';
import type { CacheRuntime } from './runtime.ts';

/** What the pipeline may read of a request's visit to the cache. */
export interface CacheFacts {
  /**
   * True when an entry was put into the response (a hit, a stale answer, a
   * waiter answered from another build): it was optimised when it was built,
   * so OPTIMISE skips it, and it is not stored again.
   */
  readonly replayed: boolean;
  /** True when this request's response is to be handed to the cache at STORE (it builds, or misses without a flight). */
  readonly builds: boolean;
  /** A fresh hit's key and entry: the pipeline may give its earlier answer to that entry again. */
  readonly hitKey: string | undefined;
  readonly hitEntry: CacheEntry | undefined;
  /**
   * True when the action answered 304 to the stored entry's validators and
   * the entry was put back into the response (revalidation.ts): it was
   * optimised when built, so OPTIMISE skips it, yet it is stored again, renewed.
   */
  readonly renewed: boolean;
}

/** A build this request takes part in: its response is judged, stored and its waiters answered. */
export interface Build {
  /** The key's flight in this process; undefined without single flight. */
  readonly flight: Flight | undefined;
  readonly forward: Forward;
  /** True once STORE handed the response over: the judge of the head as sent ends the flight. */
  handedOver: boolean;
  /** True when the build failed and its stale-if-error entry was answered instead. */
  answeredStale: boolean;
  /** performance.now() when it began: its duration goes into the build-time histogram. */
  readonly startedAt: number;
  /** Its trace on the `koa-buffer:build` channel, when anyone listens. */
  readonly traced: BuildMessage | undefined;
}

/** One request's view of the cache. It holds no context: what a flight or lock keeps refers to it, never to the request. */
export interface Visit extends CacheFacts {
  readonly runtime: CacheRuntime;
  readonly options: ResolvedOptions;
  /** The key and store this request reads and builds: its variant's, once the page is known to vary. */
  slot: Slot;
  /** The key of the URL (and varyBy values) before any variant: a varying page's marker lives there. */
  readonly primaryKey: string;
  /** When the request looked the key up: a purge after it keeps its build from being stored. */
  readonly since: number;
  /** This process's purge count then (purge/book.ts). */
  readonly purgesSeen: number;
  /** performance.now() when the request asked: a hit's latency runs from here. */
  readonly askedAt: number;
  /** The request's host and URL, for log lines and traces. */
  readonly url: string;
  /** An entry past its TTL within its stale-if-error window, answered if the build fails. */
  fallback: CacheEntry | undefined;
  /** An entry past its TTL with the application's ETag or Last-Modified: a build asks the action with them. */
  revalidating: CacheEntry | undefined;
  /** The visitor's own If-None-Match and If-Modified-Since, kept apart while the action sees the entry's. */
  visitorConditionals: Readonly<Record<string, string | string[] | undefined>> | undefined;
  replayed: boolean;
  builds: boolean;
  hitKey: string | undefined;
  hitEntry: CacheEntry | undefined;
  renewed: boolean;
  build: Build | undefined;
}

const visitKey = Symbol('koa-buffer cache visit');

type WithVisit = Context & { [visitKey]?: Visit };

/** The visit of a request that looked its key up, or undefined (no lookup, or a bypass). */
export function visitOf(ctx: Context): Visit | undefined {
  return (ctx as WithVisit)[visitKey];
}

/** Starts the visit of a request whose key is looked up. */
export function openVisit(
  ctx: Context,
  runtime: CacheRuntime,
  options: ResolvedOptions,
  slot: Slot,
  now: number,
): Visit {
  const visit: Visit = {
    runtime,
    options,
    slot,
    primaryKey: slot.key,
    since: now,
    purgesSeen: slot.purges?.sequence ?? 0,
    askedAt: performance.now(),
    url: slot.url,
    fallback: undefined,
    revalidating: undefined,
    visitorConditionals: undefined,
    replayed: false,
    builds: false,
    hitKey: undefined,
    hitEntry: undefined,
    renewed: false,
    build: undefined,
  };
  (ctx as WithVisit)[visitKey] = visit;
  return visit;
}
