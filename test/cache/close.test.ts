/** buffer().close(): stores the middleware opened itself can be closed for a graceful shutdown. */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import Koa from 'koa';
import { buffer } from '../../src/buffer.ts';
import type { CacheStore } from '../../src/config/options.ts';
import { htmlPage, serve } from '../helpers/serve.ts';

test("close() checkpoints and closes a 'sqlite:' store it opened; a later request opens it again", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'kb-close-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const file = join(dir, 'pages.sqlite');
  const middleware = buffer({ cache: `sqlite:${file}`, varyBy: [] });
  const app = new Koa();
  app.use(middleware);
  app.use(async (ctx) => {
    if (await ctx.bufferIsCached()) return;
    ctx.type = 'html';
    ctx.body = htmlPage(4096);
  });
  const server = await serve(t, app);
  t.is((await server.request('/')).headers['x-cache'], 'MISS');
  t.true(existsSync(`${file}-wal`), 'the open database keeps its write-ahead log');
  await middleware.close();
  t.false(existsSync(`${file}-wal`), 'the last connection closed: SQLite checkpointed and removed the log');
  t.is((await server.request('/')).headers['x-cache'], 'HIT', 'the next request reopens the store and finds the entry');
  await middleware.close();
});

test('close() leaves a store object the application passed alone', async (t) => {
  let closed = 0;
  const map = new Map<string, unknown>();
  const store: CacheStore & { close(): void } = {
    get: (key) => map.get(key),
    set: (key, value) => map.set(key, value),
    delete: (key) => map.delete(key),
    close: () => {
      closed += 1;
    },
  };
  const middleware = buffer({ cache: store });
  await middleware.close();
  t.is(closed, 0, 'the application owns the store it passed');
});
