/**
 * Recipe: one process. `cache: true` keeps pages in an in-memory LRU (bounded
 * in bytes) that only this process sees; concurrent misses of one page are
 * coalesced, so a slow page is built once however many ask for it at once.
 *
 *   node --import tsx examples/one-process.ts      # PORT=3000 to choose the port
 *   curl -si --compressed http://127.0.0.1:<port>/report
 *
 * For several worker processes, see cluster-sqlite.ts; for several hosts,
 * redis-hosts.ts. An in-memory cache is per process: with workers, a waiting
 * request would never see the page another worker built.
 */
import Koa from 'koa';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { buffer } from 'koa-buffer';

const app = new Koa();

// Squash HTML, compress, ETag/304 for every response below; keep cached pages in memory.
app.use(buffer({ optimiseContent: 1, cache: true, cacheDuration: '5 minutes' }));

let builds = 0;
app.use(async (ctx) => {
  if (ctx.path !== '/report') return; // Koa answers 404
  // Check access here, before bufferIsCached: a hit is answered at once.
  if (await ctx.bufferIsCached()) return;
  builds += 1;
  console.log(`building the report (build ${builds})`);
  await sleep(500); // the expensive part
  ctx.type = 'html';
  ctx.body = `<!doctype html>
<html>
  <head>
    <title>Report</title>
  </head>
  <body>
    <h1>Report</h1>
    <p>
      Build number ${builds}, made at ${new Date().toISOString()}.
    </p>
  </body>
</html>
`;
});

const server = app.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => {
  console.log(`listening on http://127.0.0.1:${(server.address() as AddressInfo).port}`);
});
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => server.close(() => process.exit(0)));
