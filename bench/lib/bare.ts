/**
 * The ceiling of the HTTP benches: bare Koa handing out a page compressed
 * once at start-up (br level 4, gzip level 6, as the peers' defaults),
 * br to clients that accept it and gzip to the others; optionally rendering
 * the page on every request as the application behind koa-buffer does.
 */
import zlib from 'node:zlib';
import type Koa from 'koa';

/**
 * Answers every request on `app` with `page`, precompressed.
 *
 * @param render - when given, called on every request (its result must be the page), so that bare Koa
 *   does the application's own work too and only the response's handling differs from koa-buffer's
 */
export function useBarePrecompressed(app: Koa, page: string, render?: () => string): void {
  const bytes = Buffer.from(page);
  const pre = {
    br: zlib.brotliCompressSync(bytes, { params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 4 } }),
    gzip: zlib.gzipSync(bytes),
  };
  app.use((ctx) => {
    if (render !== undefined && render().length !== page.length) throw new Error('the render changed the page');
    const coding = (ctx.get('Accept-Encoding').includes('br') ? 'br' : 'gzip') as 'br' | 'gzip';
    ctx.type = 'html';
    ctx.set('Content-Encoding', coding);
    ctx.body = pre[coding];
  });
}
