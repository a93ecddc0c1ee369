/**
 * Recipe: koa-buffer as a caching reverse proxy in front of any HTTP origin.
 * Pages are kept in memory for as long as the origin's Cache-Control (or
 * Expires) says, compressed here for each client, and on expiry asked for
 * again with the stored ETag / Last-Modified: an origin that answers 304
 * sends no body, and the stored page is served on.
 *
 *   ORIGIN=http://127.0.0.1:8080 node --import tsx examples/proxy/server.ts   # PORT=3000 to choose the port
 *   curl -si --compressed http://127.0.0.1:<port>/
 *
 * What it does and does not do: README.md beside this file.
 */
import Koa from 'koa';
import type { AddressInfo } from 'node:net';
import { buffer } from 'koa-buffer';
import { proxyTo } from './proxy.ts';

const origin = process.env.ORIGIN;
if (!origin) {
  console.error('set ORIGIN, e.g. ORIGIN=http://127.0.0.1:8080');
  process.exit(2);
}

const app = new Koa();
// The origin's own freshness decides; a page that says nothing lives a minute.
const cache = buffer({ cache: true, cacheDuration: '1 minute' });
app.use(cache);
app.use(proxyTo(origin));

const server = app.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => {
  console.log(`listening on http://127.0.0.1:${(server.address() as AddressInfo).port}, proxying ${origin}`);
});
for (const signal of ['SIGINT', 'SIGTERM'] as const)
  process.on(signal, () => server.close(() => void cache.close().then(() => process.exit(0))));
