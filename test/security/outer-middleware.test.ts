/**
 * Storability is judged on the response as it is sent, after every
 * middleware mounted outside buffer() has run: the real koa-session adds
 * its Set-Cookie after buffer()'s continuation returns, a helmet-style
 * middleware its Cache-Control, a CORS one its Vary. Before the judgement
 * moved to the head as sent, visitor A's page (with A's CSRF token) was
 * stored and became visitor B's HIT; each test here failed on that code.
 */
import { randomBytes } from 'node:crypto';
import test, { type ExecutionContext } from 'ava';
import Koa from 'koa';
import session from 'koa-session';
import { decodeEntry } from '../../src/cache/entry.ts';
import { buffer } from '../../src/buffer.ts';
import type { BufferOptions, CacheStore } from '../../src/config/options.ts';
import { decode, recordingLogger, serve, type RawResponse } from '../helpers/serve.ts';

/** A Map store the test can look into: what would a later visitor be handed? */
function mapStore(): { store: CacheStore; entries: () => number } {
  const map = new Map<string, unknown>();
  const store: CacheStore = { get: (k) => map.get(k), set: (k, v) => void map.set(k, v), delete: (k) => map.delete(k) };
  return { store, entries: () => [...map.values()].filter((v) => decodeEntry(v) !== undefined).length };
}

/** The CSRF token a page carries. */
const tokenOf = (response: RawResponse): string | undefined =>
  /name="csrf" value="([0-9a-f]+)"/.exec(decode(response).toString())?.[1];

/** The session cookie pair a response sets, as a Cookie header. */
const cookieOf = (response: RawResponse): string =>
  (response.headers['set-cookie'] ?? '')
    .split(/,\s*(?=koa\.sess)/)
    .map((c) => c.split(';')[0]!)
    .join('; ');

/** A login form with a per-session CSRF token: the ordinary order, session() outside buffer(). */
function sessionApp(options: BufferOptions, order: 'session-outside' | 'session-inside' = 'session-outside'): Koa {
  const app = new Koa();
  app.keys = ['a test key'];
  const sessions = session({ signed: true }, app);
  const cache = buffer({ cache: true, ...options });
  if (order === 'session-outside') app.use(sessions).use(cache);
  else app.use(cache).use(sessions);
  app.use(async (ctx) => {
    if (await ctx.bufferIsCached()) return;
    const state = ctx.session!;
    state.csrf ??= randomBytes(8).toString('hex');
    ctx.type = 'html';
    ctx.body = `<!doctype html><form><input name="csrf" value="${String(state.csrf)}"></form>${'<p>filler</p>'.repeat(50)}`;
  });
  return app;
}

for (const order of ['session-outside', 'session-inside'] as const) {
  test(`koa-session (${order} buffer()): a page that starts a session is never stored, so no visitor gets another's CSRF token`, async (t) => {
    const { store, entries } = mapStore();
    const server = await serve(t, sessionApp({ cache: store }, order));
    const alice = await server.request('/login');
    const aliceToken = tokenOf(alice);
    t.truthy(aliceToken);
    t.regex(alice.headers['set-cookie'] ?? '', /koa\.sess=/, 'the session middleware set its cookie');
    t.is(alice.headers['cache-status'], 'koa-buffer; fwd=uri-miss; detail=SET-COOKIE');
    t.is(entries(), 0, 'nothing was stored');
    const bob = await server.request('/login');
    t.not(bob.headers['x-cache'], 'HIT');
    t.not(tokenOf(bob), aliceToken, "Bob never gets Alice's token");
    // Alice again, with her cookie: her session is read, nothing new is set; her own page may be stored under her cookie.
    const again = await server.request('/login', { headers: { cookie: cookieOf(alice) } });
    t.is(tokenOf(again), aliceToken, 'Alice keeps her token');
  });
}

test('20 concurrent visitors of a page that starts a session: each gets its own token, none a 503', async (t) => {
  const log = recordingLogger();
  const server = await serve(t, sessionApp({ logger: log }));
  const responses = await Promise.all(Array.from({ length: 20 }, () => server.request('/login')));
  t.deepEqual(
    responses.map((r) => r.status),
    Array.from({ length: 20 }, () => 200),
  );
  t.is(new Set(responses.map(tokenOf)).size, 20, 'twenty visitors, twenty tokens');
});

/** An app whose outer middleware changes the response after buffer() has finished with it. */
async function outerApp(
  t: ExecutionContext,
  outer: Koa.Middleware,
  options: BufferOptions = {},
): Promise<{
  request: (path?: string, headers?: Record<string, string>) => Promise<RawResponse>;
  entries: () => number;
  runs: () => number;
}> {
  const { store, entries } = mapStore();
  let runs = 0;
  const server = await serve(t, [
    outer,
    buffer({ cache: store, varyBy: [], ...options }),
    async (ctx) => {
      if (await ctx.bufferIsCached()) return;
      runs++;
      ctx.type = 'html';
      ctx.body = `<!doctype html><p>page for ${ctx.path}</p>${'<p>filler</p>'.repeat(50)}`;
    },
  ]);
  return { request: (path = '/', headers = {}) => server.request(path, { headers }), entries, runs: () => runs };
}

const afterwards =
  (change: (ctx: Koa.Context) => void): Koa.Middleware =>
  async (ctx, next) => {
    await next();
    change(ctx);
  };

for (const [what, change, detail] of [
  [
    'a helmet-style Cache-Control: private, no-store',
    (ctx) => ctx.set('Cache-Control', 'private, no-store'),
    'PRIVATE',
  ],
  ['Cache-Control: private', (ctx) => ctx.set('Cache-Control', 'private'), 'PRIVATE'],
  ['a cookie of its own', (ctx) => ctx.cookies.set('seen', '1'), 'SET-COOKIE'],
  ['Vary: *', (ctx) => ctx.set('Vary', '*'), 'VARY'],
  ['an error status', (ctx) => (ctx.status = 500), 'STATUS'],
] as Array<[string, (ctx: Koa.Context) => void, string]>) {
  test(`an outer middleware that adds ${what} after buffer() returns: not stored, Cache-Status says ${detail}`, async (t) => {
    const site = await outerApp(t, afterwards(change));
    const first = await site.request('/account');
    t.is(first.headers['cache-status'], `koa-buffer; fwd=uri-miss; detail=${detail}`);
    t.is(site.entries(), 0);
    const second = await site.request('/account');
    t.not(second.headers['x-cache'], 'HIT');
    t.is(site.runs(), 2, 'each visitor got a page built for them');
  });
}

test('an outer middleware that adds a CORS Vary: Origin after buffer() returns: stored per Origin, never served across', async (t) => {
  const site = await outerApp(
    t,
    afterwards((ctx) => ctx.vary('Origin')),
  );
  const first = await site.request('/account', { origin: 'https://a.example' });
  t.is(first.headers['cache-status'], 'koa-buffer; fwd=miss; stored', 'judged on the head as sent: Vary: Origin');
  const other = await site.request('/account', { origin: 'https://b.example' });
  t.not(other.headers['x-cache'], 'HIT', 'another Origin never gets it');
  const same = await site.request('/account', { origin: 'https://a.example' });
  t.is(same.headers['x-cache'], 'HIT', 'the same Origin does');
  t.is(site.runs(), 2);
});

test('an outer middleware that only adds headers every response carries (a request id): stored, and the hit carries its own id', async (t) => {
  let id = 0;
  const site = await outerApp(
    t,
    afterwards((ctx) => ctx.set('X-Request-Id', String(++id))),
  );
  const first = await site.request('/');
  t.is(first.headers['cache-status'], 'koa-buffer; fwd=miss; stored');
  const hit = await site.request('/');
  t.is(hit.headers['x-cache'], 'HIT');
  t.is(hit.headers['x-request-id'], '2', "the outer middleware's header, not the builder's");
  t.is(site.runs(), 1);
});

test("a 304 that VALIDATE made of the builder's 200 is the same page: stored", async (t) => {
  const site = await outerApp(
    t,
    afterwards(() => undefined),
    { trustLastModified: true },
  );
  const first = await site.request('/', { 'if-modified-since': new Date(Date.now() + 3600_000).toUTCString() });
  t.is(first.status, 304);
  t.is(first.headers['cache-status'], 'koa-buffer; fwd=miss; stored');
  t.is(site.entries(), 1);
  t.is((await site.request('/')).headers['x-cache'], 'HIT');
});
