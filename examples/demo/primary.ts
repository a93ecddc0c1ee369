/**
 * The primary process: prepares the data directory, forks the workers,
 * prints what the demo serves once they all listen, adds up the workers'
 * counters when a worker asks for them (metrics.ts), and stops them on
 * SIGINT (Ctrl-C) or SIGTERM: each worker finishes the requests under way
 * and exits, then the primary exits 0. A second Ctrl-C kills them at once.
 */
import cluster, { type Worker } from 'node:cluster';
import { mkdirSync } from 'node:fs';
import { capabilities } from './capabilities.ts';
import { answerWorkers, metricsPath, statsPath } from './metrics.ts';
import { prepareDownload } from './pages/download.ts';
import { baseUrl, type Settings } from './settings.ts';

/** How long the workers get to stop before they are killed, ms. */
const stopMs = 15_000;

/** The lines printed once every worker listens. */
export function banner(settings: Settings, base: string, pids: number[]): string {
  const lines = [
    `koa-buffer demo: ${base}/  (${pids.length} workers: pid ${pids.join(', ')})`,
    `  data directory: ${settings.dataDir}`,
    `    cache ${settings.cacheUrl}, locks ${settings.lockDir}`,
    `  metrics of both workers, summed: ${base}${metricsPath} (Prometheus text), ${base}${statsPath} (JSON)`,
    '  Ctrl-C stops it. Open the index in a browser, or try:',
    '',
  ];
  for (const c of capabilities) lines.push(`  # ${c.name} (${c.path})`, `  ${c.curl(base)}`, '');
  return lines.join('\n');
}

/**
 * Runs the primary.
 *
 * @param settings - the demo's settings
 */
export function runPrimary(settings: Settings): void {
  mkdirSync(settings.dataDir, { recursive: true, mode: 0o700 });
  prepareDownload(settings.downloadFile);
  answerWorkers();

  const listening = new Map<Worker, number>();
  let stopping = false;
  let announced = false;
  let failed = false;

  const fork = (): Worker => cluster.fork();
  for (let i = 0; i < settings.workers; i++) fork();

  cluster.on('listening', (worker, address) => {
    listening.set(worker, address.port);
    if (announced || listening.size < settings.workers) return;
    announced = true;
    const pids = [...listening.keys()].map((w) => w.process.pid!);
    console.log(banner(settings, baseUrl(settings.host, address.port), pids));
  });

  cluster.on('exit', (worker, code, signal) => {
    const served = listening.delete(worker);
    // Ctrl-C reaches the whole process group: a worker may stop cleanly, and its exit arrive, before this
    // process has run its own SIGINT handler. A clean exit is looked at again once that handler has had its turn.
    if (served && !stopping && code === 0) setTimeout(() => ended(worker, code, signal, served), 250);
    else ended(worker, code, signal, served);
  });

  const ended = (worker: Worker, code: number, signal: string | null, served: boolean): void => {
    const how = signal ?? `code ${code}`;
    if (stopping) {
      // A worker that did not stop by itself (killed after stopMs, or crashed) makes the exit status 1.
      if (code !== 0 || signal !== null) failed = true;
      if (Object.keys(cluster.workers ?? {}).length === 0) {
        console.log('koa-buffer demo: stopped');
        process.exit(failed ? 1 : 0);
      }
    } else if (served) {
      console.error(`koa-buffer demo: worker ${worker.process.pid} ended (${how}); starting another`);
      fork();
    } else {
      // It never listened (a port in use, a broken install): another would fail the same way.
      console.error(`koa-buffer demo: worker ${worker.process.pid} could not start (${how}); stopping`);
      failed = true;
      stop('SIGTERM');
    }
  };

  const stop = (signal: NodeJS.Signals): void => {
    const workers = Object.values(cluster.workers ?? {}).filter((w): w is Worker => w !== undefined);
    if (stopping) {
      if (signal !== 'SIGINT') return;
      console.error('koa-buffer demo: killing the workers');
      for (const worker of workers) worker.process.kill('SIGKILL');
      return;
    }
    stopping = true;
    if (workers.length === 0) process.exit(failed ? 1 : 0);
    console.log(
      `koa-buffer demo: stopping ${workers.length === 1 ? 'the worker' : `${workers.length} workers`} (they finish the requests under way)`,
    );
    for (const worker of workers) worker.process.kill('SIGTERM');
    setTimeout(() => {
      console.error(`koa-buffer demo: workers still running after ${stopMs} ms; killing them`);
      for (const worker of Object.values(cluster.workers ?? {})) worker?.process.kill('SIGKILL');
    }, stopMs).unref();
  };
  process.on('SIGINT', () => stop('SIGINT'));
  process.on('SIGTERM', () => stop('SIGTERM'));
}
