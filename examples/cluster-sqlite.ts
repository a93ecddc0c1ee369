/**
 * Recipe: node:cluster on one host. The workers share one SQLite file as the
 * cache and elect one builder per page with flock(2) locks in a directory
 * (`cacheLockDir`), so a page one worker builds is a hit for every other,
 * and concurrent misses across workers build it once.
 *
 *   node --import tsx examples/cluster-sqlite.ts
 *   DATA_DIR=/var/cache/myapp PORT=8080 node --import tsx examples/cluster-sqlite.ts
 *
 * Rules: the cache and the lock
 * directory must be shared by all workers and writable by the user that runs
 * them; never put a per-worker cache (`cache: true`) in front, or a waiting
 * worker never sees the page another one built and answers 503 after
 * `cacheLockTimeout`. For several hosts, see redis-hosts.ts.
 */
import cluster from 'node:cluster';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import Koa from 'koa';
import { buffer } from 'koa-buffer';

const dataDir = process.env.DATA_DIR || join(tmpdir(), `koa-buffer-cluster-example-${process.getuid?.() ?? 'user'}`);
const workers = 2;

if (cluster.isPrimary) {
  // The workers start from this same file. The primary only forks, reports and stops them.
  for (let i = 0; i < workers; i++) cluster.fork();
  let ready = 0;
  cluster.on('listening', (_worker, address) => {
    if (++ready === workers)
      console.log(`listening on http://127.0.0.1:${address.port} (${workers} workers, data in ${dataDir})`);
  });
  let stopping = false;
  const stop = (): void => {
    stopping = true;
    for (const worker of Object.values(cluster.workers ?? {})) worker?.process.kill('SIGTERM');
  };
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
  cluster.on('exit', () => {
    if (stopping && Object.keys(cluster.workers ?? {}).length === 0) process.exit(0);
  });
} else {
  const app = new Koa();
  app.use(async (ctx, next) => {
    await next();
    ctx.set('X-Worker', String(process.pid)); // set outside buffer(), so it is not stored with the page
  });
  app.use(
    buffer({
      optimiseContent: 1,
      cache: `sqlite:${join(dataDir, 'cache.sqlite')}`, // one file for the host's workers (created 0600)
      cacheLockDir: join(dataDir, 'locks'), // one flock(2) file per key (created 0700)
    }),
  );
  app.use(async (ctx) => {
    if (ctx.path !== '/report') return;
    if (await ctx.bufferIsCached()) return;
    console.log(`worker ${process.pid} builds ${ctx.url}`);
    await sleep(500);
    ctx.type = 'html';
    ctx.body = `<!doctype html>
<html>
  <body>
    <p>
      Built by worker ${process.pid} at ${new Date().toISOString()}.
    </p>
  </body>
</html>
`;
  });
  const server = app.listen(Number(process.env.PORT ?? 0), '127.0.0.1');
  // Finish the requests under way, then exit; flock locks go with the process.
  for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => server.close(() => process.exit(0)));
}
