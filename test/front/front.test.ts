/**
 * The front (src/front/): a listener before Koa that answers public cache
 * hits. Real HTTP over loopback. An outer middleware counts the requests
 * that reached Koa: a request the front answered never does. The attacks
 * come first: what would make the front answer a request the middleware
 * would not have answered the same way.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import test, { type ExecutionContext } from 'ava';
import Koa from 'koa';
import { BufferOptionError } from '../../src/base/errors.ts';
import { buffer, type BufferMiddleware } from '../../src/buffer.ts';
import { front, type FrontOptions } from '../../src/front/front.ts';
import { join } from 'node:path';
import { tempDir } from '../helpers/cache-workers.ts';
import { rawRequest, type RawResponse } from '../helpers/serve.ts';
import type { BufferOptions } from '../../src/config/options.ts';

const page = (path: string): string =>
  `<!doctype html><html><head><title>${path}</title></head><body>${'<p>Some text to compress. '.repeat(400)}${path}</p></body></html>`;

interface Site {
  port: number;
  middleware: BufferMiddleware;
  /** Requests that reached Koa. */
  reached(): number;
  /** Builds the action ran. */
  builds(): number;
  get(path: string, headers?: Record<string, string>, method?: string): Promise<RawResponse>;
}

async function site(
  t: ExecutionContext,
  options: BufferOptions = {},
  frontOptions: FrontOptions = { paths: ['/'] },
  outer?: Koa.Middleware,
): Promise<Site> {
  let reached = 0;
  let builds = 0;
  const app = new Koa();
  app.silent = true;
  app.use(async (ctx, next) => {
    reached++;
    await next();
  });
  if (outer !== undefined) app.use(outer);
  const middleware = buffer({ cache: true, adaptiveCompression: false, ...options });
  app.use(middleware);
  app.use(async (ctx) => {
    if (await ctx.bufferIsCached()) return;
    builds++;
    ctx.type = 'html';
    ctx.body = page(ctx.path);
  });
  const server = http.createServer(front(app, frontOptions));
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(
    () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  );
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    middleware,
    reached: () => reached,
    builds: () => builds,
    get: (path, headers = {}, method = 'GET') => rawRequest(port, path, { headers, method }),
  };
}

/** Asks until the front answers (Koa is not reached), at most `tries` times; returns that answer, or undefined. */
async function untilFront(
  s: Site,
  path: string,
  headers: Record<string, string> = {},
  tries = 12,
): Promise<RawResponse | undefined> {
  for (let i = 0; i < tries; i++) {
    const before = s.reached();
    const response = await s.get(path, headers);
    if (s.reached() === before) return response;
  }
  return undefined;
}

/** Sends `path` and says whether it reached Koa. */
async function reachesKoa(s: Site, path: string, headers: Record<string, string> = {}, method = 'GET') {
  const before = s.reached();
  const response = await s.get(path, headers, method);
  return { reached: s.reached() > before, response };
}

/** Headers without those made per answer. */
function stable(response: RawResponse): Record<string, string> {
  const { date: _date, age: _age, 'cache-status': _status, ...rest } = response.headers;
  return rest;
}

const br = { 'accept-encoding': 'br' };

test('the front answers a public hit it learned with the bytes and head Koa sent', async (t) => {
  const s = await site(t);
  t.is((await s.get('/a', br)).headers['x-cache'], 'MISS');
  const throughKoa = await s.get('/a', br);
  t.is(throughKoa.headers['x-cache'], 'HIT');
  const answered = await untilFront(s, '/a', br);
  t.truthy(answered, 'the front never answered');
  t.is(answered!.status, 200);
  t.deepEqual(answered!.body, throughKoa.body);
  t.deepEqual(stable(answered!), stable(throughKoa));
  t.regex(answered!.headers['cache-status']!, /^koa-buffer; hit; ttl=\d+$/);
  t.regex(answered!.headers.age!, /^\d+$/);
  t.truthy(answered!.headers.date);
  t.is(s.builds(), 1);
  const stats = s.middleware.stats();
  t.true(stats.frontHits >= 1);
  t.true(stats.requests.hit >= 2);
});

test('Cookie, Authorization, Range, Cache-Control, Pragma and a named dictionary always go to Koa', async (t) => {
  const s = await site(t);
  await s.get('/b', br);
  t.truthy(await untilFront(s, '/b', br));
  const extras: Record<string, string>[] = [
    { cookie: 'session=x' },
    { authorization: 'Basic YTpi' },
    { range: 'bytes=0-10' },
    { 'cache-control': 'max-age=0' },
    { pragma: 'no-cache' },
    { 'available-dictionary': ':AAAA:' },
  ];
  for (const extra of extras) {
    const { reached } = await reachesKoa(s, '/b', { ...br, ...extra });
    t.true(reached, JSON.stringify(extra));
  }
  // And a request the front may answer still is.
  t.false((await reachesKoa(s, '/b', br)).reached);
});

test('a page built for a request with a cookie is never answered by the front', async (t) => {
  // varyBy [] keys on the URL alone: the middleware itself shares this page, the front must not.
  const s = await site(t, { varyBy: [] });
  t.is((await s.get('/c', { ...br, cookie: 'theme=dark' })).headers['x-cache'], 'MISS');
  t.is(await untilFront(s, '/c', br), undefined);
  t.is(s.builds(), 1);
  t.is(s.middleware.stats().frontHits, 0);
});

test('a head that an outer middleware makes private, or gives a cookie, is never learned', async (t) => {
  const s = await site(t, {}, { paths: ['/'] }, async (ctx, next) => {
    await next();
    if (ctx.get('x-visitor') === 'new' && ctx.response.get('x-cache') === 'HIT') ctx.cookies.set('seen', '1');
    if (ctx.get('x-visitor') === 'private' && ctx.response.get('x-cache') === 'HIT')
      ctx.set('Cache-Control', 'private, no-store');
  });
  await s.get('/e', br);
  t.is(await untilFront(s, '/e', { ...br, 'x-visitor': 'new' }), undefined);
  await s.get('/f', br);
  t.is(await untilFront(s, '/f', { ...br, 'x-visitor': 'private' }), undefined);
});

test('a per-request header of an outer middleware is not given to another request', async (t) => {
  let id = 0;
  const s = await site(t, {}, { paths: ['/'] }, async (ctx, next) => {
    ctx.set('X-Request-Id', String(++id));
    await next();
  });
  await s.get('/g', br);
  const answered = await untilFront(s, '/g', br);
  t.truthy(answered);
  t.is(answered!.headers['x-request-id'], undefined);
});

test('a purge, an expired entry and a rebuilt one go to Koa, which teaches the front again', async (t) => {
  const s = await site(t, { cacheDuration: 1 });
  await s.get('/h', br);
  t.truthy(await untilFront(s, '/h', br));
  await s.middleware.purge('/h');
  const afterPurge = await reachesKoa(s, '/h', br);
  t.true(afterPurge.reached);
  t.is(afterPurge.response.headers['x-cache'], 'MISS');
  t.truthy(await untilFront(s, '/h', br));
  await sleep(1100);
  const afterExpiry = await reachesKoa(s, '/h', br);
  t.true(afterExpiry.reached);
  t.is(afterExpiry.response.headers['x-cache'], 'MISS');
  t.is(s.builds(), 3);
});

test('a purge made through another middleware on the same SQLite file stops the front within a second', async (t) => {
  const dir = tempDir(t, 'kb-front-');
  const cache = `sqlite:${join(dir, 'cache.sqlite')}`;
  const s = await site(t, { cache });
  const purger = buffer({ cache });
  t.teardown(async () => {
    await s.middleware.close();
    await purger.close();
  });
  await s.get('/n', br);
  t.truthy(await untilFront(s, '/n', br));
  const at = Date.now();
  await purger.purge('/n');
  let reached = false;
  while (!reached && Date.now() - at < 1500) reached = (await reachesKoa(s, '/n', br)).reached;
  t.true(reached, 'the front kept answering a page purged elsewhere');
  t.log(`seen after ${Date.now() - at} ms`);
});

test.serial('NO_CACHE turns the front off as it turns the cache off', async (t) => {
  const s = await site(t);
  await s.get('/i', br);
  t.truthy(await untilFront(s, '/i', br));
  process.env.NO_CACHE = '1';
  try {
    await sleep(300); // the switches are read at most every 250 ms
    t.true((await reachesKoa(s, '/i', br)).reached);
  } finally {
    delete process.env.NO_CACHE;
    await sleep(300); // the tests that follow see the cache on again
  }
});

test('outside its paths and hosts the front never answers', async (t) => {
  const s = await site(t, {}, { paths: ['/blog'], hosts: ['127.0.0.1'] });
  await s.get('/blog/post', br);
  t.truthy(await untilFront(s, '/blog/post', br));
  await s.get('/blogroll', br);
  t.is(await untilFront(s, '/blogroll', br), undefined);
  await s.get('/blog/post', { ...br, host: 'other.example' });
  t.is(await untilFront(s, '/blog/post', { ...br, host: 'other.example' }), undefined);
});

test('another value of a varyBy header, or of a forwarding header, goes to Koa', async (t) => {
  const s = await site(t, { varyBy: ['accept-language'] });
  const en = { ...br, 'accept-language': 'en' };
  await s.get('/j', en);
  t.truthy(await untilFront(s, '/j', en));
  const fr = await reachesKoa(s, '/j', { ...br, 'accept-language': 'fr' });
  t.true(fr.reached);
  t.is(fr.response.headers['x-cache'], 'MISS');
  t.true((await reachesKoa(s, '/j', { ...en, 'x-forwarded-proto': 'https' })).reached);
});

test('each Accept-Encoding has its own answer, in its own coding', async (t) => {
  const s = await site(t);
  await s.get('/k', br);
  t.truthy(await untilFront(s, '/k', br));
  const gzip = { 'accept-encoding': 'gzip' };
  t.true((await reachesKoa(s, '/k', gzip)).reached);
  const answered = await untilFront(s, '/k', gzip);
  t.is(answered?.headers['content-encoding'], 'gzip');
  t.is((await untilFront(s, '/k', br))?.headers['content-encoding'], 'br');
});

test('If-None-Match gets the 304 Koa would send; HEAD gets the head alone', async (t) => {
  const s = await site(t);
  await s.get('/l', br);
  // The first hit runs the pipeline (it is recorded, not yet given again): the front has learned nothing.
  const etag = (await s.get('/l', br)).headers.etag!;
  const conditional = { ...br, 'if-none-match': etag };
  const throughKoa = await reachesKoa(s, '/l', conditional);
  t.true(throughKoa.reached);
  t.is(throughKoa.response.status, 304);
  const learned = await untilFront(s, '/l', br);
  t.truthy(learned);
  const viaFront = await reachesKoa(s, '/l', conditional);
  t.false(viaFront.reached);
  t.is(viaFront.response.status, 304);
  t.is(viaFront.response.body.length, 0);
  t.deepEqual(stable(viaFront.response), stable(throughKoa.response));
  const other = await reachesKoa(s, '/l', { ...br, 'if-none-match': '"other"' });
  t.false(other.reached);
  t.is(other.response.status, 200);
  t.deepEqual(other.response.body, learned!.body);
  const head = await reachesKoa(s, '/l', br, 'HEAD');
  t.false(head.reached);
  t.is(head.response.status, 200);
  t.is(head.response.body.length, 0);
  t.is(head.response.headers['content-length'], learned!.headers['content-length']);
});

test('the learned answers stay within maxBytes', async (t) => {
  const s = await site(t, {}, { paths: ['/'], maxBytes: 40_000 });
  // Identity bodies of about 10 KB: four fit, eight do not.
  for (let i = 0; i < 8; i++) {
    await s.get(`/m${i}`);
    t.truthy(await untilFront(s, `/m${i}`));
  }
  const budget = s.middleware.stats().budgets.front!;
  t.true(budget.bytes <= budget.limit, JSON.stringify(budget));
  t.true(budget.bytes > 0);
  t.is(budget.limit, 40_000);
});

test('an answer the front cannot give goes to Koa; the process does not crash', async (t) => {
  const app = new Koa();
  app.silent = true;
  let reached = 0;
  app.use(async (_ctx, next) => {
    reached++;
    await next();
  });
  app.use(buffer({ cache: true, adaptiveCompression: false }));
  app.use(async (ctx) => {
    if (await ctx.bufferIsCached()) return;
    ctx.type = 'html';
    ctx.body = page(ctx.path);
  });
  const listener = front(app, { paths: ['/'] });
  let sabotage = false;
  const server = http.createServer((req, res) => {
    if (sabotage) {
      sabotage = false;
      const writeHead = res.writeHead;
      // The front's own writeHead throws once, as Node does for a value it refuses.
      res.writeHead = function refuse(): never {
        res.writeHead = writeHead;
        throw new TypeError('Invalid character in header content');
      };
    }
    listener(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const port = (server.address() as AddressInfo).port;
  const get = () => rawRequest(port, '/o', { headers: br });
  await get();
  let learned = false;
  for (let i = 0; i < 12 && !learned; i++) {
    const before = reached;
    await get();
    learned = reached === before;
  }
  t.true(learned);
  sabotage = true;
  const before = reached;
  const answered = await get();
  t.is(reached, before + 1, 'Koa answered');
  t.is(answered.status, 200);
  t.is(answered.headers['x-cache'], 'HIT');
});

test('front() refuses to start without a scope, with bad options, or without a buffer() cache', (t) => {
  const app = new Koa();
  app.use(buffer({ cache: true }));
  const refused = (options: unknown, key: string, on: Koa = app) => {
    const error = t.throws(() => front(on, options as FrontOptions), { instanceOf: BufferOptionError });
    t.is(error?.key, key, JSON.stringify(options));
    return error!;
  };
  t.regex(refused({}, 'front_scope_missing').message, /authentication included/);
  refused(undefined, 'front_scope_missing');
  refused({ paths: [] }, 'front_paths');
  refused({ paths: ['blog'] }, 'front_paths');
  refused({ paths: ['/blog?x'] }, 'front_paths');
  refused({ hosts: ['example.com:80'] }, 'front_hosts');
  refused({ paths: ['/'], maxBytes: -1 }, 'front_max_bytes');
  t.regex(refused({ paths: ['/'], path: ['/'] }, 'front_option_unknown').message, /'path'/);
  refused({ paths: ['/'] }, 'front_no_buffer', new Koa());
  const noCache = new Koa();
  noCache.use(buffer());
  refused({ paths: ['/'] }, 'front_no_cache', noCache);
  const two = new Koa();
  two.use(buffer({ cache: true }));
  two.use(buffer({ cache: true }));
  refused({ paths: ['/'] }, 'front_many_buffers', two);
  t.notThrows(() => front(two, { paths: ['/'], buffer: two.middleware[1] }));
});
