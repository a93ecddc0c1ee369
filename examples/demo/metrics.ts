/**
 * koa-buffer's counters for the whole demo, both workers summed: `/metrics`
 * (Prometheus text) for a scraper, and `/api/stats` (JSON) for the index's
 * live panel, which polls it every second.
 *
 * Only the primary sees every worker, so it does the adding up
 * (`clusterMetrics()` and `clusterStats()` ask each worker over IPC and
 * sum the answers). The two URLs are still served by the workers, on the
 * site's own port: a worker that receives the request asks the primary over
 * the same IPC channel, and the primary answers with the sum for every
 * worker, whichever worker the connection reached. One port and one origin
 * serve the pages, the panel's JSON and the scrape, so the panel works from
 * wherever the site is reachable (a listener of the primary's own on
 * another port would be cross-origin for the panel, and unreachable from
 * another machine if it listened on loopback), and a scrape config names the
 * address the site already has.
 *
 * The demo listens on loopback unless HOST says otherwise, and its counters
 * hold no secrets. A site reachable from the internet would keep `/metrics`
 * off its public port: serve `clusterMetrics()` from a listener of the
 * primary's own on a private address instead.
 */
import cluster, { type Worker } from 'node:cluster';
import type { Context, Middleware } from 'koa';
import { clusterMetrics, clusterStats, prometheusContentType, type StatsSnapshot } from '../../src/index.ts'; // in an application: from 'koa-buffer'

/** The paths this module serves. */
export const metricsPath = '/metrics';
export const statsPath = '/api/stats';

/**
 * How long the primary waits for each worker's answer, ms. Workers answer
 * from memory at once; a worker that does not answer in time (busy,
 * stopping) is left out and the answer says so. Below the one-second scrape
 * interval and timeout the demo's Prometheus test configures.
 */
const workerTimeoutMs = 500;

/** How long a worker waits for the primary's sum before answering 503, ms. */
const primaryTimeoutMs = 2000;

/** The messages between a worker and the primary; the type names are the demo's own. */
const ask = 'koa-buffer-demo:counters?';
const answer = 'koa-buffer-demo:counters';

type Want = 'metrics' | 'stats';

interface Question {
  readonly type: typeof ask;
  readonly id: number;
  readonly want: Want;
}

interface Answer {
  readonly type: typeof answer;
  readonly id: number;
  readonly metrics?: string;
  readonly stats?: Counters;
  readonly error?: string;
}

/** Request outcomes, as `mw.stats().requests` counts them (one per request through `ctx.bufferIsCached()`). */
export const outcomes = ['hit', 'stale', 'staleOnError', 'collapsed', 'failed', 'miss', 'bypass'] as const;

/** What the panel shows: both workers' counters summed, with the figures it draws worked out. */
export interface Counters {
  /** Workers asked, and how many answered in time. */
  workers: number;
  answered: number;
  /** Requests through `ctx.bufferIsCached()`, by outcome, and their total. */
  requests: Record<(typeof outcomes)[number] | 'total', number>;
  /** Fresh hits over every request through `ctx.bufferIsCached()`; null before the first. */
  hitRatio: number | null;
  builds: StatsSnapshot['builds'];
  waiters: StatsSnapshot['waiters'];
  /** Per content coding that sent a response: bytes before and after coding, and the difference. */
  codings: Array<{ coding: string; responses: number; bytesIn: number; bytesOut: number; saved: number }>;
  /** Per memory budget: bytes held, the limit (0: unbounded), and bytes / limit (null when unbounded). */
  budgets: Array<{ name: string; bytes: number; limit: number; full: number | null }>;
}

/**
 * The panel's figures from a summed snapshot.
 *
 * The hit ratio is fresh hits over every request that went through
 * `ctx.bufferIsCached()`: hit / (hit + stale + staleOnError + collapsed +
 * failed + miss + bypass). It is what
 * `sum(koa_buffer_requests_total{outcome="hit"}) / sum(koa_buffer_requests_total)`
 * gives from `/metrics`, so the panel and a Prometheus graph agree. A stale
 * answer or one collapsed onto another request's build did not run the
 * action either, but it is not a fresh hit: the panel lists them beside it.
 */
export function counters(stats: StatsSnapshot | undefined, workers: number, answered: number): Counters {
  const requests = { hit: 0, stale: 0, staleOnError: 0, collapsed: 0, failed: 0, miss: 0, bypass: 0, total: 0 };
  for (const outcome of outcomes) {
    requests[outcome] = stats?.requests[outcome] ?? 0;
    requests.total += requests[outcome];
  }
  return {
    workers,
    answered,
    requests,
    hitRatio: requests.total === 0 ? null : requests.hit / requests.total,
    builds: stats?.builds ?? { started: 0, failed: 0, timedOut: 0, notStorable: 0, revalidated: 0 },
    waiters: stats?.waiters ?? { waited: 0, woken: 0, refused: 0, ranAction: 0 },
    codings: Object.entries(stats?.responses ?? {})
      .filter(([, c]) => c.responses > 0)
      .map(([coding, c]) => ({ coding, ...c, saved: c.bytesIn - c.bytesOut })),
    budgets: Object.entries(stats?.budgets ?? {}).map(([name, b]) => ({
      name,
      bytes: b.bytes,
      limit: b.limit,
      full: b.limit > 0 ? b.bytes / b.limit : null,
    })),
  };
}

function isQuestion(message: unknown): message is Question {
  return typeof message === 'object' && message !== null && (message as Question).type === ask;
}

function isAnswer(message: unknown): message is Answer {
  return typeof message === 'object' && message !== null && (message as Answer).type === answer;
}

/** In the primary: answers the workers' questions with every worker's counters summed. */
export function answerWorkers(): void {
  cluster.on('message', (worker: Worker, message: unknown) => {
    if (!isQuestion(message)) return;
    const { id, want } = message;
    const reply = async (): Promise<Answer> => {
      if (want === 'metrics') return { type: answer, id, metrics: await clusterMetrics(workerTimeoutMs) };
      const { stats, workers, answered } = await clusterStats(workerTimeoutMs);
      return { type: answer, id, stats: counters(stats, workers, answered) };
    };
    void reply()
      .catch((error: unknown) => ({ type: answer, id, error: String(error) }) satisfies Answer)
      .then((message) => {
        // The worker may have gone while the others were asked.
        if (worker.isConnected()) worker.send(message);
      });
  });
}

let nextId = 1;
const pending = new Map<number, (reply: Answer | undefined) => void>();
let listening = false;

/** In a worker: asks the primary for the sum over every worker; undefined when it does not answer in time. */
function askPrimary(want: Want): Promise<Answer | undefined> {
  if (process.send === undefined) return Promise.resolve({ type: answer, id: 0, error: 'not a cluster worker' });
  if (!listening) {
    listening = true;
    process.on('message', (message: unknown) => {
      if (isAnswer(message)) pending.get(message.id)?.(message);
    });
  }
  const id = nextId++;
  return new Promise((resolve) => {
    const timer = setTimeout(() => done(undefined), primaryTimeoutMs);
    const done = (reply: Answer | undefined): void => {
      clearTimeout(timer);
      pending.delete(id);
      resolve(reply);
    };
    pending.set(id, done);
    process.send!({ type: ask, id, want } satisfies Question);
  });
}

/**
 * Serves `/metrics` and `/api/stats` from the primary's sums. Mounted before
 * `buffer()`: the scrapes and the panel's polls are then not counted among
 * the responses they report, so the counters say what the site did, not
 * how often someone looked at them.
 */
export function countersApi(): Middleware {
  return async (ctx: Context, next) => {
    const want: Want | undefined = ctx.path === metricsPath ? 'metrics' : ctx.path === statsPath ? 'stats' : undefined;
    if (want === undefined) return next();
    if (ctx.method !== 'GET' && ctx.method !== 'HEAD') {
      ctx.set('Allow', 'GET, HEAD');
      ctx.status = 405;
      return;
    }
    ctx.set('Cache-Control', 'no-store');
    const reply = await askPrimary(want);
    if (reply === undefined || reply.error !== undefined) {
      ctx.status = 503;
      ctx.body = { error: reply?.error ?? `the primary did not answer within ${primaryTimeoutMs} ms` };
      return;
    }
    if (want === 'metrics') {
      ctx.body = reply.metrics;
      ctx.set('Content-Type', prometheusContentType);
    } else ctx.body = reply.stats;
  };
}
