/**
 * koa-etag's own test cases, ported to koa-buffer.
 *
 * Source: https://github.com/koajs/etag, test/index.test.ts at commit
 * a5baf1bffa41b140d13e9b71b1bb3445a4e677d1 (the koa-etag 5.x suite); each case
 * keeps its name. koa-etag is replaced by `buffer()` alone. Where koa-buffer
 * answers differently on purpose, the test asserts koa-buffer's answer and
 * says "difference:"; docs/migration.md's table gives the reason.
 */
import fs from 'node:fs';
import test from 'ava';
import calculate from 'etag';
import { buffer } from '../../../src/buffer.ts';
import { md5 } from '../../../src/native/exports.ts';
import { serve } from '../../helpers/serve.ts';

test('etag() when body is missing should not add ETag', async (t) => {
  const server = await serve(t, [buffer(), (_, next) => next()]);
  const response = await server.request('/');
  t.is(response.status, 404);
  t.is(response.headers.etag, undefined);
});

test('etag() when ETag is exists should not add ETag', async (t) => {
  const server = await serve(t, [
    buffer(),
    (ctx, next) => {
      ctx.body = { hi: 'etag' };
      ctx.etag = 'etaghaha';
      return next();
    },
  ]);
  const response = await server.request('/');
  t.is(response.status, 200);
  t.is(response.headers.etag, '"etaghaha"');
  t.is(JSON.parse(response.body.toString()).hi, 'etag');
});

test('etag() when body is a string should add ETag (difference: the MD5 of the body, not koa-etag\'s "<length>-<sha1>")', async (t) => {
  const server = await serve(t, [
    buffer(),
    async (ctx, next) => {
      await next();
      ctx.body = 'Hello World';
    },
  ]);
  const response = await server.request('/');
  t.is(response.headers.etag, `"${md5('Hello World')}"`);
  t.not(response.headers.etag, '"b-Ck1VqNd45QIvq3AZd8XYQLvEhtA"', "koa-etag's tag");
});

test('etag() when body is a Buffer should add ETag (difference: MD5, as for strings)', async (t) => {
  const server = await serve(t, [
    buffer(),
    async (ctx, next) => {
      await next();
      ctx.body = Buffer.from('Hello World');
    },
  ]);
  const response = await server.request('/');
  t.is(response.headers.etag, `"${md5('Hello World')}"`);
});

test('etag() when body is JSON should add ETag (difference: MD5 of the JSON text)', async (t) => {
  const server = await serve(t, [
    buffer(),
    async (ctx, next) => {
      await next();
      ctx.body = { foo: 'bar' };
    },
  ]);
  const response = await server.request('/');
  t.is(response.headers.etag, `"${md5(JSON.stringify({ foo: 'bar' }))}"`);
});

test('etag() when body is a stream with a .path should add an ETag', async (t) => {
  const server = await serve(t, [
    buffer(),
    async (ctx, next) => {
      await next();
      ctx.body = fs.createReadStream('package.json');
    },
  ]);
  const response = await server.request('/');
  t.regex(response.headers.etag!, /^W\/.+/);
  // The very tag koa-etag computes, so clients' stored tags stay valid after the swap.
  t.is(response.headers.etag, calculate(fs.statSync('package.json')));
});

test('etag() when with options should add weak ETag (difference: no `weak` option; tags are strong, one per coding)', async (t) => {
  const server = await serve(t, [
    buffer(),
    async (ctx, next) => {
      await next();
      ctx.body = 'Hello World';
    },
  ]);
  const response = await server.request('/');
  t.false(response.headers.etag!.startsWith('W/'));
  const app = await serve(t, [
    buffer(),
    (ctx) => {
      ctx.etag = calculate('Hello World', { weak: true });
      ctx.body = 'Hello World';
    },
  ]);
  t.is((await app.request('/')).headers.etag, 'W/"b-Ck1VqNd45QIvq3AZd8XYQLvEhtA"', 'a weak tag the app sets is kept');
});
