/**
 * Link rewriting keeps a link's scheme, over real HTTP: behind a proxy
 * (`app.proxy = true`, X-Forwarded-Proto read as Koa reads it) a page served
 * over https shortens its https self links and keeps its http ones, and a
 * page served over plain http does the opposite. The same body served to both
 * schemes in turn is optimised for each, never answered from the other's.
 */
import test from 'ava';
import Koa from 'koa';
import { buffer } from '../../src/buffer.ts';
import { decode, serve } from '../helpers/serve.ts';

/** An app whose page links to itself by http, https and scheme-relative URLs, and elsewhere. */
function app(): Koa {
  const koa = new Koa();
  koa.proxy = true;
  koa.use(buffer({ optimiseContent: 1, rewriteLinks: true }));
  koa.use((ctx) => {
    ctx.type = 'html';
    // The same string every time, so the middleware may recognise the body from an earlier request.
    ctx.body =
      `<p>\n  <a href="http://${ctx.host}/plain">plain</a>\n  <a href="https://${ctx.host}/secure">secure</a>\n` +
      `  <img src="//${ctx.host}/logo.png">\n  <a href="https://other.example/x">other</a>\n</p>`;
  });
  return koa;
}

async function page(server: Awaited<ReturnType<typeof serve>>, headers: Record<string, string> = {}): Promise<string> {
  const res = await server.request('/docs', { headers: { 'accept-encoding': 'identity', ...headers } });
  return decode(res).toString();
}

test('on plain http, http self links are shortened and https self links are kept', async (t) => {
  const server = await serve(t, app());
  const body = await page(server);
  const host = `127.0.0.1:${server.port}`;
  t.true(body.includes('<a href="/plain">'), body);
  t.true(body.includes(`<a href="https://${host}/secure">`), `the https link keeps its scheme: ${body}`);
  t.true(body.includes('<img src="/logo.png">'), 'a scheme-relative link is shortened');
  t.true(body.includes('https://other.example/x'), 'another host is kept');
});

test('behind a proxy saying X-Forwarded-Proto: https, https self links are shortened and http ones kept', async (t) => {
  const server = await serve(t, app());
  const body = await page(server, { 'x-forwarded-proto': 'https' });
  const host = `127.0.0.1:${server.port}`;
  t.true(body.includes('<a href="/secure">'), body);
  t.true(body.includes(`<a href="http://${host}/plain">`), `the http link keeps its scheme: ${body}`);
  t.true(body.includes('<img src="/logo.png">'), 'a scheme-relative link is shortened');
});

test('the same body served over https, then http, then https is rewritten for each scheme', async (t) => {
  const server = await serve(t, app());
  const host = `127.0.0.1:${server.port}`;
  for (const proto of ['https', 'http', 'https', 'http']) {
    const body = await page(server, { 'x-forwarded-proto': proto });
    const shortened = proto === 'https' ? '/secure' : '/plain';
    const kept = proto === 'https' ? `http://${host}/plain` : `https://${host}/secure`;
    t.true(body.includes(`href="${shortened}"`) && body.includes(`href="${kept}"`), `${proto}: ${body}`);
  }
});

test('an X-Forwarded-Proto other than http or https shortens only scheme-relative links', async (t) => {
  const server = await serve(t, app());
  const res = await server.request('/docs', { headers: { 'accept-encoding': 'identity', 'x-forwarded-proto': 'wss' } });
  t.is(res.status, 200);
  const body = decode(res).toString();
  const host = `127.0.0.1:${server.port}`;
  t.true(body.includes(`<a href="http://${host}/plain">`) && body.includes(`<a href="https://${host}/secure">`), body);
  t.true(body.includes('<img src="/logo.png">'), body);
});
