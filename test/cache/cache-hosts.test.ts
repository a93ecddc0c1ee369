/**
 * cacheHosts over real HTTP: only pages of the named hosts are stored; a
 * request for any other Host bypasses the cache with `detail=HOST`, so forged
 * Host headers cannot fill the store. With `app.proxy` the host is
 * X-Forwarded-Host's, as Koa reads it.
 */
import test, { type ExecutionContext } from 'ava';
import Koa from 'koa';
import { BufferOptionError } from '../../src/base/errors.ts';
import { buffer } from '../../src/buffer.ts';
import type { BufferOptions } from '../../src/config/options.ts';
import { serve, type Served } from '../helpers/serve.ts';

async function site(t: ExecutionContext, options: BufferOptions, proxy = false) {
  const store = new Map<string, unknown>();
  const app = new Koa();
  app.proxy = proxy;
  app.use(buffer({ cache: store, varyBy: [], cacheHosts: ['www.example.com', 'Example.COM'], ...options }));
  app.use(async (ctx) => {
    if (await ctx.bufferIsCached()) return;
    ctx.type = 'html';
    ctx.body = `<!doctype html><p>${ctx.host}</p>`;
  });
  const server: Served = await serve(t, app);
  return { server, store };
}

test('only the named hosts are cached, with or without a port, in any case', async (t) => {
  const { server, store } = await site(t, {});
  for (const host of ['www.example.com', 'EXAMPLE.com:8080', 'example.com']) {
    const response = await server.request('/', { headers: { host } });
    t.regex(response.headers['cache-status']!, /^koa-buffer; (fwd=miss; stored|hit)/, host);
  }
  t.is((await server.request('/', { headers: { host: 'www.example.com' } })).headers['x-cache'], 'HIT');
  const sizeBefore = store.size;
  for (const host of ['evil.example', 'www.example.com.evil', '127.0.0.1']) {
    const response = await server.request('/', { headers: { host } });
    t.is(response.headers['cache-status'], 'koa-buffer; fwd=bypass; detail=HOST', host);
    t.is(response.headers['x-cache'], undefined);
  }
  t.is(store.size, sizeBefore, 'forged Hosts added nothing to the store');
});

test('with app.proxy the host is X-Forwarded-Host; without it, X-Forwarded-Host is not trusted', async (t) => {
  const proxied = await site(t, {}, true);
  const forwarded = { host: '10.0.0.5:3000', 'x-forwarded-host': 'www.example.com' };
  t.is(
    (await proxied.server.request('/', { headers: forwarded })).headers['cache-status'],
    'koa-buffer; fwd=miss; stored',
  );
  const forged = { host: 'www.example.com', 'x-forwarded-host': 'evil.example' };
  t.is(
    (await proxied.server.request('/', { headers: forged })).headers['cache-status'],
    'koa-buffer; fwd=bypass; detail=HOST',
  );
  const direct = await site(t, {}, false);
  t.is(
    (await direct.server.request('/', { headers: { host: 'evil.example', 'x-forwarded-host': 'www.example.com' } }))
      .headers['cache-status'],
    'koa-buffer; fwd=bypass; detail=HOST',
  );
});

test('without cacheHosts any host is cached', async (t) => {
  const { server } = await site(t, { cacheHosts: undefined });
  t.is(
    (await server.request('/', { headers: { host: 'anything.example' } })).headers['cache-status'],
    'koa-buffer; fwd=miss; stored',
  );
});

test('cacheHosts is validated: host names without ports', (t) => {
  for (const value of ['example.com', ['example.com:80'], [''], [5], ['a b']]) {
    const error = t.throws(() => buffer({ cacheHosts: value as string[] }), { instanceOf: BufferOptionError });
    t.is(error?.key, 'option_cache_hosts', JSON.stringify(value));
  }
  t.notThrows(() => buffer({ cacheHosts: ['localhost', '127.0.0.1', '[::1]', 'xn--bcher-kva.example'] }));
});
