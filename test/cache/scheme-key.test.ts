/**
 * The scheme joins the generated key, over real HTTP: behind a proxy
 * (`app.proxy`, X-Forwarded-Proto) a page built for https holds https links,
 * and a plain-http request for the same URL must not get it as a hit, nor
 * the reverse. Without `app.proxy`, X-Forwarded-Proto is not trusted and
 * changes nothing.
 */
import test, { type ExecutionContext } from 'ava';
import Koa from 'koa';
import { buffer } from '../../src/buffer.ts';
import { serve, type Served } from '../helpers/serve.ts';

async function site(t: ExecutionContext, proxy: boolean): Promise<{ server: Served; runs: () => number }> {
  let runs = 0;
  const app = new Koa();
  app.proxy = proxy;
  app.use(buffer({ cache: true, varyBy: [] }));
  app.use(async (ctx) => {
    if (await ctx.bufferIsCached()) return;
    runs++;
    ctx.type = 'html';
    ctx.body = `<!doctype html><a href="${ctx.protocol}://${ctx.host}/next">next</a>`;
  });
  return { server: await serve(t, app), runs: () => runs };
}

const https = { host: 'site.example', 'x-forwarded-proto': 'https' };
const http = { host: 'site.example' };

test('with app.proxy, https and http requests of one URL have entries of their own', async (t) => {
  const { server, runs } = await site(t, true);
  const secure = await server.request('/page', { headers: https });
  t.is(secure.headers['x-cache'], 'MISS');
  t.regex(secure.body.toString(), /href="https:\/\/site\.example\/next"/);
  const plain = await server.request('/page', { headers: http });
  t.is(plain.headers['x-cache'], 'MISS', 'not the https page');
  t.regex(plain.body.toString(), /href="http:\/\/site\.example\/next"/);
  const secureAgain = await server.request('/page', { headers: https });
  t.is(secureAgain.headers['x-cache'], 'HIT');
  t.regex(secureAgain.body.toString(), /href="https:/, 'the https hit keeps its https links');
  const plainAgain = await server.request('/page', { headers: http });
  t.is(plainAgain.headers['x-cache'], 'HIT');
  t.regex(plainAgain.body.toString(), /href="http:/, 'the http hit is not upgraded or downgraded');
  t.is(runs(), 2);
});

test('without app.proxy, X-Forwarded-Proto is not trusted: one entry, built for http', async (t) => {
  const { server, runs } = await site(t, false);
  await server.request('/page', { headers: http });
  const forged = await server.request('/page', { headers: https });
  t.is(forged.headers['x-cache'], 'HIT');
  t.regex(forged.body.toString(), /href="http:/);
  t.is(runs(), 1);
});
