/**
 * Purge by URL, by tag and of everything, in one process: every variant of
 * a URL goes, tags come from ctx.state.buffer and from the Cache-Tag header
 * (never sent), a build in flight when its URL is purged is not stored, and
 * a near cache in front of SQLite follows a purge made by another
 * middleware on the same file and the entries' expiry.
 */
import { join } from 'node:path';
import test from 'ava';
import Koa from 'koa';
import { BufferOptionError } from '../../src/base/errors.ts';
import { buffer, type BufferMiddleware } from '../../src/buffer.ts';
import { tempDir } from '../helpers/cache-workers.ts';
import { serve, type Served } from '../helpers/serve.ts';

const host = 'site.example';
/** Builds across every site of this file: no two builds make the same page. */
let everBuilt = 0;

/** A server whose action counts its runs and tags pages as the path says. */
async function site(
  t: Parameters<typeof serve>[0],
  middleware: BufferMiddleware,
  hold?: Promise<void>,
): Promise<{ server: Served; builds: () => number; started: Promise<void> }> {
  let builds = 0;
  let begin: () => void = () => undefined;
  const started = new Promise<void>((resolve) => (begin = resolve));
  const app = new Koa();
  app.use(middleware);
  app.use(async (ctx) => {
    if (ctx.path.startsWith('/articles/')) ctx.state.buffer = { cacheTags: [`article:${ctx.path.slice(10)}`] };
    if (await ctx.bufferIsCached()) return;
    builds++;
    everBuilt++;
    begin();
    if (hold !== undefined && ctx.path === '/slow') await hold;
    if (ctx.path === '/list') ctx.set('Cache-Tag', 'list, articles');
    if (ctx.path === '/late') ctx.state.buffer = { cacheTags: ['late'] }; // after the miss, as most actions do
    if (ctx.path === '/bad-tag') ctx.set('Cache-Tag', 'fine, not fine');
    ctx.type = 'html';
    ctx.body = `<!doctype html><p>${ctx.path} build ${builds} (${everBuilt}) for ${ctx.cookies.get('lang') ?? '-'}</p>`;
  });
  const server = await serve(t, app);
  return { server, builds: () => builds, started };
}

function get(server: Served, path: string, lang?: string): ReturnType<Served['request']> {
  const headers: Record<string, string> = { host };
  if (lang !== undefined) headers.cookie = `lang=${lang}`;
  return server.request(path, { headers });
}

async function xcache(server: Served, path: string, lang?: string): Promise<string | string[] | undefined> {
  return (await get(server, path, lang)).headers['x-cache'];
}

test('purge(url, {host}) removes every variant of the URL on that host, and nothing else', async (t) => {
  const middleware = buffer({ cache: true, varyBy: ['cookie:lang'] });
  const { server, builds } = await site(t, middleware);
  for (const lang of ['en', 'fr']) await get(server, '/page?x=1', lang);
  await get(server, '/other');
  t.is(await xcache(server, '/page?x=1', 'en'), 'HIT');
  t.is(await xcache(server, '/page?x=1', 'fr'), 'HIT');
  await middleware.purge('/page?x=1', { host: 'other.example' });
  t.is(await xcache(server, '/page?x=1', 'en'), 'HIT', 'another host is another URL');
  await middleware.purge('/page?x=1', { host: 'SITE.example' });
  t.is(await xcache(server, '/page?x=1', 'en'), 'MISS', 'the English variant went');
  t.is(await xcache(server, '/page?x=1', 'fr'), 'MISS', 'and the French one');
  t.is(await xcache(server, '/other'), 'HIT', 'other URLs stay');
  t.is(await xcache(server, '/page?x=1', 'en'), 'HIT', 'the rebuilt page is stored');
  t.is(builds(), 5);
  await middleware.purge('http://site.example/page?x=1');
  t.is(await xcache(server, '/page?x=1', 'en'), 'MISS', 'an absolute URL names its host');
  await middleware.purge('/other');
  t.is(await xcache(server, '/other'), 'MISS', 'without a host: every host');
});

test('purgeTag removes entries tagged by ctx.state.buffer or the Cache-Tag header, which is never sent', async (t) => {
  const middleware = buffer({ cache: true, varyBy: [] });
  const { server } = await site(t, middleware);
  const list = await get(server, '/list');
  t.is(list.headers['cache-tag'], undefined, 'the tag header is taken off the response');
  await get(server, '/articles/1');
  await get(server, '/articles/2');
  t.is((await get(server, '/list')).headers['cache-tag'], undefined, 'nor sent on a hit');
  await middleware.purgeTag('article:1');
  t.is(await xcache(server, '/articles/1'), 'MISS');
  t.is(await xcache(server, '/articles/2'), 'HIT');
  t.is(await xcache(server, '/list'), 'HIT');
  await get(server, '/late');
  t.is(await xcache(server, '/late'), 'HIT');
  await middleware.purgeTag('late');
  t.is(await xcache(server, '/late'), 'MISS', 'tags set by the action after its miss count');
  await middleware.purgeTag('articles');
  t.is(await xcache(server, '/list'), 'MISS', 'any of the header tags');
  await middleware.purgeAll();
  t.is(await xcache(server, '/articles/2'), 'MISS');
  t.is(await xcache(server, '/articles/1'), 'MISS');
});

test('a bad tag is refused with a clear error: not stored, as an option, as a purge argument', async (t) => {
  const errors: string[] = [];
  const quiet = (): void => undefined;
  const logger = { debug: quiet, info: quiet, warn: quiet, error: (line: string) => void errors.push(line) };
  const middleware = buffer({ cache: true, varyBy: [], logger });
  const { server } = await site(t, middleware);
  const first = await get(server, '/bad-tag');
  t.regex(errors[0] ?? '', /"not fine" is not a cache tag/);
  t.is(first.status, 200, 'the page is served');
  t.is(first.headers['cache-status'], 'koa-buffer; fwd=uri-miss; detail=TAG');
  t.is(await xcache(server, '/bad-tag'), 'MISS', 'and not stored');
  const option = t.throws(() => buffer({ cacheTags: ['a,b'] }), { instanceOf: BufferOptionError });
  t.regex(option.message, /cacheTags must be an array of tags/);
  t.throws(() => buffer({ cacheTagHeader: 'bad header' }), { instanceOf: BufferOptionError });
  await t.throwsAsync(middleware.purgeTag(''), {
    instanceOf: BufferOptionError,
    message: /purgeTag\(tag\) needs a tag/,
  });
  await t.throwsAsync(middleware.purge('relative/path'), { instanceOf: BufferOptionError, message: /purge\(url\)/ });
  await t.throwsAsync(middleware.purge('/x', { host: 'a b' }), { instanceOf: BufferOptionError });
});

test('a build in flight when its URL is purged is served but not stored: the next request rebuilds', async (t) => {
  let finish: () => void = () => undefined;
  const hold = new Promise<void>((resolve) => (finish = resolve));
  const middleware = buffer({ cache: true, varyBy: [] });
  const { server, builds, started } = await site(t, middleware, hold);
  const pending = get(server, '/slow');
  await started;
  await middleware.purge('/slow');
  finish();
  const built = await pending;
  t.is(built.status, 200);
  t.is(built.headers['cache-status'], 'koa-buffer; fwd=uri-miss; detail=PURGED');
  t.is(await xcache(server, '/slow'), 'MISS', 'the next request rebuilds');
  t.is(builds(), 2);
  t.is(await xcache(server, '/slow'), 'HIT');
});

test('near cache in front of SQLite: a purge by another middleware on the file is seen within 1 s, expiry at once', async (t) => {
  const dir = tempDir(t, 'kb-purge-');
  const cache = `sqlite:${join(dir, 'cache.sqlite')}`;
  const reader = buffer({ cache, varyBy: [], cacheDuration: 2 });
  const purger = buffer({ cache, varyBy: [] });
  t.teardown(async () => {
    await reader.close();
    await purger.close();
  });
  const { server, builds } = await site(t, reader);
  await get(server, '/articles/9');
  t.is(await xcache(server, '/articles/9'), 'HIT');
  const at = Date.now();
  await purger.purgeTag('article:9');
  let seen = false;
  while (Date.now() - at < 1000 && !seen) seen = (await xcache(server, '/articles/9')) === 'MISS';
  t.true(seen, 'the reader saw the purge made through another store object');
  t.log(`seen after ${Date.now() - at} ms`);
  t.is(await xcache(server, '/articles/9'), 'HIT');
  const beforeExpiry = builds();
  await new Promise((resolve) => setTimeout(resolve, 2100));
  t.is(await xcache(server, '/articles/9'), 'MISS', 'the copy expired with the entry');
  t.is(builds(), beforeExpiry + 1);
});

test('purge by URL, tag and all on a Keyv store (records kept in it) and on an lru-cache LRUCache (kept in the process)', async (t) => {
  const { default: Keyv } = await import('keyv');
  const { LRUCache } = await import('lru-cache');
  const stores = { Keyv: new Keyv(), LRUCache: new LRUCache<string, object>({ max: 100 }) };
  for (const [name, store] of Object.entries(stores)) {
    const middleware = buffer({ cache: store, varyBy: [] });
    const { server } = await site(t, middleware);
    for (const path of ['/articles/1', '/articles/2', '/other']) await get(server, path);
    t.is(await xcache(server, '/other'), 'HIT', name);
    await middleware.purge('/other');
    t.is(await xcache(server, '/other'), 'MISS', `${name}: purge(url)`);
    await middleware.purgeTag('article:1');
    t.is(await xcache(server, '/articles/1'), 'MISS', `${name}: purgeTag`);
    t.is(await xcache(server, '/articles/2'), 'HIT', `${name}: another tag stays`);
    await middleware.purgeAll();
    t.is(await xcache(server, '/articles/2'), 'MISS', `${name}: purgeAll`);
    t.is(await xcache(server, '/articles/2'), 'HIT', `${name}: stored again`);
  }
});

test("near cache: an entry refreshed by another process's no-cache request replaces the copy within 1 s", async (t) => {
  const dir = tempDir(t, 'kb-purge-');
  const cache = `sqlite:${join(dir, 'cache.sqlite')}`;
  const reader = buffer({ cache, varyBy: [] });
  const refresher = buffer({ cache, varyBy: [], cacheRequestNoCache: 'refresh' });
  t.teardown(async () => {
    await reader.close();
    await refresher.close();
  });
  const one = await site(t, reader);
  const two = await site(t, refresher);
  const first = (await get(one.server, '/page')).body.toString();
  t.is(await xcache(one.server, '/page'), 'HIT');
  const refreshed = await two.server.request('/page', { headers: { host, 'cache-control': 'no-cache' } });
  t.not(refreshed.body.toString(), first, 'a new build');
  t.is(refreshed.headers['cache-status'], 'koa-buffer; fwd=request; stored');
  const at = Date.now();
  let body = first;
  while (Date.now() - at < 1000 && body === first) body = (await get(one.server, '/page')).body.toString();
  t.is(body, refreshed.body.toString(), 'the reader answers the refreshed page');
});
