/**
 * Recipe: replacing koa-compress + koa-etag + koa-conditional-get + koa-cash
 * with one buffer().
 *
 * BEFORE — four middlewares, in this order:
 *
 *   app.use(compress({ threshold: 1024 }));            // koa-compress: br/gzip/deflate
 *   app.use(conditional());                            // koa-conditional-get: 304
 *   app.use(etag());                                   // koa-etag: ETag of the body
 *   app.use(cash({ get, set, setCachedHeader: true })); // koa-cash: page cache
 *   app.use(async (ctx) => {
 *     if (await ctx.cashed(60_000)) return;
 *     ctx.body = await render();
 *   });
 *
 * AFTER — one middleware:
 *
 *   app.use(buffer({ minCompressSize: 1024, cache: true, cacheDuration: 60 }));
 *   app.use(async (ctx) => {
 *     if (await ctx.bufferIsCached()) return;
 *     ctx.body = await render();
 *   });
 *
 * | before                                   | after                                                   |
 * |------------------------------------------|---------------------------------------------------------|
 * | koa-compress `threshold: 1024`           | `minCompressSize: 1024` (default 32)                    |
 * | koa-compress `br`/`gzip`/`deflate` params| `encodings`, `compressionLevels` (br, zstd, gzip)       |
 * | koa-compress `filter`                    | `compressibleTypes`, `excludedTypes`                    |
 * | koa-etag                                 | `generateEtag` (on): MD5 of the body, `-br`/`-gzip` suffix per coding |
 * | koa-conditional-get                      | `generate304` (on)                                      |
 * | koa-cash `get`/`set`                     | `cache`: `true`, a Keyv-style store, or `'sqlite:…'`/`'redis://…'` |
 * | `ctx.cashed(maxAge)`                     | `ctx.bufferIsCached()`; `cacheDuration`, per page via `ctx.state.buffer` |
 * | koa-cash `hash` (the URL)                | `cacheKey` (default: host, path, query and the Cookie header) |
 * | koa-cash `setCachedHeader`               | always `X-Cache` and `Cache-Status`                     |
 *
 * What changes for clients and servers: a compressed response gets its own
 * ETag (koa-etag gives br, gzip and identity the same one, so a shared cache
 * may hand one client's coding to another); a cached page is stored once,
 * uncompressed, and compressed per client; concurrent misses of a page build
 * it once (koa-cash builds it once per request); and HTML can be squashed
 * with `optimiseContent: 1`.
 *
 * Both stacks run here, to compare them:
 *
 *   node --import tsx examples/migrate-from-koa-compress.ts               # after
 *   STACK=before node --import tsx examples/migrate-from-koa-compress.ts  # before
 */
import { createRequire } from 'node:module';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import Koa, { type Middleware } from 'koa';
import compress from 'koa-compress';
import conditional from 'koa-conditional-get';
import etag from 'koa-etag';
import { buffer } from 'koa-buffer';

const stack = process.env.STACK === 'before' ? 'before' : 'after';
const app = new Koa();
let builds = 0;

/** The page: slow to render, worth caching. */
async function render(url: string): Promise<object> {
  builds += 1;
  console.log(`building ${url} (build ${builds})`);
  await sleep(300);
  return { url, items: Array.from({ length: 50 }, (_, i) => ({ id: i, name: `item ${i}` })) };
}

if (stack === 'before') {
  // koa-cash ships no type declarations; this is the part of its API used here.
  type Cash = (options: {
    get(key: string): unknown;
    set(key: string, value: unknown): unknown;
    setCachedHeader?: boolean;
  }) => Middleware;
  const cash = createRequire(import.meta.url)('koa-cash') as Cash;
  const pages = new Map<string, unknown>(); // koa-cash leaves expiry to the store
  app.use(compress({ threshold: 1024 }));
  app.use(conditional());
  app.use(etag());
  app.use(
    cash({ get: (key) => pages.get(key), set: (key, value) => void pages.set(key, value), setCachedHeader: true }),
  );
  app.use(async (ctx) => {
    const cashed = (ctx as unknown as { cashed(maxAge?: number): Promise<boolean> }).cashed;
    if (await cashed.call(ctx, 60_000)) return;
    ctx.body = await render(ctx.url);
  });
} else {
  app.use(buffer({ minCompressSize: 1024, cache: true, cacheDuration: 60 }));
  app.use(async (ctx) => {
    if (await ctx.bufferIsCached()) return;
    ctx.body = await render(ctx.url);
  });
}

const server = app.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => {
  console.log(`listening on http://127.0.0.1:${(server.address() as AddressInfo).port} (${stack})`);
});
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => server.close(() => process.exit(0)));
