/**
 * Recipe: a page streamed by React 19's `renderToPipeableStream` through
 * `buffer()`. React writes the page's shell at once and a Suspense
 * boundary's content (reviews from a slow service) a second later
 * (page.ts). koa-buffer compresses the stream as it comes and flushes the
 * compressor whenever React has nothing more ready, so the browser decodes
 * and paints the shell at once, not when the page ends. A streamed page is
 * compressed and flushed, not squashed (the squasher needs the whole body).
 *
 *   node --import tsx examples/react-stream/server.ts
 *   curl -s --compressed -N http://127.0.0.1:<port>/             # the shell, then the reviews a second later
 *   curl -s -H 'Accept-Encoding: br' -o /dev/null -w '%{size_download}\n' 'http://127.0.0.1:<port>/?coding=identity'
 *
 * `?coding=br` (or zstd, gzip, deflate) offers only that coding and
 * `?coding=identity` none, to compare them in one browser, which offers them
 * all (test/e2e/examples/react-stream.test.ts does).
 */
import type { AddressInfo } from 'node:net';
import Koa from 'koa';
import { buffer } from '../../src/index.ts'; // in an application: from 'koa-buffer'
import { streamPage } from './page.ts';

const codings = new Set(['br', 'zstd', 'gzip', 'deflate']);

const app = new Koa();
app.use(buffer({ optimiseContent: 1 }));
app.use(async (ctx) => {
  if (ctx.path !== '/') return;
  const coding = ctx.query.coding;
  if (coding === 'identity') ctx.compress = false;
  else if (typeof coding === 'string' && codings.has(coding))
    ctx.state.buffer = { encodings: [coding as 'br' | 'zstd' | 'gzip' | 'deflate'] };
  const page = await streamPage();
  // A client that leaves, or a page that never finishes, stops React's work.
  const timer = setTimeout(page.abort, 10_000);
  page.body.once('close', () => clearTimeout(timer));
  ctx.req.once('close', () => {
    if (!ctx.res.writableFinished) page.abort();
  });
  ctx.type = 'html';
  ctx.body = page.body;
});

const server = app.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => {
  console.log(`listening on http://127.0.0.1:${(server.address() as AddressInfo).port}`);
});
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => server.close(() => process.exit(0)));
