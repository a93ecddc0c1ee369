/**
 * One scrape for every worker of a node:cluster (as prom-client's
 * AggregatorRegistry does it): each worker answers the primary's question
 * over the cluster's IPC channel with the sum of its middlewares' stats,
 * and the primary adds the answers up. Workers that do not answer within
 * the time given are left out, and the answer says how many answered.
 */
import cluster from 'node:cluster';
import type { Stats, StatsSnapshot } from '../base/stats.ts';
import { mergeSnapshots } from './merge.ts';
import { prometheusText } from './prometheus.ts';

/** The messages of the exchange; the type names are koa-buffer's own. */
const ask = 'koa-buffer:stats?';
const answer = 'koa-buffer:stats';

interface Question {
  readonly type: typeof ask;
  readonly id: number;
}

interface Answer {
  readonly type: typeof answer;
  readonly id: number;
  readonly stats: StatsSnapshot | undefined;
}

/** The stats of the middlewares of this process that are alive. */
const live = new Set<WeakRef<Stats>>();
let listening = false;

/**
 * Enters one middleware's stats among those this process answers with, and
 * in a cluster worker starts answering the primary (once per process).
 */
export function enrol(stats: Stats): void {
  live.add(new WeakRef(stats));
  if (listening || !cluster.isWorker) return;
  listening = true;
  process.on('message', (message: unknown) => {
    if (!isQuestion(message)) return;
    const reply: Answer = { type: answer, id: message.id, stats: processStats() };
    process.send?.(reply);
  });
}

/** The sum of this process's live middlewares' stats; undefined when it has none. */
export function processStats(): StatsSnapshot | undefined {
  const snapshots: StatsSnapshot[] = [];
  for (const ref of live) {
    const stats = ref.deref();
    if (stats === undefined) live.delete(ref);
    else snapshots.push(stats.snapshot());
  }
  return snapshots.length === 0 ? undefined : mergeSnapshots(snapshots);
}

function isQuestion(message: unknown): message is Question {
  return typeof message === 'object' && message !== null && (message as Question).type === ask;
}

let nextId = 1;

/**
 * In the primary of a node:cluster: every worker's stats summed, as
 * Prometheus text, for the primary's own `/metrics` listener. Workers that
 * do not answer within `timeoutMs` are left out; a gauge says how many answered.
 */
export async function clusterMetrics(timeoutMs = 1000): Promise<string> {
  const { stats, workers, answered } = await clusterStats(timeoutMs);
  const head =
    '# HELP koa_buffer_cluster_workers Workers of the cluster, and how many answered this scrape.\n' +
    '# TYPE koa_buffer_cluster_workers gauge\n' +
    `koa_buffer_cluster_workers{answered="false"} ${workers - answered}\n` +
    `koa_buffer_cluster_workers{answered="true"} ${answered}\n`;
  return stats === undefined ? head : head + prometheusText(stats);
}

/** What {@link clusterStats} found: the sum, and how many workers answered of how many were asked. */
export interface ClusterStats {
  readonly stats: StatsSnapshot | undefined;
  readonly workers: number;
  readonly answered: number;
}

/**
 * In the primary of a node:cluster: asks every worker for its stats and
 * adds them up. A worker that does not answer within `timeoutMs` is left out.
 *
 * @throws Error when called outside a cluster's primary
 */
export async function clusterStats(timeoutMs = 1000): Promise<ClusterStats> {
  if (!cluster.isPrimary) throw new Error('koa-buffer: clusterStats() is for the primary of a node:cluster');
  const workers = Object.values(cluster.workers ?? {}).filter((worker) => worker?.isConnected());
  const id = nextId++;
  const replies = await Promise.all(
    workers.map(
      (worker) =>
        new Promise<StatsSnapshot | undefined | null>((resolve) => {
          const timer = setTimeout(() => done(null), timeoutMs);
          const onMessage = (message: unknown): void => {
            const reply = message as Answer;
            if (reply?.type === answer && reply.id === id) done(reply.stats);
          };
          const done = (stats: StatsSnapshot | undefined | null): void => {
            clearTimeout(timer);
            worker!.off('message', onMessage);
            resolve(stats);
          };
          worker!.on('message', onMessage);
          try {
            worker!.send({ type: ask, id } satisfies Question);
          } catch {
            done(null);
          }
        }),
    ),
  );
  const answered = replies.filter((reply) => reply !== null);
  const snapshots = answered.filter((reply): reply is StatsSnapshot => reply !== undefined);
  return {
    stats: snapshots.length === 0 ? undefined : mergeSnapshots(snapshots),
    workers: workers.length,
    answered: answered.length,
  };
}
