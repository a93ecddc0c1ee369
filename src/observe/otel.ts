/**
 * OpenTelemetry, when the application has `@opentelemetry/api` installed
 * (an optional peer dependency; nothing is loaded when it is absent): the
 * stats through its Meter (observable counters and gauges read from the
 * snapshot when the SDK collects, histograms recorded as builds, waits and
 * hits end), and spans for builds, waits, store calls and lock calls, made
 * from koa-buffer's diagnostics channels (base/channels.ts), each with how
 * it ended as an attribute.
 */
import { createRequire } from 'node:module';
import {
  buildChannel,
  lockChannel,
  requestChannel,
  storeChannel,
  waitChannel,
  type BuildMessage,
  type CallMessage,
  type RequestMessage,
  type WaitMessage,
} from '../base/channels.ts';
import type { Stats } from '../base/stats.ts';

type Api = typeof import('@opentelemetry/api');
type Span = import('@opentelemetry/api').Span;

const require = createRequire(import.meta.url);

/** The API, loaded on first use; null when it is not installed. */
let api: Api | null | undefined;

function loadApi(): Api | null {
  if (api !== undefined) return api;
  try {
    api = require('@opentelemetry/api') as Api;
  } catch {
    api = null;
  }
  return api;
}

/** The instrumentation scope's name, as OpenTelemetry names a library. */
const scope = 'koa-buffer';

/** Spans by the context object of the traced operation they follow. */
const spans = new WeakMap<object, Span>();
let tracing = false;

/** Makes spans of the tracing channels, once per process. */
function traceChannels(otel: Api): void {
  if (tracing) return;
  tracing = true;
  const tracer = otel.trace.getTracer(scope);
  const follow = <M extends object>(
    channel: typeof buildChannel | typeof waitChannel | typeof storeChannel,
    name: (message: M) => string,
    attributes: (message: M) => Record<string, string>,
    ended: (message: M) => Record<string, string>,
  ): void => {
    (channel as unknown as import('node:diagnostics_channel').TracingChannel<M, M>).subscribe({
      start: (message) => {
        spans.set(message, tracer.startSpan(name(message), { attributes: attributes(message) }));
      },
      end: () => undefined,
      asyncStart: () => undefined,
      error: (message) => {
        const span = spans.get(message);
        const error = (message as { error?: unknown }).error;
        if (span === undefined) return;
        if (error instanceof Error) span.recordException(error);
        span.setStatus({ code: otel.SpanStatusCode.ERROR, message: String((error as Error)?.message ?? error) });
      },
      asyncEnd: (message) => {
        const span = spans.get(message);
        if (span === undefined) return;
        spans.delete(message);
        span.setAttributes(ended(message));
        span.end();
      },
    });
  };
  follow<BuildMessage>(
    buildChannel,
    () => 'koa-buffer build',
    (m) => ({ 'koa_buffer.key': m.key, 'url.full': m.url }),
    (m) => ({ 'koa_buffer.outcome': m.result ?? 'unknown', ...(m.detail ? { 'koa_buffer.detail': m.detail } : {}) }),
  );
  follow<WaitMessage>(
    waitChannel,
    () => 'koa-buffer wait',
    (m) => ({ 'koa_buffer.key': m.key, 'url.full': m.url }),
    (m) => ({ 'koa_buffer.outcome': m.result ?? 'unknown' }),
  );
  for (const [channel, what] of [
    [storeChannel, 'store'],
    [lockChannel, 'lock'],
  ] as const)
    follow<CallMessage>(
      channel,
      (m) => `koa-buffer ${what} ${m.operation}`,
      (m) => ({ 'koa_buffer.key': m.key, 'koa_buffer.backend': m.backend, 'koa_buffer.operation': m.operation }),
      (m) => ({ 'koa_buffer.outcome': m.error === undefined ? 'ok' : 'error' }),
    );
}

/** True when an SDK registered a real provider: the API's own no-op ones are left alone, at no cost. */
function registered(provider: unknown): boolean {
  const delegate = (provider as { getDelegate?: () => unknown }).getDelegate?.() ?? provider;
  const name = (delegate as { constructor?: { name?: string } })?.constructor?.name;
  return name !== undefined && !name.startsWith('Noop');
}

/**
 * Reports one middleware's stats through the OpenTelemetry Meter, and makes
 * spans of the traced channels, for the providers an SDK has registered by
 * the time `buffer()` runs (as the OpenTelemetry docs say to: before the
 * application loads). Nothing happens when `@opentelemetry/api` is not
 * installed, or no SDK is registered: installed alone, the API costs nothing.
 *
 * @returns what was wired: spans, metrics, both or neither
 */
export function openTelemetry(stats: Stats): { spans: boolean; metrics: boolean } {
  const otel = loadApi();
  if (otel === null) return { spans: false, metrics: false };
  const spans = registered(otel.trace.getTracerProvider());
  if (spans) traceChannels(otel);
  if (!registered(otel.metrics.getMeterProvider())) return { spans, metrics: false };
  const meter = otel.metrics.getMeter(scope);
  const counter = (name: string, description: string, unit?: string) =>
    meter.createObservableCounter(`koa_buffer.${name}`, { description, ...(unit ? { unit } : {}) });
  const gauge = (name: string, description: string, unit?: string) =>
    meter.createObservableGauge(`koa_buffer.${name}`, { description, ...(unit ? { unit } : {}) });
  const requests = counter('requests', 'Requests through ctx.bufferIsCached(), by outcome.');
  const builds = counter('builds', 'Builds of a cache entry, by how they ended.');
  const waiters = counter('waiters', 'Requests that waited for another build, by how they were answered.');
  const purges = counter('purges', 'Purges made through this middleware, by kind.');
  const calls = counter('backend.calls', 'Store and lock calls, by backend and result.');
  const responses = counter('responses', 'Responses sent with a body, by content coding.');
  const bytes = counter('bytes', 'Bytes of those responses before (in) and after (out) coding.', 'By');
  const upgrades = counter('upgrades', 'Hot bodies recompressed, by result.');
  const budget = gauge('budget.bytes', 'Bytes each in-process memory budget holds.', 'By');
  const limit = gauge('budget.limit', 'The bound of each in-process memory budget.', 'By');
  meter.addBatchObservableCallback(
    (result) => {
      const s = stats.snapshot();
      for (const outcome of ['hit', 'stale', 'staleOnError', 'collapsed', 'failed', 'miss'] as const)
        result.observe(requests, s.requests[outcome], { outcome });
      for (const [detail, n] of Object.entries(s.requests.bypassByDetail))
        result.observe(requests, n, { outcome: 'bypass', detail });
      for (const [ended, n] of Object.entries(s.builds)) result.observe(builds, n, { result: ended });
      for (const [ended, n] of Object.entries(s.waiters)) result.observe(waiters, n, { result: ended });
      for (const [kind, n] of Object.entries(s.purges)) result.observe(purges, n, { kind });
      for (const [what, table] of [
        ['store', s.store],
        ['lock', s.lock],
      ] as const)
        for (const [backend, counts] of Object.entries(table))
          for (const [field, n] of Object.entries(counts)) result.observe(calls, n, { what, backend, result: field });
      for (const [coding, counts] of Object.entries(s.responses)) {
        result.observe(responses, counts.responses, { coding });
        result.observe(bytes, counts.bytesIn, { coding, direction: 'in' });
        result.observe(bytes, counts.bytesOut, { coding, direction: 'out' });
      }
      for (const [ended, n] of Object.entries(s.upgrades)) result.observe(upgrades, n, { result: ended });
      for (const [name, reading] of Object.entries(s.budgets)) {
        result.observe(budget, reading.bytes, { budget: name });
        result.observe(limit, reading.limit, { budget: name });
      }
    },
    [requests, builds, waiters, purges, calls, responses, bytes, upgrades, budget, limit],
  );
  recordDurations(meter);
  return { spans, metrics: true };
}

let recording = false;

/** Histograms of build, wait and hit times, recorded as each ends (once per process: the channels are shared). */
function recordDurations(meter: import('@opentelemetry/api').Meter): void {
  if (recording) return;
  recording = true;
  const build = meter.createHistogram('koa_buffer.build.duration', { unit: 's', description: 'Build time.' });
  const wait = meter.createHistogram('koa_buffer.wait.duration', { unit: 's', description: 'Wait time.' });
  const requestOutcomes = meter.createCounter('koa_buffer.request.outcomes', {
    description: 'Requests through ctx.bufferIsCached(), by the outcome their final Cache-Status says.',
  });
  const started = new WeakMap<object, number>();
  for (const [channel, histogram] of [
    [buildChannel, build],
    [waitChannel, wait],
  ] as const)
    (channel as unknown as import('node:diagnostics_channel').TracingChannel<object, object>).subscribe({
      start: (message) => void started.set(message, performance.now()),
      end: () => undefined,
      asyncStart: () => undefined,
      error: () => undefined,
      asyncEnd: (message) => {
        const at = started.get(message);
        if (at === undefined) return;
        const outcome = (message as { result?: string }).result ?? 'unknown';
        histogram.record((performance.now() - at) / 1000, { outcome });
      },
    });
  requestChannel.subscribe((message) => {
    const { outcome } = message as RequestMessage;
    requestOutcomes.add(1, { outcome });
  });
}
