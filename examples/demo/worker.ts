/**
 * A worker: serves the app, and on SIGTERM or SIGINT (Ctrl-C reaches every
 * process of the terminal's group) stops taking connections, lets the
 * requests under way finish, and exits 0.
 */
import type { AddressInfo } from 'node:net';
import { createApp, type Lifecycle } from './app.ts';
import type { Settings } from './settings.ts';

/** How long requests under way may take to finish once the worker stops, ms. */
const drainMs = 10_000;

/**
 * Starts serving.
 *
 * @param settings - where to listen and where the data is
 */
export function runWorker(settings: Settings): void {
  const lifecycle: Lifecycle = { stopping: false };
  const app = createApp(settings, lifecycle);
  const server = app.listen(settings.port, settings.host);
  server.on('error', (error) => {
    console.error(`[worker ${process.pid}] cannot listen on ${settings.host}:${settings.port}: ${error.message}`);
    process.exit(1);
  });
  server.on('listening', () => {
    const { port } = server.address() as AddressInfo;
    console.log(`[worker ${process.pid}] listening on port ${port}`);
  });

  const stop = (): void => {
    if (lifecycle.stopping) return;
    lifecycle.stopping = true;
    // close() stops accepting and drops idle keep-alive connections; the busy ones end after their response.
    // koa-buffer opened the SQLite store itself and offers no close(): WAL mode keeps the file
    // consistent when the process exits, and its locks (flock) are freed with the process.
    server.close(() => process.exit(0));
    server.closeIdleConnections();
    setTimeout(() => {
      console.error(`[worker ${process.pid}] requests still running after ${drainMs} ms; closing them`);
      server.closeAllConnections();
    }, drainMs).unref();
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}
