/**
 * koa-conditional-get's own test cases, ported to koa-buffer.
 *
 * Source: https://github.com/koajs/conditional-get, test/index.js at commit
 * 1266ab24b1c2f133401897df7ca80a815db377f1; each case keeps its name. The
 * peers' `conditional()` + `etag()` pair is replaced by `buffer()` alone, so
 * If-None-Match carries koa-buffer's tag (the MD5 of the body) where the
 * original computed koa-etag's.
 */
import test from 'ava';
import { buffer } from '../../../src/buffer.ts';
import { md5 } from '../../../src/native/exports.ts';
import { serve } from '../../helpers/serve.ts';

const body = { name: 'tobi', species: 'ferret', age: 2 };

const app = () => [
  buffer(),
  async (ctx: import('koa').Context, next: import('koa').Next) => {
    await next();
    ctx.body = body;
  },
];

test('when cache is fresh should respond with 304', async (t) => {
  const server = await serve(t, app());
  const response = await server.request('/', { headers: { 'if-none-match': `"${md5(JSON.stringify(body))}"` } });
  t.is(response.status, 304);
  t.is(response.body.length, 0);
});

test('when cache is stale should do nothing', async (t) => {
  const server = await serve(t, app());
  const response = await server.request('/', { headers: { 'if-none-match': 'tobi' } });
  t.is(response.status, 200);
  t.deepEqual(JSON.parse(response.body.toString()), body);
});
