/**
 * Every Koa body kind through the pipeline over real HTTP: string, Buffer,
 * plain object/array (JSON), stream, null and empty; HEAD; error statuses;
 * a 5 MiB page; and Content-Length equal to the bytes sent throughout.
 */
import { Readable } from 'node:stream';
import test from 'ava';
import { buffer } from '../../src/buffer.ts';
import { koaMajor } from '../helpers/koa-version.ts';
import { decode, htmlPage, recordingLogger, serve } from '../helpers/serve.ts';

const page = htmlPage(8192, 3);
const gzip = { 'accept-encoding': 'gzip' };

test('a string body is compressed, tagged and sent with a correct Content-Length', async (t) => {
  const server = await serve(t, [
    buffer(),
    (ctx) => {
      ctx.body = page;
    },
  ]);
  for (const coding of ['br', 'zstd', 'gzip']) {
    const response = await server.request('/', { headers: { 'accept-encoding': coding } });
    t.is(response.headers['content-encoding'], coding);
    t.is(Number(response.headers['content-length']), response.body.length, 'Content-Length equals the bytes sent');
    t.true(response.body.length < page.length, 'compressed is smaller');
    t.is(decode(response).toString(), page, 'decompressed bytes equal the original');
    t.regex(response.headers.etag!, new RegExp(`^"[0-9a-f]{32}-${coding}"$`), 'the ETag names the coding');
    t.is(response.headers['content-type'], 'text/html; charset=utf-8', 'the type is kept');
  }
});

test('a Buffer body with a text type is compressed like a string', async (t) => {
  const bytes = Buffer.from(page);
  const server = await serve(t, [
    buffer(),
    (ctx) => {
      ctx.type = 'text/html';
      ctx.body = bytes;
    },
  ]);
  const response = await server.request('/', { headers: gzip });
  t.is(response.headers['content-encoding'], 'gzip');
  t.true(decode(response).equals(bytes));
});

test('a Buffer body keeps Koa’s application/octet-stream: not compressed, but tagged', async (t) => {
  const bytes = Buffer.from(page);
  const server = await serve(t, [
    buffer(),
    (ctx) => {
      ctx.body = bytes;
    },
  ]);
  const response = await server.request('/', { headers: gzip });
  t.is(response.headers['content-type'], 'application/octet-stream');
  t.is(response.headers['content-encoding'], undefined, 'octet-stream is not compressible');
  t.is(response.headers.vary, undefined, 'no Vary when compression is not considered');
  t.regex(response.headers.etag!, /^"[0-9a-f]{32}"$/);
  t.true(response.body.equals(bytes));
});

test('a plain object and an array are sent as JSON, compressed, as Koa would send them', async (t) => {
  const object = {
    items: Array.from({ length: 200 }, (_, i) => ({ id: i, name: `item ${i}`, tags: ['a', 'b'] })),
    ok: true,
    nothing: null,
  };
  const array = [1, 'two', { three: 3 }, ...Array.from({ length: 100 }, (_, i) => i)];
  const server = await serve(t, [
    buffer(),
    (ctx) => {
      ctx.body = ctx.path === '/array' ? array : object;
    },
  ]);
  const o = await server.request('/object', { headers: gzip });
  t.is(o.headers['content-type'], 'application/json; charset=utf-8');
  t.is(o.headers['content-encoding'], 'gzip');
  t.is(Number(o.headers['content-length']), o.body.length);
  t.is(decode(o).toString(), JSON.stringify(object), 'the JSON Koa itself would send');
  const a = await server.request('/array', { headers: gzip });
  t.deepEqual(JSON.parse(decode(a).toString()), array);
  const plain = await server.request('/object');
  t.is(plain.body.toString(), JSON.stringify(object), 'without Accept-Encoding the JSON is sent as is');
  t.regex(plain.headers.etag!, /^"[0-9a-f]{32}"$/);
});

test('a JSON body keeps a Content-Type the action chose (Koa 3; Koa 2 itself makes it application/json)', async (t) => {
  const server = await serve(t, [
    buffer(),
    (ctx) => {
      ctx.type = 'application/ld+json';
      ctx.body = { '@context': 'https://schema.org', name: 'x'.repeat(100) };
    },
  ]);
  const response = await server.request('/', { headers: gzip });
  // Koa 2's body setter types every object body as JSON, over what the action set, before koa-buffer sees it.
  const type = koaMajor === 2 ? 'application/json; charset=utf-8' : 'application/ld+json';
  t.is(response.headers['content-type'], type, 'the type Koa gave the body, untouched');
  t.is(response.headers['content-encoding'], 'gzip', 'JSON is compressible');
});

test('a stream body is compressed as a stream, not buffered', async (t) => {
  const logger = recordingLogger();
  const server = await serve(t, [
    buffer({ logger }),
    (ctx) => {
      ctx.type = 'text/html';
      ctx.body = Readable.from([page]);
    },
  ]);
  const response = await server.request('/', { headers: gzip });
  t.is(response.headers['content-encoding'], 'gzip');
  t.is(response.headers.etag, undefined, 'no MD5 ETag: the body was never whole in memory');
  t.is(response.headers['transfer-encoding'], 'chunked');
  t.is(decode(response).toString(), page, 'and not squashed either');
  t.is(logger.count(/compressing a stream body with gzip/), 1);
});

test('null, undefined and empty bodies are left alone', async (t) => {
  const logger = recordingLogger();
  const server = await serve(t, [
    buffer({ logger }),
    (ctx) => {
      if (ctx.path === '/null') ctx.body = null;
      else if (ctx.path === '/empty-string') ctx.body = '';
      else if (ctx.path === '/empty-buffer') {
        ctx.type = 'text/plain';
        ctx.body = Buffer.alloc(0);
      } else ctx.status = 200; // no body at all
    },
  ]);
  const nul = await server.request('/null', { headers: gzip });
  t.is(nul.status, 204, 'Koa turns a null body into 204');
  t.is(nul.headers.etag, undefined);
  const empty = await server.request('/empty-string', { headers: gzip });
  t.is(empty.status, 200);
  t.is(empty.headers['content-length'], '0');
  t.is(empty.headers.etag, undefined, 'an empty body gets no ETag');
  t.is(empty.headers['content-encoding'], undefined);
  const emptyBuffer = await server.request('/empty-buffer', { headers: gzip });
  t.is(emptyBuffer.headers.etag, undefined);
  const none = await server.request('/none', { headers: gzip });
  t.is(none.headers.etag, undefined);
  t.true(logger.count(/left alone: (empty body|status 204)/) >= 4, 'each is logged as left alone');
});

test('HEAD gets the headers and Content-Length of the GET, and no body', async (t) => {
  const server = await serve(t, [
    buffer({ optimiseContent: 1 }),
    (ctx) => {
      ctx.body = page;
    },
  ]);
  for (const coding of ['br', 'gzip', 'identity']) {
    const get = await server.request('/', { headers: { 'accept-encoding': coding } });
    const head = await server.request('/', { method: 'HEAD', headers: { 'accept-encoding': coding } });
    t.is(head.status, 200);
    t.is(head.body.length, 0, 'HEAD has no body');
    t.is(
      head.headers['content-length'],
      get.headers['content-length'],
      `${coding}: Content-Length is what a GET sends`,
    );
    t.is(head.headers.etag, get.headers.etag, 'the same ETag');
    t.is(head.headers['content-encoding'], get.headers['content-encoding']);
    t.is(head.headers['last-modified'], get.headers['last-modified']);
  }
  const held = await server.request('/', {
    method: 'HEAD',
    headers: {
      'accept-encoding': 'gzip',
      'if-none-match': (await server.request('/', { headers: gzip })).headers.etag!,
    },
  });
  t.is(held.status, 304, 'HEAD gets 304 too');
});

test('error statuses are compressed but get no ETag, Last-Modified or 304', async (t) => {
  const server = await serve(t, [
    buffer(),
    (ctx) => {
      ctx.status = ctx.path === '/missing' ? 404 : 500;
      ctx.body = page;
    },
  ]);
  for (const path of ['/missing', '/broken']) {
    const response = await server.request(path, {
      headers: { ...gzip, 'if-none-match': '*', 'if-modified-since': new Date(Date.now() + 86_400_000).toUTCString() },
    });
    t.is(response.status, path === '/missing' ? 404 : 500, 'the status is kept, never 304');
    t.is(response.headers['content-encoding'], 'gzip', 'error pages are compressed');
    t.is(decode(response).toString(), page);
    t.is(response.headers.etag, undefined, 'no ETag on an error status');
    t.is(response.headers['last-modified'], undefined, 'no Last-Modified on an error status');
  }
});

test('a 200 to POST is compressed but gets no ETag or 304', async (t) => {
  const server = await serve(t, [
    buffer(),
    (ctx) => {
      ctx.body = page;
    },
  ]);
  const response = await server.request('/', { method: 'POST', headers: { ...gzip, 'if-none-match': '*' } });
  t.is(response.status, 200);
  t.is(response.headers['content-encoding'], 'gzip');
  t.is(response.headers.etag, undefined);
  t.is(response.headers['last-modified'], undefined);
});

test('an action that throws still gets Koa’s own error response, and buffer() lets the error through', async (t) => {
  const server = await serve(t, [
    buffer(),
    () => {
      throw Object.assign(new Error('boom'), { status: 418, expose: true });
    },
  ]);
  const response = await server.request('/', { headers: gzip });
  t.is(response.status, 418);
  t.is(response.body.toString(), 'boom');
});

test('a Content-Length the action set wrongly is corrected to the bytes sent', async (t) => {
  const server = await serve(t, [
    buffer(),
    (ctx) => {
      ctx.body = page;
      ctx.set('Content-Length', '5');
    },
  ]);
  const response = await server.request('/', { headers: gzip });
  t.is(Number(response.headers['content-length']), response.body.length);
  t.is(decode(response).toString(), page);
});

test('a 5 MiB HTML page round-trips in every coding without blocking the event loop on one call', async (t) => {
  const big = htmlPage(5 * 1024 * 1024, 11);
  const logger = recordingLogger();
  const server = await serve(t, [
    buffer({ logger, optimiseContent: 1 }),
    (ctx) => {
      ctx.body = big;
    },
  ]);
  const identity = await server.request('/');
  t.is(Number(identity.headers['content-length']), identity.body.length);
  const entity = identity.body;
  t.true(entity.length < big.length, 'squashed');
  for (const coding of ['br', 'zstd', 'gzip']) {
    const response = await server.request('/', { headers: { 'accept-encoding': coding } });
    t.is(response.headers['content-encoding'], coding);
    t.is(
      Number(response.headers['content-length']),
      response.body.length,
      `${coding}: Content-Length equals the bytes sent`,
    );
    t.true(decode(response).equals(entity), `${coding}: decodes to the squashed page`);
  }
  // At each coding's cold level (src/encoding/coding-table.ts): each body is seen once per coding here.
  t.is(logger.count(/with br level \d+ \(threadpool\)/), 1, 'br of 5 MiB runs on the threadpool');
  t.is(logger.count(/with gzip level \d+ \(threadpool\)/), 1, 'gzip of 5 MiB runs on the threadpool');
  t.is(logger.count(/with zstd level \d+ \(sliced\)/), 1, 'zstd of 5 MiB is compressed in slices');
});
