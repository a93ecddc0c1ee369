/**
 * A CommonJS application (a .cts file compiles to require calls) gets the
 * same types as an ES module one: `require('koa-buffer')` loads the ES module
 * through Node's require(esm), and TypeScript's NodeNext resolution follows
 * it through the "types" condition.
 */
/* eslint-disable @typescript-eslint/no-require-imports -- the CommonJS import form is what this file tests */
import Koa = require('koa');
import koaBuffer = require('koa-buffer');
/* eslint-enable @typescript-eslint/no-require-imports */
import { buffer, md5, BufferOptionError, type BufferOptions } from 'koa-buffer';
import { expect, test } from 'tstyche';

test('named imports and the require form give the same types', () => {
  expect(koaBuffer.buffer).type.toBe<typeof buffer>();
  expect(md5('x')).type.toBe<string>();
  expect(new koaBuffer.BufferOptionError('option_cache_lock_dir')).type.toBe<BufferOptionError>();
  expect(buffer).type.toBeCallableWith({ optimiseContent: 1 } satisfies BufferOptions);
  expect(buffer).type.not.toBeCallableWith({ optimiseContent: 3 });
});

test('the Koa context augmentation reaches CommonJS code too', () => {
  const app = new Koa();
  app.use(koaBuffer.buffer());
  app.use(async (ctx) => {
    expect(ctx.bufferIsCached()).type.toBe<Promise<boolean>>();
  });
});
