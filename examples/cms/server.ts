/**
 * Recipe: a small CMS whose pages are cached in SQLite by node:cluster
 * workers, and whose edit endpoint takes an edited article out of the cache
 * at once, with the listing that shows its title. Each article page is
 * tagged `article:ID` (through `ctx.state.buffer`), the listing `list`
 * (through the `Cache-Tag` header, which koa-buffer removes before sending);
 * an edit purges both tags. The purge is seen by the worker that made it at
 * once and by the other workers within `cacheSyncMs` (50 ms).
 *
 *   CMS_TOKEN=secret node --import tsx examples/cms/server.ts
 *   curl -X PUT -H 'Authorization: Bearer secret' 'http://127.0.0.1:PORT/admin/articles/1?title=New'
 *
 * The edit endpoint has its own authorization (a bearer token from the
 * CMS_TOKEN environment variable, compared in constant time); without
 * CMS_TOKEN it answers 503. It runs before buffer(): an edit is never cached.
 */
import cluster from 'node:cluster';
import { timingSafeEqual } from 'node:crypto';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Koa from 'koa';
import { buffer } from 'koa-buffer';
import { readArticles, writeArticles } from './articles.ts';

const dataDir = process.env.DATA_DIR || join(tmpdir(), `koa-buffer-cms-example-${process.getuid?.() ?? 'user'}`);
const workers = 2;

if (cluster.isPrimary) {
  readArticles(dataDir); // creates the content once, before the workers read it
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
  const cache = buffer({
    cache: `sqlite:${join(dataDir, 'cache.sqlite')}`,
    cacheLockDir: join(dataDir, 'locks'),
    varyBy: [], // the pages are the same for every visitor
  });
  const app = new Koa();
  app.use(async (ctx, next) => {
    await next();
    ctx.set('X-Worker', String(process.pid)); // set outside buffer(), so it is not stored with the page
  });
  app.use(async (ctx, next) => {
    const match = /^\/admin\/articles\/(\d+)$/.exec(ctx.path);
    if (match === null) return next();
    if (!authorised(ctx.get('Authorization'))) {
      ctx.status = process.env.CMS_TOKEN ? 401 : 503;
      ctx.set('WWW-Authenticate', 'Bearer');
      return;
    }
    if (ctx.method !== 'PUT') return void (ctx.status = 405);
    const id = match[1]!;
    const articles = readArticles(dataDir);
    const article = articles.find((a) => a.id === id);
    if (article === undefined) return void (ctx.status = 404);
    article.title = String(ctx.query.title ?? article.title);
    writeArticles(dataDir, articles);
    // The article page and the listing that shows its title, on every worker.
    await cache.purgeTag(`article:${id}`);
    await cache.purgeTag('list');
    console.log(`worker ${process.pid} purged article:${id} and list`);
    ctx.status = 204;
  });
  app.use(cache);
  app.use(async (ctx) => {
    const match = /^\/articles\/(\d+)$/.exec(ctx.path);
    if (ctx.path !== '/' && match === null) return;
    if (await ctx.bufferIsCached()) return;
    console.log(`worker ${process.pid} builds ${ctx.path}`);
    const articles = readArticles(dataDir);
    ctx.type = 'html';
    if (match === null) {
      ctx.set('Cache-Tag', 'list');
      const items = articles.map((a) => `<li><a href="/articles/${a.id}">${escape(a.title)}</a></li>`).join('');
      ctx.body = `<!doctype html><title>Articles</title><ul>${items}</ul>`;
      return;
    }
    const article = articles.find((a) => a.id === match[1]);
    if (article === undefined) return void (ctx.status = 404);
    ctx.state.buffer = { cacheTags: [`article:${article.id}`] };
    ctx.body = `<!doctype html><title>${escape(article.title)}</title><h1>${escape(article.title)}</h1><p>${escape(article.text)}</p>`;
  });
  const server = app.listen(Number(process.env.PORT ?? 0), '127.0.0.1');
  for (const signal of ['SIGINT', 'SIGTERM'] as const)
    process.on(signal, () => server.close(() => void cache.close().then(() => process.exit(0))));
}

/** True when `header` is `Bearer <CMS_TOKEN>`; never without a token configured. */
function authorised(header: string): boolean {
  const token = process.env.CMS_TOKEN;
  if (!token) return false;
  const given = Buffer.from(header.replace(/^Bearer\s+/i, ''));
  const wanted = Buffer.from(token);
  return header.toLowerCase().startsWith('bearer ') && given.length === wanted.length && timingSafeEqual(given, wanted);
}

function escape(text: string): string {
  return text.replace(/[&<>"]/g, (c) => `&#${c.charCodeAt(0)};`);
}
