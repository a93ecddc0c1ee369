/**
 * What one `buffer()` middleware has done since it started: counters,
 * histograms of durations, and, read when asked, how full each memory
 * budget is. Counting is a field increment on a plain object of fixed shape
 * (nothing allocated, no lookup by name on the hot path), so it costs the
 * cache hit next to nothing; everything else (the snapshot, the Prometheus
 * text, OpenTelemetry, diagnostics channels) is derived from these fields
 * when someone asks (docs/observability.md maps each to its varnishstat
 * counterpart).
 */
import { CallTimeout } from './bounded.ts';

/** The upper bounds of a histogram's buckets, in seconds, ascending; +Inf is implied. */
export type Buckets = readonly number[];

/** Build and wait times: from a millisecond to a minute. */
export const durationBuckets: Buckets = [
  0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60,
];

/** Hit latency: from 10 µs to 100 ms. */
export const latencyBuckets: Buckets = [
  0.00001, 0.000025, 0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.1,
];

/** Counts a failed call: a timeout (the call did not answer within its limit) or another error. */
export function countFailure(counts: CallCounts, error: unknown): void {
  if (error instanceof CallTimeout) counts.timeouts++;
  else counts.errors++;
}

/** A histogram of seconds with fixed buckets: counts per bucket (not cumulative), their sum and count. */
export class Histogram {
  readonly buckets: Buckets;
  readonly counts: number[];
  sum = 0;
  count = 0;

  constructor(buckets: Buckets) {
    this.buckets = buckets;
    this.counts = new Array<number>(buckets.length + 1).fill(0);
  }

  /** Records one duration, in seconds. */
  observe(seconds: number): void {
    const { buckets } = this;
    let i = 0;
    while (i < buckets.length && seconds > buckets[i]!) i++;
    this.counts[i]!++;
    this.sum += seconds;
    this.count++;
  }

  /** A copy: cumulative counts per upper bound (`le`), the last one +Inf, as Prometheus exposes them. */
  snapshot(): HistogramSnapshot {
    let running = 0;
    const cumulative = this.counts.map((n) => (running += n));
    return { buckets: [...this.buckets, Infinity], counts: cumulative, sum: this.sum, count: this.count };
  }
}

/** A histogram as a snapshot reports it. */
export interface HistogramSnapshot {
  /** Upper bounds in seconds, the last one Infinity. */
  readonly buckets: readonly number[];
  /** Cumulative: how many observations were at or under each bound. */
  readonly counts: readonly number[];
  readonly sum: number;
  readonly count: number;
}

/** Calls to one backend (a store or a lock). */
export interface CallCounts {
  calls: number;
  errors: number;
  timeouts: number;
}

/** Responses sent in one coding, and the bytes before and after it. */
export interface CodingCounts {
  responses: number;
  bytesIn: number;
  bytesOut: number;
}

/** The codings responses are counted by. */
export const countedCodings = ['identity', 'br', 'zstd', 'gzip', 'deflate', 'dcz'] as const;
export type CountedCoding = (typeof countedCodings)[number];

/** The backends store and lock calls are counted by. */
export type Backend = 'memory' | 'sqlite' | 'redis' | 'file' | 'custom';

/** What a memory budget holds against its limit, in bytes (a limit of 0 means off). */
export interface Budget {
  readonly bytes: number;
  readonly limit: number;
}

/** Each budget's reading, asked when a snapshot is made. */
export type BudgetReaders = Record<string, () => Budget | undefined>;

function calls(): CallCounts {
  return { calls: 0, errors: 0, timeouts: 0 };
}

function codings(): Record<CountedCoding, CodingCounts> {
  const out = {} as Record<CountedCoding, CodingCounts>;
  for (const coding of countedCodings) out[coding] = { responses: 0, bytesIn: 0, bytesOut: 0 };
  return out;
}

/** The counters of one middleware. Fields are incremented in place by the layers that see each event. */
export class Stats {
  readonly startedAt = Date.now();
  /** Requests that went through `ctx.bufferIsCached()`, by what the cache answered. */
  readonly requests = {
    hit: 0,
    stale: 0,
    staleOnError: 0,
    collapsed: 0,
    /** Waiters answered 503 because the build they waited for failed or timed out. */
    failed: 0,
    /** Requests that ran the action for the cache: builds, and runs alone (no single flight, hit-for-miss). */
    miss: 0,
    bypass: 0,
    /** Bypasses by their Cache-Status detail (AUTHORIZATION, METHOD, HOST, COOKIE, …): a bounded set of tokens. */
    bypassByDetail: {} as Record<string, number>,
    /** Built responses that could not be stored, by detail (SET-COOKIE, PRIVATE, STATUS, …). */
    notStorable: 0,
    notStorableByDetail: {} as Record<string, number>,
    stored: 0,
  };
  /** `revalidated`: builds whose action answered the stored entry's validators with 304, renewing it. */
  readonly builds = { started: 0, failed: 0, timedOut: 0, notStorable: 0, revalidated: 0 };
  readonly waiters = { waited: 0, woken: 0, refused: 0, ranAction: 0 };
  readonly purges = { url: 0, tag: 0, all: 0 };
  /** Store and lock calls by backend. */
  readonly store: Record<string, CallCounts> = {};
  readonly lock: Record<string, CallCounts> = {};
  readonly responses = codings();
  readonly compression = { calls: 0, seconds: 0 };
  readonly upgrades = { queued: 0, done: 0, failed: 0, dropped: 0 };
  /** 304 Not Modified answers, and responses sent as a stream, by coding (their length is not known ahead). */
  notModified = 0;
  /** Requests a front answered before Koa ran (front/front.ts), also counted as hits (and 304s). */
  frontHits = 0;
  readonly streamed: Record<string, number> = {};
  readonly dictionaries = { offered: 0, used: 0 };
  readonly buildSeconds = new Histogram(durationBuckets);
  readonly waitSeconds = new Histogram(durationBuckets);
  readonly hitSeconds = new Histogram(latencyBuckets);
  /** How long a purge made elsewhere took to be seen here. */
  readonly purgeSeenSeconds = new Histogram(durationBuckets);
  /** Requests by listed route and outcome (the `metrics.routes` option): a bounded set of names. */
  readonly routes: Record<string, Record<string, number>> = {};
  /** Read when a snapshot is made: each part that holds memory registers its reader. */
  readonly budgets: BudgetReaders = {};

  /** The counts of store calls to `backend`. */
  storeCalls(backend: Backend): CallCounts {
    return (this.store[backend] ??= calls());
  }

  /** The counts of lock calls to `backend`. */
  lockCalls(backend: Backend): CallCounts {
    return (this.lock[backend] ??= calls());
  }

  /** Counts a bypass, by its detail token. */
  bypassed(detail: string): void {
    this.requests.bypass++;
    this.requests.bypassByDetail[detail] = (this.requests.bypassByDetail[detail] ?? 0) + 1;
  }

  /** Counts a build whose response could not be stored, by its detail token. */
  notStored(detail: string): void {
    this.requests.notStorable++;
    this.requests.notStorableByDetail[detail] = (this.requests.notStorableByDetail[detail] ?? 0) + 1;
  }

  /** Counts a request of a listed route (or `other`) by its outcome. */
  routeOutcome(route: string, outcome: string): void {
    const outcomes = (this.routes[route] ??= {});
    outcomes[outcome] = (outcomes[outcome] ?? 0) + 1;
  }

  /** Counts one response sent in `coding`, `bytesIn` before coding and `bytesOut` after. */
  sent(coding: string, bytesIn: number, bytesOut: number): void {
    const counts = this.responses[(coding.startsWith('dcz') ? 'dcz' : coding) as CountedCoding];
    if (counts === undefined) return;
    counts.responses++;
    counts.bytesIn += bytesIn;
    counts.bytesOut += bytesOut;
  }

  /** A plain copy of everything, budgets read now. */
  snapshot(): StatsSnapshot {
    const budgets: Record<string, Budget> = {};
    for (const [name, read] of Object.entries(this.budgets)) {
      const budget = read();
      if (budget !== undefined) budgets[name] = { bytes: budget.bytes, limit: budget.limit };
    }
    const copy = <T extends object>(value: T): T => structuredClone(value);
    return {
      startedAt: new Date(this.startedAt).toISOString(),
      uptimeSeconds: (Date.now() - this.startedAt) / 1000,
      requests: copy(this.requests),
      builds: { ...this.builds },
      waiters: { ...this.waiters },
      purges: { ...this.purges },
      store: copy(this.store),
      lock: copy(this.lock),
      responses: copy(this.responses),
      compression: { ...this.compression },
      upgrades: { ...this.upgrades },
      notModified: this.notModified,
      frontHits: this.frontHits,
      streamed: { ...this.streamed },
      dictionaries: { ...this.dictionaries },
      budgets,
      routes: copy(this.routes),
      histograms: {
        buildSeconds: this.buildSeconds.snapshot(),
        waitSeconds: this.waitSeconds.snapshot(),
        hitSeconds: this.hitSeconds.snapshot(),
        purgeSeenSeconds: this.purgeSeenSeconds.snapshot(),
      },
    };
  }
}

/** What `mw.stats()` returns: a copy, safe to keep and to serialise. */
export interface StatsSnapshot {
  readonly startedAt: string;
  readonly uptimeSeconds: number;
  readonly requests: Stats['requests'];
  readonly builds: Stats['builds'];
  readonly waiters: Stats['waiters'];
  readonly purges: Stats['purges'];
  readonly store: Readonly<Record<string, CallCounts>>;
  readonly lock: Readonly<Record<string, CallCounts>>;
  readonly responses: Readonly<Record<CountedCoding, CodingCounts>>;
  readonly compression: Stats['compression'];
  readonly upgrades: Stats['upgrades'];
  readonly notModified: number;
  readonly frontHits: number;
  readonly streamed: Readonly<Record<string, number>>;
  readonly dictionaries: Stats['dictionaries'];
  readonly budgets: Readonly<Record<string, Budget>>;
  readonly routes: Readonly<Record<string, Readonly<Record<string, number>>>>;
  readonly histograms: Readonly<
    Record<'buildSeconds' | 'waitSeconds' | 'hitSeconds' | 'purgeSeenSeconds', HistogramSnapshot>
  >;
}
