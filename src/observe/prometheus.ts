/**
 * The stats of one middleware (or the sum over a cluster's workers) as
 * Prometheus text exposition, version 0.0.4: names `koa_buffer_*`,
 * counters ending in `_total`, durations in seconds, histograms as
 * `_bucket{le}` / `_sum` / `_count`. Label values come only from bounded
 * sets koa-buffer owns (outcomes, Cache-Status detail tokens, codings,
 * backends, budget names), never from a request.
 */
import type { HistogramSnapshot, StatsSnapshot } from '../base/stats.ts';

/** The Content-Type of the text {@link prometheusText} returns. */
export const prometheusContentType = 'text/plain; version=0.0.4; charset=utf-8';

type Labels = Readonly<Record<string, string>>;

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

/** Writes metric families, each with its HELP and TYPE once. */
class Exposition {
  readonly #lines: string[] = [];
  readonly #declared = new Set<string>();

  #declare(name: string, type: 'counter' | 'gauge' | 'histogram', help: string): void {
    if (this.#declared.has(name)) return;
    this.#declared.add(name);
    this.#lines.push(`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`);
  }

  sample(name: string, type: 'counter' | 'gauge', help: string, value: number, labels: Labels = {}): void {
    this.#declare(name, type, help);
    this.#lines.push(`${name}${labelText(labels)} ${numberText(value)}`);
  }

  histogram(name: string, help: string, histogram: HistogramSnapshot, labels: Labels = {}): void {
    this.#declare(name, 'histogram', help);
    histogram.buckets.forEach((le, i) => {
      this.#lines.push(`${name}_bucket${labelText({ ...labels, le: numberText(le) })} ${histogram.counts[i]}`);
    });
    this.#lines.push(`${name}_sum${labelText(labels)} ${numberText(histogram.sum)}`);
    this.#lines.push(`${name}_count${labelText(labels)} ${histogram.count}`);
  }

  text(): string {
    return `${this.#lines.join('\n')}\n`;
  }
}

const prefix = 'koa_buffer_';

/**
 * The snapshot as Prometheus text.
 *
 * @param stats - one middleware's snapshot, or the sum of several (cluster.ts)
 */
export function prometheusText(stats: StatsSnapshot): string {
  const out = new Exposition();
  const counter = (name: string, help: string, value: number, labels?: Labels): void =>
    out.sample(`${prefix}${name}_total`, 'counter', help, value, labels);
  const gauge = (name: string, help: string, value: number, labels?: Labels): void =>
    out.sample(`${prefix}${name}`, 'gauge', help, value, labels);

  const requestsHelp = 'Requests through ctx.bufferIsCached(), by what the cache answered.';
  const { requests } = stats;
  for (const outcome of ['hit', 'stale', 'staleOnError', 'collapsed', 'miss'] as const)
    counter('requests', requestsHelp, requests[outcome], { outcome: snake(outcome) });
  for (const [detail, n] of Object.entries(requests.bypassByDetail))
    counter('requests', requestsHelp, n, { outcome: 'bypass', detail });
  counter('stored', 'Built responses stored in the cache.', requests.stored);
  for (const [detail, n] of Object.entries(requests.notStorableByDetail))
    counter('not_stored', 'Built responses not stored, by Cache-Status detail.', n, { detail });

  const builds = 'Builds of a cache entry (the action run for the cache), by how they ended.';
  counter('builds_started', 'Builds of a cache entry started.', stats.builds.started);
  counter('builds_failed', builds, stats.builds.failed);
  counter(
    'builds_timed_out',
    'Builds that outlasted cacheLockTimeout (their waiters were answered).',
    stats.builds.timedOut,
  );
  counter('builds_not_storable', 'Builds whose response could not be stored (hit-for-miss).', stats.builds.notStorable);

  counter('waiters', 'Requests that waited for another request’s build.', stats.waiters.waited);
  counter('waiters_woken', 'Waiters answered from the build they waited for.', stats.waiters.woken);
  counter('waiters_refused', 'Waiters answered 503 because the build failed or timed out.', stats.waiters.refused);
  counter(
    'waiters_ran_action',
    'Waiters that ran the action themselves (the build could not be shared).',
    stats.waiters.ranAction,
  );

  for (const kind of ['url', 'tag', 'all'] as const)
    counter('purges', 'Purges made through this middleware, by kind.', stats.purges[kind], { kind });

  for (const [what, table] of [
    ['store', stats.store],
    ['lock', stats.lock],
  ] as const)
    for (const [backend, counts] of Object.entries(table)) {
      counter(`${what}_calls`, `Calls to the cache ${what}, by backend.`, counts.calls, { backend });
      counter(`${what}_errors`, `Cache ${what} calls that failed, by backend.`, counts.errors, { backend });
      counter(
        `${what}_timeouts`,
        `Cache ${what} calls that outlasted cacheStoreTimeout, by backend.`,
        counts.timeouts,
        { backend },
      );
    }

  for (const [coding, counts] of Object.entries(stats.responses)) {
    counter('responses', 'Responses the pipeline sent with a body, by content coding.', counts.responses, { coding });
    counter('bytes_in', 'Bytes of those responses before coding (the entity).', counts.bytesIn, { coding });
    counter('bytes_out', 'Bytes of those responses as sent.', counts.bytesOut, { coding });
  }
  for (const [coding, n] of Object.entries(stats.streamed))
    counter('streamed', 'Stream bodies sent, by content coding.', n, { coding });
  counter('not_modified', '304 Not Modified answers.', stats.notModified);
  counter('compressions', 'Compressions made on the request path.', stats.compression.calls);
  counter('compression_seconds', 'Time spent in those compressions.', stats.compression.seconds);
  for (const what of ['queued', 'done', 'failed', 'dropped'] as const)
    counter(
      'upgrades',
      'Hot bodies recompressed at their smallest setting, by what became of them.',
      stats.upgrades[what],
      { result: what },
    );
  counter('dictionaries_offered', 'Responses kept as compression dictionaries.', stats.dictionaries.offered);
  counter('dictionaries_used', 'Responses sent dcz-coded with a kept dictionary.', stats.dictionaries.used);

  for (const [budget, reading] of Object.entries(stats.budgets)) {
    gauge('budget_bytes', 'Bytes each in-process memory budget holds.', reading.bytes, { budget });
    gauge('budget_limit_bytes', 'The bound of each in-process memory budget.', reading.limit, { budget });
  }
  gauge('uptime_seconds', 'Seconds since the middleware started.', stats.uptimeSeconds);

  const { histograms } = stats;
  out.histogram(`${prefix}build_duration_seconds`, 'How long builds of a cache entry took.', histograms.buildSeconds);
  out.histogram(`${prefix}wait_duration_seconds`, 'How long waiters waited for another build.', histograms.waitSeconds);
  out.histogram(
    `${prefix}hit_duration_seconds`,
    'From ctx.bufferIsCached() to a fresh hit replayed.',
    histograms.hitSeconds,
  );
  out.histogram(
    `${prefix}purge_seen_seconds`,
    'How long after another process purged this process saw it.',
    histograms.purgeSeenSeconds,
  );
  return out.text();
}

/** camelCase to snake_case, for label values. */
function snake(name: string): string {
  return name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);
}
