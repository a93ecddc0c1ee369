/**
 * One scrape answers for every worker of a node:cluster: the primary asks
 * both workers over IPC and adds their stats up (clusterMetrics), with a
 * gauge saying how many answered.
 */
import test from 'ava';
import { fixture, spawnChild } from '../helpers/children.ts';
import { rawRequest } from '../helpers/serve.ts';

test('clusterMetrics() in the primary sums both workers: every request counted once, each worker’s own build', async (t) => {
  const child = spawnChild(t, fixture('cluster-metrics.ts'));
  const { port } = await child.waitForJson<{ port: number }>((m) => typeof m.port === 'number', 'the port');
  const total = 20;
  // Sequential requests on new connections: the primary deals connections round-robin to the workers.
  for (let i = 0; i < total; i++) t.is((await rawRequest(port, '/page')).status, 200);
  child.send('metrics');
  const { metrics } = await child.waitForJson<{ metrics: string }>((m) => typeof m.metrics === 'string', 'metrics');
  const value = (line: string): number =>
    Number(new RegExp(`^${line.replace(/[{}"]/g, '\\$&')} (\\S+)$`, 'm').exec(metrics)?.[1]);
  t.is(value('koa_buffer_cluster_workers{answered="true"}'), 2);
  t.is(value('koa_buffer_cluster_workers{answered="false"}'), 0);
  const hits = value('koa_buffer_requests_total{outcome="hit"}');
  const misses = value('koa_buffer_requests_total{outcome="miss"}');
  t.is(hits + misses, total, `every request counted once (${hits} hits, ${misses} misses)`);
  t.is(misses, 2, 'each worker built the page once, in its own memory cache');
  t.is(value('koa_buffer_builds_started_total'), 2);
  t.is(value('koa_buffer_budget_limit_bytes{budget="memo"}'), 2 * 64 * 1024 * 1024, 'budgets add up across workers');
  child.process.stdin!.end();
  t.deepEqual(await child.exited, { code: 0, signal: null });
});
