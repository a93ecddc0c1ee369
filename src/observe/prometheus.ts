/**
 * The stats of one middleware (or the sum over a cluster's workers) as
 * Prometheus metric families: names `koa_buffer_*`, counters ending in
 * `_total`, durations in seconds, histograms as `_bucket{le}` / `_sum` /
 * `_count`. Label values come only from bounded sets koa-buffer owns
 * (outcomes, Cache-Status detail tokens, codings, backends, budget names)
 * or the application listed (route names), never from a request. The same
 * families give the text exposition (version 0.0.4) and the metrics
 * registered on a prom-client Registry.
 */
import type { HistogramSnapshot, StatsSnapshot } from '../base/stats.ts';
import type { RegistryLike } from './metrics-option.ts';

/** The Content-Type of the text {@link prometheusText} returns. */
export const prometheusContentType = 'text/plain; version=0.0.4; charset=utf-8';

type Labels = Readonly<Record<string, string>>;

/** One sample: a value with its labels; `suffix` for a histogram's `_bucket`, `_sum` and `_count`. */
interface Sample {
  readonly labels: Labels;
  readonly value: number;
  readonly suffix?: '_bucket' | '_sum' | '_count';
}

/** One metric family: its name, help, type and samples. */
export interface Family {
  readonly name: string;
  readonly help: string;
  readonly type: 'counter' | 'gauge' | 'histogram';
  readonly samples: Sample[];
}

const prefix = 'koa_buffer_';

/** Collects families, each declared once. */
class Families {
  readonly list: Family[] = [];
  readonly #byName = new Map<string, Family>();

  /** Declares a family, so it is exposed (and registered) even before its first sample. */
  declare(name: string, type: 'counter' | 'gauge', help: string): void {
    this.#family(`${prefix}${name}${type === 'counter' ? '_total' : ''}`, type, help);
  }

  #family(name: string, type: Family['type'], help: string): Family {
    let family = this.#byName.get(name);
    if (family === undefined) {
      family = { name, help, type, samples: [] };
      this.#byName.set(name, family);
      this.list.push(family);
    }
    return family;
  }

  counter(name: string, help: string, value: number, labels: Labels = {}): void {
    this.#family(`${prefix}${name}_total`, 'counter', help).samples.push({ labels, value });
  }

  gauge(name: string, help: string, value: number, labels: Labels = {}): void {
    this.#family(`${prefix}${name}`, 'gauge', help).samples.push({ labels, value });
  }

  histogram(name: string, help: string, histogram: HistogramSnapshot): void {
    const { samples } = this.#family(`${prefix}${name}`, 'histogram', help);
    histogram.buckets.forEach((le, i) =>
      samples.push({ labels: { le: numberText(le) }, value: histogram.counts[i]!, suffix: '_bucket' }),
    );
    samples.push({ labels: {}, value: histogram.sum, suffix: '_sum' });
    samples.push({ labels: {}, value: histogram.count, suffix: '_count' });
  }
}

/** camelCase to snake_case, for label values. */
function snake(name: string): string {
  return name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
}

/** The snapshot as metric families. */
export function families(stats: StatsSnapshot): Family[] {
  const out = new Families();
  const { requests } = stats;
  const requestsHelp = 'Requests through ctx.bufferIsCached(), by what the cache answered.';
  for (const outcome of ['hit', 'stale', 'staleOnError', 'collapsed', 'failed', 'miss'] as const)
    out.counter('requests', requestsHelp, requests[outcome], { outcome: snake(outcome) });
  for (const [detail, n] of Object.entries(requests.bypassByDetail))
    out.counter('requests', requestsHelp, n, { outcome: 'bypass', detail });
  const routesHelp = 'Requests through ctx.bufferIsCached(), by listed route and outcome.';
  out.declare('route_requests', 'counter', routesHelp);
  for (const [route, outcomes] of Object.entries(stats.routes))
    for (const [outcome, n] of Object.entries(outcomes))
      out.counter('route_requests', routesHelp, n, { route, outcome });
  out.counter('stored', 'Built responses stored in the cache.', requests.stored);
  const notStoredHelp = 'Built responses not stored, by Cache-Status detail.';
  out.declare('not_stored', 'counter', notStoredHelp);
  for (const [detail, n] of Object.entries(requests.notStorableByDetail))
    out.counter('not_stored', notStoredHelp, n, { detail });

  out.counter('builds_started', 'Builds of a cache entry started.', stats.builds.started);
  out.counter('builds_failed', 'Builds whose action threw.', stats.builds.failed);
  out.counter('builds_timed_out', 'Builds that outlasted cacheLockTimeout.', stats.builds.timedOut);
  out.counter('builds_not_storable', 'Builds whose response could not be stored.', stats.builds.notStorable);
  out.counter(
    'builds_revalidated',
    'Builds the action answered 304, renewing the stored entry.',
    stats.builds.revalidated,
  );

  out.counter('waiters', 'Requests that waited for another request’s build.', stats.waiters.waited);
  out.counter('waiters_woken', 'Waiters answered from the build they waited for.', stats.waiters.woken);
  out.counter('waiters_refused', 'Waiters answered 503: the build failed or timed out.', stats.waiters.refused);
  out.counter('waiters_ran_action', 'Waiters that ran the action themselves.', stats.waiters.ranAction);

  for (const kind of ['url', 'tag', 'all'] as const)
    out.counter('purges', 'Purges made through this middleware, by kind.', stats.purges[kind], { kind });

  for (const [what, table] of [
    ['store', stats.store],
    ['lock', stats.lock],
  ] as const) {
    const help = {
      calls: `Calls to the cache ${what}, by backend.`,
      errors: `Cache ${what} calls that failed, by backend.`,
      timeouts: `Cache ${what} calls past cacheStoreTimeout, by backend.`,
    };
    for (const field of ['calls', 'errors', 'timeouts'] as const) {
      out.declare(`${what}_${field}`, 'counter', help[field]);
      for (const [backend, counts] of Object.entries(table))
        out.counter(`${what}_${field}`, help[field], counts[field], { backend });
    }
  }

  for (const [coding, counts] of Object.entries(stats.responses)) {
    out.counter('responses', 'Responses sent with a body, by content coding.', counts.responses, { coding });
    out.counter('bytes_in', 'Bytes of those responses before coding.', counts.bytesIn, { coding });
    out.counter('bytes_out', 'Bytes of those responses as sent.', counts.bytesOut, { coding });
  }
  out.declare('streamed', 'counter', 'Stream bodies sent, by content coding.');
  for (const [coding, n] of Object.entries(stats.streamed))
    out.counter('streamed', 'Stream bodies sent, by content coding.', n, { coding });
  out.counter('not_modified', '304 Not Modified answers.', stats.notModified);
  out.counter('front_hits', 'Hits a front answered before Koa ran (also counted as hits).', stats.frontHits);
  out.counter('compressions', 'Compressions made on the request path.', stats.compression.calls);
  out.counter('compression_seconds', 'Time spent in those compressions.', stats.compression.seconds);
  for (const result of ['queued', 'done', 'failed', 'dropped'] as const)
    out.counter('upgrades', 'Hot bodies recompressed at their smallest setting, by result.', stats.upgrades[result], {
      result,
    });
  out.counter('dictionaries_offered', 'Responses kept as compression dictionaries.', stats.dictionaries.offered);
  out.counter('dictionaries_used', 'Responses sent dcz-coded with a kept dictionary.', stats.dictionaries.used);

  out.declare('budget_bytes', 'gauge', 'Bytes each in-process memory budget holds.');
  out.declare('budget_limit_bytes', 'gauge', 'The bound of each in-process memory budget.');
  for (const [budget, reading] of Object.entries(stats.budgets)) {
    out.gauge('budget_bytes', 'Bytes each in-process memory budget holds.', reading.bytes, { budget });
    out.gauge('budget_limit_bytes', 'The bound of each in-process memory budget.', reading.limit, { budget });
  }
  out.gauge('uptime_seconds', 'Seconds since the middleware started.', stats.uptimeSeconds);

  const { histograms } = stats;
  out.histogram('build_duration_seconds', 'How long builds of a cache entry took.', histograms.buildSeconds);
  out.histogram('wait_duration_seconds', 'How long waiters waited for another build.', histograms.waitSeconds);
  out.histogram('hit_duration_seconds', 'From ctx.bufferIsCached() to a fresh hit replayed.', histograms.hitSeconds);
  out.histogram(
    'purge_seen_seconds',
    'How long after another process purged this process saw it.',
    histograms.purgeSeenSeconds,
  );
  return out.list;
}

/** A label value escaped as the exposition format wants it: backslash, double quote and line feed. */
function escape(value: string): string {
  return value.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
}

function labelText(labels: Labels): string {
  const names = Object.keys(labels);
  if (names.length === 0) return '';
  return `{${names.map((name) => `${name}="${escape(labels[name]!)}"`).join(',')}}`;
}

/** A number as the format writes it: +Inf, -Inf, NaN, or the shortest round-tripping decimal. */
function numberText(value: number): string {
  if (value === Infinity) return '+Inf';
  if (value === -Infinity) return '-Inf';
  return Number.isNaN(value) ? 'NaN' : String(value);
}

/** Families as text exposition, version 0.0.4. */
export function familiesText(list: readonly Family[]): string {
  const lines: string[] = [];
  for (const family of list) {
    lines.push(`# HELP ${family.name} ${family.help}`, `# TYPE ${family.name} ${family.type}`);
    for (const sample of family.samples)
      lines.push(`${family.name}${sample.suffix ?? ''}${labelText(sample.labels)} ${numberText(sample.value)}`);
  }
  return `${lines.join('\n')}\n`;
}

/** The snapshot as Prometheus text. */
export function prometheusText(stats: StatsSnapshot): string {
  return familiesText(families(stats));
}

/**
 * Registers the families of `stats` on a prom-client Registry, read afresh
 * at every scrape: one metric object per family, as prom-client's own
 * metrics present themselves to its Registry (`name`, `help`, `type`,
 * `get()`; `aggregator: 'sum'`, so its AggregatorRegistry adds the
 * workers' values up).
 *
 * @param registry - the application's Registry
 * @param stats - reads the snapshot at scrape time
 */
export function registerOn(registry: RegistryLike, stats: () => StatsSnapshot): void {
  // A scrape asks every metric in one synchronous sweep: the families are made once for it, not once per metric.
  let made: Family[] | undefined;
  const current = (): Family[] => {
    if (made === undefined) {
      made = families(stats());
      queueMicrotask(() => (made = undefined));
    }
    return made;
  };
  const names = current().map((family) => ({ name: family.name, help: family.help, type: family.type }));
  for (const { name, help, type } of names)
    registry.registerMetric({
      name,
      help,
      type,
      aggregator: 'sum',
      get: () => {
        const found = current().find((family) => family.name === name);
        return {
          name,
          help,
          type,
          aggregator: 'sum',
          values: (found?.samples ?? []).map((sample) => ({
            labels: sample.labels,
            value: sample.value,
            ...(sample.suffix ? { metricName: `${name}${sample.suffix}` } : {}),
          })),
        };
      },
      reset: () => undefined,
    });
}
