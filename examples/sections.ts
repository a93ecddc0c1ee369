/**
 * Recipe: options per section and per response.
 *
 * - `bufferSection(declared)` declares `compressContent`, `optimiseContent`,
 *   `rewriteLinks` or `trustLastModified` for every route beneath it (with
 *   @koa/router: `router.use('/legacy', bufferSection({...}))`); nested
 *   sections merge key by key and the innermost wins.
 * - `ctx.state.buffer` changes them for one response: `0`, `false` or `''`
 *   turns koa-buffer off; an object is laid over the options one key deep.
 *
 * Precedence, most specific first: ctx.state.buffer, the innermost section, buffer().
 *
 *   node --import tsx examples/sections.ts
 *   curl -s http://127.0.0.1:<port>/legacy/page         # not squashed: the section says so
 *   curl -s http://127.0.0.1:<port>/legacy/page?squash  # squashed: the response says so
 */
import type { AddressInfo } from 'node:net';
import Koa, { type Middleware } from 'koa';
import { buffer, bufferSection } from 'koa-buffer';

/** Runs `middleware` for paths under `prefix` only (what a router's prefix does). */
const under =
  (prefix: string, middleware: Middleware): Middleware =>
  (ctx, next) =>
    ctx.path === prefix || ctx.path.startsWith(`${prefix}/`) ? middleware(ctx, next) : next();

const page = `<!doctype html>
<html>
  <body>
    <p>
      The same indented page at every URL.
    </p>
  </body>
</html>
`;

const app = new Koa();
app.use(buffer({ optimiseContent: 1 })); // the site default: squash HTML

// Old templates whose white space matters (a whitespace-sensitive layout, say): leave them as written…
app.use(under('/legacy', bufferSection({ optimiseContent: 0 })));
// …except the part already rewritten, one level deeper: the innermost section wins.
app.use(under('/legacy/modern', bufferSection({ optimiseContent: 1 })));

app.use((ctx) => {
  if (ctx.path === '/live') {
    ctx.state.buffer = 0; // off for this response: no squashing, compression, ETag or 304
  } else if (ctx.path === '/api/data') {
    ctx.state.buffer = { compressContent: false }; // keep the ETag and 304, send it uncompressed
    ctx.body = { items: Array.from({ length: 20 }, (_, i) => ({ id: i, label: `item ${i}` })) };
    return;
  } else if ('squash' in ctx.query) {
    ctx.state.buffer = { optimiseContent: 1 }; // beats any section
  }
  ctx.type = 'html';
  ctx.body = page;
});

const server = app.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => {
  console.log(`listening on http://127.0.0.1:${(server.address() as AddressInfo).port}`);
});
for (const signal of ['SIGINT', 'SIGTERM'] as const) process.on(signal, () => server.close(() => process.exit(0)));
