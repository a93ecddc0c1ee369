/**
 * Where the generated Last-Modified, and the no-cache guard that comes with
 * it, go: by default HTML pages only (`lastModifiedTypes`), so a JSON API
 * keeps its own headers and its ETag; an application widens or narrows the
 * list, per middleware or per response; a `lastModified` function or a
 * per-response `lastModified` applies to any type, the application having
 * dated that response itself. Over real HTTP, through the memo and the cache.
 */
import test from 'ava';
import type { Context } from 'koa';
import { BufferOptionError } from '../../src/base/errors.ts';
import { buffer } from '../../src/buffer.ts';
import type { BufferOptions } from '../../src/config/options.ts';
import { recordingLogger, serve, type Served } from '../helpers/serve.ts';

const epoch = 1_600_000_000;
const date = new Date(epoch * 1000).toUTCString();

/** A site answering `/html`, `/xhtml`, `/json`, `/text` and `/feed` (Atom), each with a body of its type. */
async function site(
  t: Parameters<typeof serve>[0],
  options: BufferOptions,
  before: (ctx: Context) => void = () => {},
): Promise<Served> {
  return serve(t, [
    buffer({ lastModified: epoch, ...options }),
    async (ctx) => {
      before(ctx);
      if (await ctx.bufferIsCached()) return;
      const path = ctx.path.slice(1);
      if (path === 'json') ctx.body = { articles: [1, 2, 3], note: 'an API answer long enough to be compressed' };
      else if (path === 'text') ctx.body = 'plain text, long enough to be compressed by any coding at all';
      else {
        ctx.type = { html: 'html', xhtml: 'application/xhtml+xml', feed: 'application/atom+xml' }[path] ?? 'html';
        ctx.body = '<!doctype html><p>a page, long enough to be compressed by any coding at all</p>';
      }
    },
  ]);
}

test('by default only HTML gets Last-Modified and the no-cache guard; a JSON API keeps its headers and its ETag', async (t) => {
  const server = await site(t, {});
  for (const path of ['/html', '/xhtml']) {
    const response = await server.request(path);
    t.is(response.headers['last-modified'], date, path);
    t.is(response.headers['cache-control'], 'no-cache', path);
  }
  for (const path of ['/json', '/text', '/feed']) {
    const response = await server.request(path);
    t.is(response.headers['last-modified'], undefined, `${path}: no Last-Modified`);
    t.is(response.headers['cache-control'], undefined, `${path}: no Cache-Control added`);
    t.truthy(response.headers.etag, `${path}: still its ETag`);
    const again = await server.request(path, { headers: { 'if-none-match': response.headers.etag! } });
    t.is(again.status, 304, `${path}: still answered 304 by its ETag`);
    t.is(again.headers['last-modified'], undefined);
  }
  const repeated = await server.request('/json');
  t.is(repeated.headers['last-modified'], undefined, 'an answer given again (the memo) agrees');
});

test('the default scan of the app script and templates is held to HTML too', async (t) => {
  const server = await site(t, { lastModified: true });
  t.truthy((await server.request('/html')).headers['last-modified']);
  t.is((await server.request('/json')).headers['last-modified'], undefined);
});

test('lastModifiedTypes widens the list for an application that wants it on other types', async (t) => {
  const json = await site(t, { lastModifiedTypes: ['text/html', 'application/json'] });
  const response = await json.request('/json');
  t.is(response.headers['last-modified'], date);
  t.is(response.headers['cache-control'], 'no-cache', 'and the guard comes with it');
  t.is((await json.request('/text')).headers['last-modified'], undefined);
  const every = await site(t, { lastModifiedTypes: () => true });
  for (const path of ['/html', '/json', '/text', '/feed'])
    t.is((await every.request(path)).headers['last-modified'], date, `a predicate: ${path}`);
  const wildcard = await site(t, { lastModifiedTypes: ['application/*+xml', /^text\//] });
  t.is((await wildcard.request('/feed')).headers['last-modified'], date, 'a wildcard');
  t.is((await wildcard.request('/text')).headers['last-modified'], date, 'a RegExp');
  t.is((await wildcard.request('/xhtml')).headers['last-modified'], date);
  t.is((await wildcard.request('/json')).headers['last-modified'], undefined);
  const none = await site(t, { lastModifiedTypes: [] });
  t.is((await none.request('/html')).headers['last-modified'], undefined, '[] for none');
});

test('lastModified: false still turns it off, whatever the types', async (t) => {
  const server = await site(t, { lastModified: false, lastModifiedTypes: () => true });
  for (const path of ['/html', '/json']) {
    const response = await server.request(path);
    t.is(response.headers['last-modified'], undefined, path);
    t.is(response.headers['cache-control'], undefined, path);
  }
});

test('a lastModified function, or a lastModified set for the response, dates any type: the application asked', async (t) => {
  const byFunction = await site(t, { lastModified: (ctx) => (ctx.path === '/json' ? epoch + 60 : undefined) });
  t.is((await byFunction.request('/json')).headers['last-modified'], new Date((epoch + 60) * 1000).toUTCString());
  t.is((await byFunction.request('/html')).headers['last-modified'], undefined, 'the function said none');
  const perResponse = await site(t, { lastModified: false }, (ctx) => {
    if (ctx.path === '/json') ctx.state.buffer = { lastModified: epoch };
  });
  t.is((await perResponse.request('/json')).headers['last-modified'], date);
  t.is((await perResponse.request('/html')).headers['last-modified'], undefined);
});

test('lastModifiedTypes per response: a list for that response, undefined for none', async (t) => {
  const server = await site(t, {}, (ctx) => {
    if (ctx.query.types === 'json') ctx.state.buffer = { lastModifiedTypes: ['application/json'] };
    if (ctx.query.types === 'none') ctx.state.buffer = { lastModifiedTypes: undefined };
  });
  t.is((await server.request('/json?types=json')).headers['last-modified'], date);
  t.is((await server.request('/html?types=none')).headers['last-modified'], undefined);
  t.is((await server.request('/html')).headers['last-modified'], date, 'the configured list elsewhere');
});

test('a cached JSON answer has no Last-Modified on its hits either', async (t) => {
  const server = await site(t, { cache: true });
  const first = await server.request('/json');
  t.is(first.headers['x-cache'], 'MISS');
  const hit = await server.request('/json');
  t.is(hit.headers['x-cache'], 'HIT');
  t.is(hit.headers['last-modified'], undefined);
  t.is(hit.headers['cache-control'], undefined);
  t.is((await server.request('/html')).headers['last-modified'], date, 'a cached page keeps its own');
  t.is((await server.request('/html')).headers['last-modified'], date);
});

test('lastModifiedTypes is validated in buffer(), and a bad per-response value is ignored with one log line', async (t) => {
  for (const value of ['text/html', 5, [42], { 'text/html': true }] as unknown[]) {
    const error = t.throws(() => buffer({ lastModifiedTypes: value as never }), { instanceOf: BufferOptionError });
    t.is(error?.key, 'option_last_modified_types', JSON.stringify(value));
    t.true(error?.message.startsWith('koa-buffer: lastModifiedTypes must be a function of the media type'));
  }
  t.notThrows(() => buffer({ lastModifiedTypes: undefined }), 'undefined is the default');
  const log = recordingLogger();
  const server = await site(
    t,
    { logger: log },
    (ctx) => (ctx.state.buffer = { lastModifiedTypes: 'application/json' }),
  );
  const response = await server.request('/json');
  t.is(response.headers['last-modified'], undefined, 'the configured list applies');
  t.is((await server.request('/html')).headers['last-modified'], date);
  t.is(log.count(/ignored lastModifiedTypes \("application\/json"\)/), 2, JSON.stringify(log.lines));
});
