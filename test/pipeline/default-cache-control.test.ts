/**
 * The heuristic-freshness guard: a 200 GET/HEAD response whose Last-Modified
 * koa-buffer generated, and which carries neither Cache-Control nor Expires,
 * gets `Cache-Control: <defaultCacheControl>`, so no browser holds a dynamic
 * page fresh for a tenth of its Last-Modified age (RFC 9111 4.2.2). Over real
 * HTTP.
 */
import test from 'ava';
import type { Context } from 'koa';
import { BufferOptionError } from '../../src/base/errors.ts';
import { buffer } from '../../src/buffer.ts';
import type { BufferOptions } from '../../src/config/options.ts';
import { serve, type RawResponse } from '../helpers/serve.ts';

const page = '<!doctype html><p>a dynamic page, long enough to be compressed by any coding at all</p>';
const thirtyDaysAgo = Math.floor(Date.now() / 1000) - 30 * 24 * 3600;

async function answer(
  t: Parameters<typeof serve>[0],
  options: BufferOptions,
  action: (ctx: Context) => void = () => {},
  request: { method?: string; headers?: Record<string, string> } = {},
): Promise<RawResponse> {
  const server = await serve(t, [
    buffer(options),
    (ctx) => {
      ctx.body = page;
      action(ctx);
    },
  ]);
  return server.request('/', request);
}

test('a generated Last-Modified comes with Cache-Control: no-cache by default', async (t) => {
  const response = await answer(t, { lastModified: thirtyDaysAgo });
  t.truthy(response.headers['last-modified']);
  t.is(response.headers['cache-control'], 'no-cache');
  const head = await answer(t, { lastModified: thirtyDaysAgo }, undefined, { method: 'HEAD' });
  t.is(head.headers['cache-control'], 'no-cache', 'HEAD too');
});

test('the default lastModified (the app script) is guarded as well', async (t) => {
  const response = await answer(t, {});
  t.truthy(response.headers['last-modified']);
  t.is(response.headers['cache-control'], 'no-cache');
});

test('an app Cache-Control or Expires is left alone, and no header is added', async (t) => {
  const own = await answer(t, { lastModified: thirtyDaysAgo }, (ctx) => ctx.set('Cache-Control', 'max-age=60'));
  t.is(own.headers['cache-control'], 'max-age=60');
  const expires = await answer(t, { lastModified: thirtyDaysAgo }, (ctx) =>
    ctx.set('Expires', new Date(Date.now() + 60_000).toUTCString()),
  );
  t.is(expires.headers['cache-control'], undefined);
});

test('no guard without a generated Last-Modified', async (t) => {
  t.is((await answer(t, { lastModified: false })).headers['cache-control'], undefined, 'lastModified off');
  const appDate = await answer(t, {}, (ctx) => ctx.set('Last-Modified', new Date(0).toUTCString()));
  t.is(appDate.headers['cache-control'], undefined, 'the action dated the page itself');
  const notFound = await answer(t, {}, (ctx) => (ctx.status = 404));
  t.is(notFound.headers['cache-control'], undefined, 'not 200');
  const post = await answer(t, {}, undefined, { method: 'POST' });
  t.is(post.headers['cache-control'], undefined, 'not GET or HEAD');
});

test('defaultCacheControl: a value of your own, false for none, undefined for the default', async (t) => {
  t.is(
    (await answer(t, { defaultCacheControl: 'max-age=0, must-revalidate' })).headers['cache-control'],
    'max-age=0, must-revalidate',
  );
  t.is((await answer(t, { defaultCacheControl: false })).headers['cache-control'], undefined);
  t.is((await answer(t, { defaultCacheControl: undefined })).headers['cache-control'], 'no-cache');
  const perResponse = await answer(t, {}, (ctx) => (ctx.state.buffer = { defaultCacheControl: false }));
  t.is(perResponse.headers['cache-control'], undefined, 'ctx.state.buffer turns it off for one response');
});

test('a 304 carries the Cache-Control too, and a cache hit gets it like a fresh render', async (t) => {
  const server = await serve(t, [
    buffer({ cache: true, lastModified: thirtyDaysAgo }),
    async (ctx) => {
      if (await ctx.bufferIsCached()) return;
      ctx.body = page;
    },
  ]);
  const first = await server.request('/');
  t.is(first.headers['x-cache'], 'MISS');
  t.is(first.headers['cache-control'], 'no-cache');
  const hit = await server.request('/');
  t.is(hit.headers['x-cache'], 'HIT');
  t.is(hit.headers['cache-control'], 'no-cache');
  t.is((await server.request('/')).headers['cache-control'], 'no-cache', 'a prepared hit keeps it');
  const revalidated = await server.request('/', { headers: { 'If-None-Match': first.headers.etag! } });
  t.is(revalidated.status, 304);
  t.is(revalidated.headers['cache-control'], 'no-cache');
});

test('defaultCacheControl is validated', (t) => {
  for (const value of ['', '  ', 5, true, 'no-cache\r\nX-Evil: 1'] as unknown[]) {
    const error = t.throws(() => buffer({ defaultCacheControl: value as string }), { instanceOf: BufferOptionError });
    t.is(error?.key, 'option_default_cache_control', JSON.stringify(value));
  }
});
