/**
 * The CHECK step (docs/architecture.md, "The pipeline"): every response
 * koa-buffer must leave alone, over real HTTP, each with its debug line.
 */
import zlib from 'node:zlib';
import test from 'ava';
import { buffer } from '../../src/buffer.ts';
import { htmlPage, recordingLogger, serve } from '../helpers/serve.ts';

const page = htmlPage(4096, 5);
const gzip = { 'accept-encoding': 'gzip' };

/** True when nothing of koa-buffer's shows in the response. */
function untouched(headers: Record<string, string>): boolean {
  return headers.etag === undefined && headers.vary === undefined && headers['last-modified'] === undefined;
}

for (const value of [0, false, '']) {
  test(`ctx.state.buffer = ${JSON.stringify(value)} turns koa-buffer off for the response`, async (t) => {
    const logger = recordingLogger();
    const server = await serve(t, [
      buffer({ logger, optimiseContent: 1 }),
      (ctx) => {
        ctx.state.buffer = value;
        ctx.body = page;
      },
    ]);
    const response = await server.request('/', { headers: gzip });
    t.is(response.headers['content-encoding'], undefined);
    t.true(untouched(response.headers), 'no ETag, Vary or Last-Modified');
    t.is(response.body.toString(), page, 'not optimised either');
    t.is(logger.count(/left alone: ctx.state.buffer turns koa-buffer off/), 1);
  });
}

for (const status of [204, 206, 304]) {
  test(`status ${status} is left alone`, async (t) => {
    const logger = recordingLogger();
    const server = await serve(t, [
      buffer({ logger }),
      (ctx) => {
        ctx.body = page;
        ctx.status = status;
        if (status === 206) ctx.set('Content-Range', `bytes 0-${page.length - 1}/${page.length * 2}`);
      },
    ]);
    const response = await server.request('/', { headers: gzip });
    t.is(response.status, status);
    t.is(response.headers['content-encoding'], undefined);
    t.true(untouched(response.headers));
    if (status === 206) t.is(response.body.toString(), page, 'the partial body is sent as it is');
    t.is(logger.count(new RegExp(`left alone: status ${status}`)), 1);
  });
}

test('a response whose Content-Encoding is already set is left alone', async (t) => {
  const logger = recordingLogger();
  const pre = zlib.gzipSync(page);
  const server = await serve(t, [
    buffer({ logger }),
    (ctx) => {
      ctx.type = 'text/html';
      ctx.set('Content-Encoding', 'gzip');
      ctx.body = pre;
    },
  ]);
  const response = await server.request('/', { headers: { 'accept-encoding': 'br' } });
  t.is(response.headers['content-encoding'], 'gzip');
  t.true(response.body.equals(pre), 'the bytes are untouched');
  t.true(untouched(response.headers));
  t.is(logger.count(/left alone: Content-Encoding already set/), 1);
});

test('a response without a media type is left alone', async (t) => {
  const logger = recordingLogger();
  const server = await serve(t, [
    buffer({ logger }),
    (ctx) => {
      ctx.body = page;
      ctx.remove('Content-Type');
    },
  ]);
  const response = await server.request('/', { headers: gzip });
  t.is(response.headers['content-encoding'], undefined);
  t.true(untouched(response.headers));
  t.is(logger.count(/left alone: no media type/), 1);
});

test('excludedTypes takes strings and RegExps; text/event-stream is compressed unless listed there', async (t) => {
  const logger = recordingLogger();
  const server = await serve(t, [
    buffer({ logger, excludedTypes: ['text/event-stream', /^text\/csv$/] }),
    (ctx) => {
      ctx.type = ctx.path === '/events' ? 'text/event-stream' : ctx.path === '/csv' ? 'text/csv' : 'text/plain';
      ctx.body = 'data: x\n\n'.repeat(200);
    },
  ]);
  for (const path of ['/events', '/csv']) {
    const response = await server.request(path, { headers: gzip });
    t.is(response.headers['content-encoding'], undefined, `${path} is not compressed`);
    t.true(untouched(response.headers), `${path} is not tagged`);
  }
  t.is((await server.request('/plain', { headers: gzip })).headers['content-encoding'], 'gzip', 'text/plain still is');
  t.is(logger.count(/left alone: excluded media type text\/event-stream/), 1);
  t.is(logger.count(/left alone: excluded media type text\/csv/), 1);
  const defaults = await serve(t, [
    buffer(),
    (ctx) => {
      ctx.type = 'text/event-stream';
      ctx.body = 'data: x\n\n'.repeat(200);
    },
  ]);
  // Since live streams are flushed as they go, server-sent events are compressed by default.
  t.is((await defaults.request('/', { headers: gzip })).headers['content-encoding'], 'gzip', 'compressed by default');
});

test('a type outside compressibleTypes is tagged but not compressed', async (t) => {
  const logger = recordingLogger();
  const server = await serve(t, [
    buffer({ logger, compressibleTypes: ['text/html'] }),
    (ctx) => {
      ctx.type = ctx.path === '/svg' ? 'image/svg+xml' : 'text/html';
      ctx.body = page;
    },
  ]);
  const svg = await server.request('/svg', { headers: gzip });
  t.is(svg.headers['content-encoding'], undefined);
  t.is(svg.headers.vary, undefined, 'no Vary: the coding never depends on Accept-Encoding');
  t.truthy(svg.headers.etag, 'still tagged');
  t.is(logger.count(/uncompressed: image\/svg\+xml is not compressible/), 1);
  t.is((await server.request('/html', { headers: gzip })).headers['content-encoding'], 'gzip');
});

test('the default compressible types include the close relatives', async (t) => {
  const types = [
    'text/html',
    'text/css',
    'text/javascript',
    'text/plain',
    'application/json',
    'application/javascript',
    'application/xml',
    'application/xhtml+xml',
    'image/svg+xml',
    'application/ld+json',
    'application/manifest+json',
    'application/problem+json',
    'application/rss+xml',
    'application/atom+xml',
    'application/vnd.api+json',
  ];
  const server = await serve(t, [
    buffer(),
    (ctx) => {
      ctx.type = decodeURIComponent(ctx.path.slice(1));
      ctx.body = page;
    },
  ]);
  for (const type of types) {
    t.is(
      (await server.request(`/${encodeURIComponent(type)}`, { headers: gzip })).headers['content-encoding'],
      'gzip',
      `${type} is compressible`,
    );
  }
  for (const type of ['image/png', 'application/octet-stream', 'application/zip', 'video/mp4', 'font/woff2']) {
    t.is(
      (await server.request(`/${encodeURIComponent(type)}`, { headers: gzip })).headers['content-encoding'],
      undefined,
      `${type} is not`,
    );
  }
});

test('compressContent off still tags, optimises and answers 304', async (t) => {
  const logger = recordingLogger();
  const server = await serve(t, [
    buffer({ logger, compressContent: false, optimiseContent: 1 }),
    (ctx) => {
      ctx.body = page;
    },
  ]);
  const response = await server.request('/', { headers: gzip });
  t.is(response.headers['content-encoding'], undefined);
  t.is(response.headers.vary, undefined);
  t.true(response.body.length < page.length, 'optimised');
  t.regex(response.headers.etag!, /^"[0-9a-f]{32}"$/);
  t.is((await server.request('/', { headers: { ...gzip, 'if-none-match': response.headers.etag! } })).status, 304);
  t.is(logger.count(/compressContent is off/), 2);
});

test('a response the action sends by itself (ctx.respond = false) is left alone', async (t) => {
  const logger = recordingLogger();
  const server = await serve(t, [
    buffer({ logger }),
    (ctx) => {
      ctx.respond = false;
      ctx.res.writeHead(200, { 'Content-Type': 'text/html' });
      ctx.res.end(page);
    },
  ]);
  const response = await server.request('/', { headers: gzip });
  t.is(response.body.toString(), page);
  t.true(untouched(response.headers));
  t.is(logger.count(/left alone: the response is sent by other means/), 1);
});
