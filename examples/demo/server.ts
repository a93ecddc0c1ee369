/**
 * The demo site (`npm start`). For now one page that shows the native cores
 * at work: the HTML is squashed and carries the MD5 of its bytes as ETag.
 * The full demo (cluster, cache, every capability) comes with the middleware.
 */
import Koa from 'koa';
import { md5, squashHtml } from '../../src/index.ts';
import { coreKind } from '../../src/native/core.ts';

const page = `<!doctype html>
<html>
  <head>
    <title>koa-buffer demo</title>
  </head>
  <body>
    <h1>koa-buffer</h1>
    <p>
      This page was squashed by the ${coreKind} core before it was sent.
      View its source: the indentation is gone, the text is not.
    </p>
    <pre>
  pre-formatted text
      keeps its spaces
    </pre>
  </body>
</html>
`;

const app = new Koa();
app.use((ctx) => {
  const body = squashHtml(page, { level: 1 });
  ctx.type = 'html';
  ctx.set('ETag', `"${md5(body)}"`);
  ctx.body = body;
});

const port = Number(process.env.PORT ?? 3000);
const host = process.env.HOST ?? '127.0.0.1';
const server = app.listen(port, host, () => {
  console.log(`koa-buffer demo on http://${host}:${port}/  (Ctrl-C stops it)`);
  console.log(`  curl -si http://${host}:${port}/`);
});
process.on('SIGINT', () => server.close(() => process.exit(0)));
process.on('SIGTERM', () => server.close(() => process.exit(0)));
