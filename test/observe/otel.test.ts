/**
 * OpenTelemetry with its real SDK: an in-memory metric exporter reads the
 * stats back through the Meter (requests by outcome, build durations), and
 * an in-memory span exporter holds a span per build, wait, store call and
 * lock call, each with how it ended. The SDK's providers are registered
 * before buffer() runs, as an application registers them before it loads.
 * (This file runs in a process of its own: the registration is global.)
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { metrics, trace } from '@opentelemetry/api';
import {
  AggregationTemporality,
  InMemoryMetricExporter,
  MeterProvider,
  PeriodicExportingMetricReader,
} from '@opentelemetry/sdk-metrics';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import test from 'ava';
import { buffer } from '../../src/buffer.ts';
import { MemoryLock } from '../../src/locks/memory-lock.ts';
import { htmlPage, serve } from '../helpers/serve.ts';

const spans = new InMemorySpanExporter();
trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(spans)] }));
const exported = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE);
const reader = new PeriodicExportingMetricReader({ exporter: exported, exportIntervalMillis: 60_000 });
metrics.setGlobalMeterProvider(new MeterProvider({ readers: [reader] }));

const page = htmlPage(20_000);

test('the stats reach the Meter, and builds, waits, store and lock calls are spans with their outcome', async (t) => {
  const server = await serve(t, [
    buffer({ cache: true, varyBy: [], cacheLock: new MemoryLock() }),
    async (ctx) => {
      if (await ctx.bufferIsCached()) return;
      await sleep(80);
      ctx.type = 'html';
      ctx.body = page;
    },
  ]);
  await Promise.all([server.request('/a'), server.request('/a')]);
  await server.request('/a');
  await sleep(20);

  const ended = spans.getFinishedSpans();
  const build = ended.find((span) => span.name === 'koa-buffer build');
  t.truthy(build, 'a build span');
  t.is(build!.attributes['koa_buffer.outcome'], 'stored');
  t.regex(String(build!.attributes['url.full']), /\/a$/);
  t.true(build!.duration[0] * 1e3 + build!.duration[1] / 1e6 >= 70, 'the build span lasts the action');
  const wait = ended.find((span) => span.name === 'koa-buffer wait');
  t.is(wait?.attributes['koa_buffer.outcome'], 'answered');
  t.true(
    ended.some((span) => span.name === 'koa-buffer store get' && span.attributes['koa_buffer.backend'] === 'memory'),
  );
  t.true(ended.some((span) => span.name === 'koa-buffer store set'));
  t.true(ended.some((span) => span.name === 'koa-buffer lock acquire'));
  t.true(ended.some((span) => span.name === 'koa-buffer lock release'));

  await reader.forceFlush();
  const points = new Map<string, Array<{ attributes: Record<string, unknown>; value: unknown }>>();
  for (const batch of exported.getMetrics())
    for (const scope of batch.scopeMetrics)
      for (const metric of scope.metrics)
        points.set(
          metric.descriptor.name,
          metric.dataPoints.map((point) => ({ attributes: point.attributes, value: point.value })),
        );
  const requests = points.get('koa_buffer.requests') ?? [];
  const count = (outcome: string): unknown => requests.find((p) => p.attributes.outcome === outcome)?.value;
  t.is(count('hit'), 1);
  t.is(count('collapsed'), 1);
  t.is(count('miss'), 1);
  const budgets = points.get('koa_buffer.budget.bytes') ?? [];
  t.true(
    budgets.some((p) => p.attributes.budget === 'store' && (p.value as number) > 0),
    'budget gauges',
  );
  const durations = points.get('koa_buffer.build.duration') ?? [];
  t.is((durations[0]?.value as { count: number } | undefined)?.count, 1, 'one build recorded in the histogram');
});
