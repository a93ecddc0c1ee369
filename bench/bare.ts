/**
 * The ceiling of the HTTP benches: bare Koa handing out a page compressed
 * once at start-up (br level 4, gzip level 6, as koa-buffer's defaults),
 * br to clients that accept it and gzip to the others.
 */
import zlib from 'node:zlib';
import type Koa from 'koa';

/** Answers every request on `app` with `page`, precompressed. */
export function useBarePrecompressed(app: Koa, page: string): void {
  const bytes = Buffer.from(page);
  const pre = {
    br: zlib.brotliCompressSync(bytes, { params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 4 } }),
    gzip: zlib.gzipSync(bytes),
  };
  app.use((ctx) => {
    const coding = (ctx.get('Accept-Encoding').includes('br') ? 'br' : 'gzip') as 'br' | 'gzip';
    ctx.type = 'html';
    ctx.set('Content-Encoding', coding);
    ctx.body = pre[coding];
  });
}
