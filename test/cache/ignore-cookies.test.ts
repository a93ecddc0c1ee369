/**
 * `cacheIgnoreCookies` over real HTTP: with the whole Cookie header in the
 * key (`varyBy: ['cookie']`, the default), the cookies it names are left out
 * of the key and out of the request the application sees, so visitors who
 * differ only by their analytics cookies share one entry, and the page
 * cannot differ by them; every other cookie still separates visitors. Off,
 * which is the default, nothing changes.
 */
import test, { type ExecutionContext } from 'ava';
import { BufferOptionError } from '../../src/base/errors.ts';
import { buffer } from '../../src/buffer.ts';
import type { BufferOptions } from '../../src/config/options.ts';
import { serve, type Served } from '../helpers/serve.ts';

/** What the application saw of each request it ran for. */
interface Seen {
  cookie: string | undefined;
  ga: string | undefined;
  session: string | undefined;
}

async function site(t: ExecutionContext, options: BufferOptions): Promise<{ server: Served; seen: Seen[] }> {
  const seen: Seen[] = [];
  const server = await serve(t, [
    buffer({ cache: true, ...options }),
    async (ctx) => {
      // What a middleware between buffer() and the action would see, before the action asks.
      const before = ctx.get('cookie');
      if (await ctx.bufferIsCached()) return;
      seen.push({
        cookie: ctx.request.header.cookie,
        ga: ctx.cookies.get('_ga', { signed: false }),
        session: ctx.cookies.get('session', { signed: false }),
      });
      if (before !== ctx.get('cookie')) throw new Error('the header changed while the request was under way');
      ctx.type = 'html';
      ctx.body = `<!doctype html><p>hello ${ctx.cookies.get('session', { signed: false }) ?? 'guest'}</p>`;
    },
  ]);
  return { server, seen };
}

const withCookie = (server: Served, cookie?: string, method = 'GET') =>
  server.request('/', { method, headers: cookie === undefined ? {} : { cookie } });

test('two visitors who differ only by _ga share one entry, and the application never sees _ga', async (t) => {
  const { server, seen } = await site(t, { cacheIgnoreCookies: 'analytics' });
  const first = await withCookie(server, '_ga=GA1.2.111.1; _gid=GA1.2.5');
  t.is(first.headers['x-cache'], 'MISS');
  const second = await withCookie(server, '_ga=GA1.2.222.2; _ga_X1Y2=GS1.1.9');
  t.is(second.headers['x-cache'], 'HIT', 'one entry for both');
  const none = await withCookie(server);
  t.is(none.headers['x-cache'], 'HIT', 'and for a visitor without cookies');
  t.deepEqual(seen, [{ cookie: undefined, ga: undefined, session: undefined }], 'the action ran once, without _ga');
});

test('a session cookie still separates visitors, whatever their _ga', async (t) => {
  const { server, seen } = await site(t, { cacheIgnoreCookies: 'analytics' });
  const alice = await withCookie(server, '_ga=GA1.2.1; session=alice');
  t.is(alice.body.toString(), '<!doctype html><p>hello alice</p>');
  const bob = await withCookie(server, '_ga=GA1.2.1; session=bob');
  t.is(bob.headers['x-cache'], 'MISS', 'another session, another entry');
  t.is(bob.body.toString(), '<!doctype html><p>hello bob</p>');
  const aliceAgain = await withCookie(server, 'session=alice; _ga=GA1.2.2; _gid=3');
  t.is(aliceAgain.headers['x-cache'], 'HIT', "alice's entry, though her _ga changed");
  t.is(aliceAgain.body.toString(), '<!doctype html><p>hello alice</p>');
  t.deepEqual(
    seen.map((s) => [s.cookie, s.ga, s.session]),
    [
      ['session=alice', undefined, 'alice'],
      ['session=bob', undefined, 'bob'],
    ],
  );
});

test('with the option off, nothing changes: _ga reaches the application and splits the cache', async (t) => {
  const { server, seen } = await site(t, {});
  await withCookie(server, '_ga=GA1.2.1; session=alice');
  const other = await withCookie(server, '_ga=GA1.2.2; session=alice');
  t.is(other.headers['x-cache'], 'MISS');
  t.deepEqual(
    seen.map((s) => [s.cookie, s.ga]),
    [
      ['_ga=GA1.2.1; session=alice', 'GA1.2.1'],
      ['_ga=GA1.2.2; session=alice', 'GA1.2.2'],
    ],
  );
});

test('a list of names, a trailing * a prefix; what it does not name stays', async (t) => {
  const { server, seen } = await site(t, { cacheIgnoreCookies: ['tracker', 'ab_*'] });
  await withCookie(server, 'tracker=1; ab_test=x; session=alice; _ga=1');
  const same = await withCookie(server, 'ab_other=y; session=alice; tracker=2; _ga=1');
  t.is(same.headers['x-cache'], 'HIT');
  t.is((await withCookie(server, 'session=alice; _ga=2')).headers['x-cache'], 'MISS', '_ga is not in this list');
  t.deepEqual(
    seen.map((s) => s.cookie),
    ['session=alice; _ga=1', 'session=alice; _ga=2'],
  );
});

test('only where the key holds the whole header, and only for GET and HEAD', async (t) => {
  const keyed = await site(t, { cacheIgnoreCookies: 'analytics', varyBy: ['cookie:session'] });
  await withCookie(keyed.server, '_ga=1; session=alice');
  t.is(keyed.seen[0]?.ga, '1', 'cookie:NAME leaves the others out of the key already: the header is left alone');
  const posted = await site(t, { cacheIgnoreCookies: 'analytics' });
  await withCookie(posted.server, '_ga=1; session=alice', 'POST');
  t.is(posted.seen[0]?.ga, '1', 'a POST is never stored: it gets its cookies');
});

test('cacheIgnoreCookies takes analytics or a list of cookie names, each maybe ending in *', (t) => {
  for (const value of ['analytics', ['_ga', '_ga_*', 'mp_*'], [], undefined])
    t.notThrows(() => buffer({ cacheIgnoreCookies: value as BufferOptions['cacheIgnoreCookies'] }));
  for (const value of ['_ga', ['*'], ['_g*a'], ['a b'], ['a;b'], [''], [5], 'Analytics']) {
    const error = t.throws(() => buffer({ cacheIgnoreCookies: value as never }), { instanceOf: BufferOptionError });
    t.is(error?.key, 'option_cache_ignore_cookies', JSON.stringify(value));
  }
});
