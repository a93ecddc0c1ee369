/**
 * `varyBy: ['cookie:NAME']` over real HTTP: the key holds that cookie's value
 * only, as `ctx.cookies.get` reads it (absent and empty are two values), so
 * analytics cookies do not give every visitor a cache of their own; plain
 * `cookie` keeps the whole header.
 */
import test, { type ExecutionContext } from 'ava';
import { BufferOptionError } from '../../src/base/errors.ts';
import { buffer } from '../../src/buffer.ts';
import type { BufferOptions } from '../../src/config/options.ts';
import { serve, type Served } from '../helpers/serve.ts';

async function site(t: ExecutionContext, options: BufferOptions): Promise<{ server: Served; runs: () => number }> {
  let runs = 0;
  const server = await serve(t, [
    buffer({ cache: true, ...options }),
    async (ctx) => {
      if (await ctx.bufferIsCached()) return;
      runs++;
      ctx.type = 'html';
      ctx.vary('Cookie'); // as session middleware does
      ctx.body = `<!doctype html><p>hello ${ctx.cookies.get('session') ?? 'guest'}</p>`;
    },
  ]);
  return { server, runs: () => runs };
}

const withCookie = (server: Served, cookie?: string) =>
  server.request('/', { headers: cookie === undefined ? {} : { cookie } });

test('cookie:session keys on the session cookie only', async (t) => {
  const { server, runs } = await site(t, { varyBy: ['cookie:session'] });
  const first = await withCookie(server, 'session=alice; _ga=GA1.1.111');
  t.is(first.headers['cache-status'], 'koa-buffer; fwd=miss; stored', 'Vary: Cookie is covered by the key');
  const other = await withCookie(server, '_ga=GA1.1.222; session=alice; theme=dark');
  t.is(other.headers['x-cache'], 'HIT', 'other cookies do not split the cache');
  t.is(other.body.toString(), '<!doctype html><p>hello alice</p>');
  const bob = await withCookie(server, 'session=bob; _ga=GA1.1.111');
  t.is(bob.headers['x-cache'], 'MISS', 'another session, another entry');
  t.is(bob.body.toString(), '<!doctype html><p>hello bob</p>');
  t.is((await withCookie(server, 'Session=alice')).headers['x-cache'], 'MISS', 'cookie names are case-sensitive');
  t.is(runs(), 3);
});

test('cookie:session: no cookie and an empty session are two values, as ctx.cookies.get reads undefined and an empty string', async (t) => {
  const { server, runs } = await site(t, { varyBy: ['cookie:session'] });
  t.is((await withCookie(server)).body.toString(), '<!doctype html><p>hello guest</p>');
  const empty = await withCookie(server, 'session=; _ga=1');
  t.is(empty.headers['x-cache'], 'MISS', 'the page built for no session is not the page built for an empty one');
  t.is(empty.body.toString(), '<!doctype html><p>hello </p>');
  t.is((await withCookie(server, '_ga=2')).headers['x-cache'], 'HIT');
  t.is((await withCookie(server, 'theme=dark; session=')).headers['x-cache'], 'HIT');
  t.is(runs(), 2);
});

test('plain cookie keeps the whole header', async (t) => {
  const { server, runs } = await site(t, { varyBy: ['cookie'] });
  await withCookie(server, 'session=alice; _ga=1');
  t.is((await withCookie(server, 'session=alice; _ga=2')).headers['x-cache'], 'MISS');
  t.is(runs(), 2);
});

test('varyBy accepts cookie:NAME beside header names, and refuses malformed entries', (t) => {
  t.notThrows(() => buffer({ varyBy: ['Cookie:session_id', 'accept-language'] }));
  for (const value of [['cookie:'], ['cookie:a b'], ['cookies:a:b']]) {
    const error = t.throws(() => buffer({ varyBy: value }), { instanceOf: BufferOptionError });
    t.is(error?.key, 'option_vary_by');
  }
});
