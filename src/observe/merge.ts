/**
 * The sum of several stats snapshots (the middlewares of a process, the
 * workers of a cluster): counters and histogram counts add up, budgets add
 * up bytes and limits, the start is the earliest and the uptime the longest.
 */
import type { HistogramSnapshot, StatsSnapshot } from '../base/stats.ts';

/** Adds `b` into `a`, key by key, for nested records of numbers. */
function addInto(a: Record<string, unknown>, b: Record<string, unknown>): void {
  for (const [key, value] of Object.entries(b)) {
    if (typeof value === 'number') a[key] = ((a[key] as number | undefined) ?? 0) + value;
    else if (value !== null && typeof value === 'object') {
      const into = (a[key] ??= {}) as Record<string, unknown>;
      addInto(into, value as Record<string, unknown>);
    }
  }
}

function addHistogram(a: HistogramSnapshot, b: HistogramSnapshot): HistogramSnapshot {
  return {
    buckets: a.buckets,
    counts: a.counts.map((n, i) => n + (b.counts[i] ?? 0)),
    sum: a.sum + b.sum,
    count: a.count + b.count,
  };
}

/** The sum of `snapshots` (at least one). */
export function mergeSnapshots(snapshots: readonly StatsSnapshot[]): StatsSnapshot {
  const [first, ...rest] = snapshots as [StatsSnapshot, ...StatsSnapshot[]];
  const sum = structuredClone(first) as unknown as Record<string, unknown>;
  const histograms = { ...first.histograms } as Record<string, HistogramSnapshot>;
  let startedAt = first.startedAt;
  let uptime = first.uptimeSeconds;
  for (const next of rest) {
    const { histograms: h, startedAt: s, uptimeSeconds: u, ...counters } = next;
    addInto(sum, counters as unknown as Record<string, unknown>);
    for (const [name, histogram] of Object.entries(h)) histograms[name] = addHistogram(histograms[name]!, histogram);
    if (s < startedAt) startedAt = s;
    if (u > uptime) uptime = u;
  }
  return { ...(sum as unknown as StatsSnapshot), startedAt, uptimeSeconds: uptime, histograms } as StatsSnapshot;
}
