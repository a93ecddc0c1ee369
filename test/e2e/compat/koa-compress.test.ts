/**
 * koa-compress's own test cases, ported to koa-buffer.
 *
 * Source: https://github.com/koajs/compress, __tests__/index.js at commit
 * 049e9de6ab1a33a4a7ee12f5301bfa366ef4910d (the Koa 2 suite); each case keeps
 * its name. `compress(options)` becomes `buffer()` with the counterpart
 * options of docs/migration.md's table (threshold → minCompressSize).
 * supertest sent `Accept-Encoding: gzip, deflate` by default and decoded the
 * body; here the request says so and the test decodes. Where koa-buffer
 * answers differently on purpose, the test asserts koa-buffer's answer and
 * says "difference:"; docs/migration.md's table gives the reason.
 */
import crypto from 'node:crypto';
import fs from 'node:fs';
import test from 'ava';
import type { Context } from 'koa';
import { buffer } from '../../../src/buffer.ts';
import { decode, serve } from '../../helpers/serve.ts';

const bytes = crypto.randomBytes(1024);
const string = bytes.toString('hex');
const supertest = { headers: { 'accept-encoding': 'gzip, deflate' } };

function sendString(ctx: Context): void {
  ctx.body = string;
}

function sendBuffer(ctx: Context): void {
  ctx.compress = true;
  ctx.body = bytes;
}

test('should compress strings (difference: a Content-Length, not chunked)', async (t) => {
  const server = await serve(t, [buffer(), sendString]);
  const response = await server.request('/', supertest);
  t.is(response.status, 200);
  t.is(response.headers['content-encoding'], 'gzip');
  t.is(response.headers.vary, 'Accept-Encoding');
  t.is(response.headers['transfer-encoding'], undefined);
  t.is(Number(response.headers['content-length']), response.body.length);
  t.is(decode(response).toString(), string);
});

test('should not compress strings below threshold', async (t) => {
  const server = await serve(t, [buffer({ minCompressSize: '1mb' }), sendString]);
  const response = await server.request('/', supertest);
  t.is(response.status, 200);
  t.is(response.headers['content-length'], '2048');
  t.is(response.headers.vary, 'Accept-Encoding');
  t.is(response.headers['content-encoding'], undefined);
  t.is(response.headers['transfer-encoding'], undefined);
  t.is(response.body.toString(), string);
});

test('should compress JSON body (difference: a Content-Length, not chunked)', async (t) => {
  const jsonBody = { status: 200, message: 'ok', data: string };
  const server = await serve(t, [
    buffer(),
    (ctx) => {
      ctx.body = jsonBody;
    },
  ]);
  const response = await server.request('/', supertest);
  t.is(response.status, 200);
  t.is(response.headers['content-encoding'], 'gzip');
  t.is(response.headers.vary, 'Accept-Encoding');
  t.is(Number(response.headers['content-length']), response.body.length);
  t.is(decode(response).toString(), JSON.stringify(jsonBody));
});

test('should not compress JSON body below threshold', async (t) => {
  const jsonBody = { status: 200, message: 'ok' };
  // koa-compress's default threshold is 1kb; koa-buffer's minCompressSize is 32 bytes, so the migration sets it.
  const server = await serve(t, [
    buffer({ minCompressSize: '1kb' }),
    (ctx) => {
      ctx.body = jsonBody;
    },
  ]);
  const response = await server.request('/', supertest);
  t.is(response.status, 200);
  t.is(response.headers.vary, 'Accept-Encoding');
  t.is(response.headers['content-encoding'], undefined);
  t.is(response.headers['transfer-encoding'], undefined);
  t.is(response.body.toString(), JSON.stringify(jsonBody));
});

test('should compress buffers (difference: random bytes do not shrink, so they go out as they are)', async (t) => {
  const server = await serve(t, [buffer(), sendBuffer]);
  const response = await server.request('/', supertest);
  t.is(response.status, 200);
  t.is(response.headers.vary, 'Accept-Encoding');
  t.is(response.headers['content-encoding'], undefined, 'gzip would have made 1024 random bytes larger');
  t.is(response.headers['content-length'], '1024');
  t.true(response.body.equals(bytes));
});

test('should compress streams', async (t) => {
  const server = await serve(t, [
    buffer(),
    (ctx) => {
      ctx.type = 'application/javascript';
      ctx.body = fs.createReadStream(new URL(import.meta.url).pathname);
    },
  ]);
  const response = await server.request('/', supertest);
  t.is(response.status, 200);
  t.is(response.headers['content-encoding'], 'gzip');
  t.is(response.headers['transfer-encoding'], 'chunked');
  t.is(response.headers.vary, 'Accept-Encoding');
  t.is(response.headers['content-length'], undefined);
  t.is(decode(response).toString(), fs.readFileSync(new URL(import.meta.url).pathname, 'utf8'));
});

test('should compress when ctx.compress === true (difference: only when it shrinks the body)', async (t) => {
  const compressible = Buffer.from(string);
  const server = await serve(t, [
    buffer(),
    (ctx) => {
      ctx.compress = true;
      ctx.type = 'image/png'; // outside compressibleTypes: only the switch makes it compressed
      ctx.body = compressible;
    },
  ]);
  const response = await server.request('/', supertest);
  t.is(response.headers['content-encoding'], 'gzip');
  t.is(response.headers.vary, 'Accept-Encoding');
  t.true(decode(response).equals(compressible));
  const random = await serve(t, [buffer(), sendBuffer]);
  t.is((await random.request('/', supertest)).headers['content-encoding'], undefined);
});

test('should not compress when ctx.compress === false (difference: no Vary, the response never varies)', async (t) => {
  const server = await serve(t, [
    buffer(),
    (ctx) => {
      ctx.compress = false;
      ctx.body = bytes;
    },
  ]);
  const response = await server.request('/', supertest);
  t.is(response.status, 200);
  t.is(response.headers['content-length'], '1024');
  t.is(response.headers.vary, undefined);
  t.is(response.headers['content-encoding'], undefined);
  t.is(response.headers['transfer-encoding'], undefined);
});

test('should not compress HEAD requests (difference: HEAD gets the headers GET would get)', async (t) => {
  const server = await serve(t, [buffer(), sendString]);
  const head = await server.request('/', { method: 'HEAD', ...supertest });
  const get = await server.request('/', supertest);
  t.is(head.status, 200);
  t.is(head.body.length, 0);
  t.is(head.headers['content-encoding'], get.headers['content-encoding']);
  t.is(head.headers['content-length'], get.headers['content-length']);
  t.is(head.headers.etag, get.headers.etag);
});

test('should not crash even if accept-encoding: sdch', async (t) => {
  const server = await serve(t, [buffer(), sendString]);
  const response = await server.request('/', { headers: { 'accept-encoding': 'sdch, gzip, deflate' } });
  t.is(response.status, 200);
  t.is(response.headers['content-encoding'], 'gzip');
});

test('should not crash if no accept-encoding is sent', async (t) => {
  const server = await serve(t, [buffer(), sendBuffer]);
  const response = await server.request('/');
  t.is(response.status, 200);
  t.is(response.headers['content-encoding'], undefined);
});

test('should not crash if a type does not pass the filter', async (t) => {
  const server = await serve(t, [
    buffer(),
    (ctx) => {
      ctx.type = 'image/png';
      ctx.body = Buffer.alloc(2048);
    },
  ]);
  const response = await server.request('/', supertest);
  t.is(response.status, 200);
  t.is(response.headers['content-encoding'], undefined);
});

test('should not compress when transfer-encoding is already set', async (t) => {
  const server = await serve(t, [
    buffer({ minCompressSize: 0 }),
    (ctx) => {
      ctx.set('Content-Encoding', 'identity');
      ctx.type = 'text';
      ctx.body = 'asdf';
    },
  ]);
  const response = await server.request('/', supertest);
  t.is(response.body.toString(), 'asdf');
  t.is(response.headers['content-encoding'], 'identity');
});

test('should support Z_SYNC_FLUSH (difference: no `flush` option; buffered bodies are compressed whole)', async (t) => {
  const server = await serve(t, [buffer(), sendString]);
  const response = await server.request('/', supertest);
  t.is(response.headers['content-encoding'], 'gzip');
  t.is(decode(response).toString(), string);
});
