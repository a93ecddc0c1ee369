/**
 * Importing koa-buffer adds `ctx.bufferIsCached()` to Koa's context, so an
 * application's routes call it with no cast.
 */
import Koa from 'koa';
import { buffer, type BufferIsCachedOptions } from 'koa-buffer';
import { expect, test } from 'tstyche';

test('ctx.bufferIsCached() is on every Koa context and resolves to a boolean', () => {
  const app = new Koa();
  app.use(buffer({ cache: true }));
  app.use(async (ctx) => {
    expect(ctx.bufferIsCached()).type.toBe<Promise<boolean>>();
    if (await ctx.bufferIsCached()) return;
    ctx.body = 'built';
  });
  expect<Koa.Context['bufferIsCached']>().type.toBe<(overrides?: BufferIsCachedOptions) => Promise<boolean>>();
  expect<Koa.ParameterizedContext<{ user: string }>>().type.toHaveProperty('bufferIsCached');
});

test("it takes per-call overrides, as koa-cash's ctx.cashed(maxAge), and nothing else", () => {
  expect<Koa.Context['bufferIsCached']>().type.toBeCallableWith({ cacheDuration: 60 });
  expect<Koa.Context['bufferIsCached']>().type.toBeCallableWith({ cacheDuration: '1 hour', cacheTags: ['news'] });
  expect<Koa.Context['bufferIsCached']>().type.not.toBeCallableWith('key');
  expect<Koa.Context['bufferIsCached']>().type.not.toBeCallableWith({ cacheTags: 'news' });
  expect<Koa.Context['bufferIsCached']>().type.not.toBeCallableWith({ maxAge: 60 });
});
