// One server of bench/process-pairs.sh: koa-buffer from the built package
// given (today's dist/ or a baseline's), on 127.0.0.1:PORT, until SIGTERM.
// hit: a cached page (the cache-hit row); render: the same page rendered
// and reworked on every request, no cache (the repeated-render row).
// Usage: node bench/lib/pair-server.mjs <package dist/index.js> <port> <hit|render>
import Koa from 'koa';

const [, , entry, port, mode] = process.argv;
if (!entry || !port || (mode !== 'hit' && mode !== 'render'))
  throw new Error('usage: pair-server.mjs <dist/index.js> <port> <hit|render>');
const { buffer } = await import(entry);
const app = new Koa();
if (mode === 'hit') {
  const page = `<!doctype html><html><body>${'<p>hello world, a cached page</p>'.repeat(1500)}</body></html>`;
  app.use(buffer({ cache: true }));
  app.use(async (ctx) => {
    if (await ctx.bufferIsCached()) return;
    ctx.type = 'html';
    ctx.body = page;
  });
} else {
  app.use(buffer({ optimiseContent: 1 }));
  app.use(async (ctx) => {
    ctx.type = 'html';
    ctx.body = `<!doctype html><html><body>${'<p>hello world,   a page  rendered again</p>\n'.repeat(1200)}</body></html>`;
  });
}
const server = app.listen(Number(port), '127.0.0.1');
process.on('SIGTERM', () => server.close(() => process.exit(0)));
