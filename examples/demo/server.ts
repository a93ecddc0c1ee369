/**
 * The demo site (`npm start`): a Koa site under node:cluster, two workers
 * sharing a SQLite cache and a lock directory, with a page per capability of
 * koa-buffer and an index that explains them.
 *
 *   npm start                                  # http://127.0.0.1:3000
 *   PORT=8080 KOA_BUFFER_DEMO_DIR=./data npm start
 *
 * The primary forks the workers and prints what it serves (primary.ts); each
 * worker runs the Koa app (app.ts, worker.ts). Settings: settings.ts.
 * koa-buffer's counters, both workers summed: /metrics (Prometheus text)
 * and /api/stats (JSON, drawn live on the index), see metrics.ts.
 */
import cluster from 'node:cluster';
import { runPrimary } from './primary.ts';
import { readSettings } from './settings.ts';
import { runWorker } from './worker.ts';

const settings = readSettings();
if (cluster.isPrimary) runPrimary(settings);
else runWorker(settings);
