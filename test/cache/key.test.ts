/**
 * The cache key: what it is made of, that no crafted request can
 * make two different inputs share it, and that the things it separates
 * (hosts, cookies, query strings) never share an entry over real HTTP.
 */
import { IncomingMessage, ServerResponse } from 'node:http';
import { Socket } from 'node:net';
import test from 'ava';
import fc from 'fast-check';
import Koa, { type Context } from 'koa';
import { md5 } from '../../src/native/exports.ts';
import { ambiguousCookie, cacheKeyOf, keyMaterial as materialOrAmbiguous } from '../../src/cache/key.ts';
import { buffer } from '../../src/buffer.ts';
import type { BufferOptions } from '../../src/config/options.ts';
import { recordingLogger, serve, type Served } from '../helpers/serve.ts';
import { appIdentity } from '../../src/base/app-identity.ts';

interface RequestShape {
  /** 'http' when not given. */
  protocol?: string;
  host: string;
  path: string;
  query: string;
  headers: Record<string, string | undefined>;
}

/** The parts of a context the key reads (pure key logic: a plain object will do). */
function fakeContext(shape: RequestShape): Context {
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(shape.headers)) if (value !== undefined) headers[name] = value;
  return {
    protocol: shape.protocol ?? 'http',
    host: shape.host,
    path: shape.path,
    querystring: shape.query,
    request: { headers },
  } as unknown as Context;
}

/** The key material of a request whose cookies read one way only, as every request of this file does. */
function keyMaterial(ctx: Context, varyBy: readonly string[]): string {
  const material = materialOrAmbiguous(ctx, varyBy);
  if (material === ambiguousCookie) throw new Error('no key material: the cookies read two ways');
  return material;
}

const varyBy = ['cookie', 'accept-language'];
// Small alphabets full of would-be separators, so near-collisions are tried often.
const text = fc.string({
  unit: fc.constantFrom('a', ':', '1', '2', '-', '!', '&', '=', '\n', ';', ' ', '\uD800', '😀'),
  maxLength: 6,
});
const shape = fc.record({
  protocol: fc.constantFrom('http', 'https'),
  host: text,
  path: text.map((p) => `/${p}`),
  query: text,
  headers: fc.record({
    cookie: fc.option(text, { nil: undefined }),
    'accept-language': fc.option(text, { nil: undefined }),
  }),
});

test('different requests never encode alike, whatever their hosts, paths, queries and headers hold (property, fixed seed)', (t) => {
  fc.assert(
    fc.property(shape, shape, (a, b) => {
      const same =
        a.protocol === b.protocol &&
        a.host === b.host &&
        a.path === b.path &&
        a.query === b.query &&
        a.headers.cookie === b.headers.cookie &&
        a.headers['accept-language'] === b.headers['accept-language'];
      return (keyMaterial(fakeContext(a), varyBy) === keyMaterial(fakeContext(b), varyBy)) === same;
    }),
    { seed: 4242, numRuns: 20_000 },
  );
  t.pass();
});

/** Reads a key material back into its fields: possible only because the encoding is unambiguous. */
function readMaterial(material: string): Array<string | undefined> {
  const fields: Array<string | undefined> = [];
  let at = 0;
  while (at < material.length) {
    if (material[at] === '-') {
      fields.push(undefined);
      at++;
      continue;
    }
    const hex = material[at] === '!';
    if (hex) at++;
    const colon = material.indexOf(':', at);
    const length = Number(material.slice(at, colon));
    if (colon < 0 || !Number.isInteger(length)) throw new Error(`no length at ${at} in ${JSON.stringify(material)}`);
    const text = material.slice(colon + 1, colon + 1 + length);
    at = colon + 1 + length;
    fields.push(hex ? String.fromCharCode(...(text.match(/.{4}/g) ?? []).map((h) => parseInt(h, 16))) : text);
  }
  return fields;
}

test('every request reads back from its encoding, field for field, so no two can share one (property, fixed seed)', (t) => {
  fc.assert(
    fc.property(shape, (a) => {
      const fields = readMaterial(keyMaterial(fakeContext(a), varyBy));
      const expected = [
        // The application's namespace: its package's name and the script's path within it.
        appIdentity,
        a.protocol,
        a.host,
        a.path,
        a.query,
        'cookie',
        a.headers.cookie,
        'accept-language',
        a.headers['accept-language'],
      ];
      return fields.length === expected.length && fields.every((f, i) => f === expected[i]);
    }),
    { seed: 4243, numRuns: 20_000 },
  );
  t.pass();
});

test('the classic collisions of a joined key are told apart', (t) => {
  const base = { host: 'h', path: '/p', query: '', headers: {} };
  const pairs: Array<[RequestShape, RequestShape, string]> = [
    [
      { ...base, headers: { cookie: 'a', 'accept-language': 'b' } },
      { ...base, headers: { cookie: 'a1:b' } },
      'a header value posing as the next header',
    ],
    [{ ...base, headers: { cookie: '' } }, base, 'an empty header is not an absent one'],
    [{ ...base, query: 'a=1&b=2' }, { ...base, query: 'b=2&a=1' }, 'query order is significant'],
    [{ ...base, query: 'a=1' }, { ...base, query: 'a=1&' }, 'a trailing & counts'],
    [{ ...base, host: 'h:80' }, { ...base, host: 'h' }, 'a port is part of the host'],
    [{ ...base, protocol: 'https' }, base, 'the scheme is part of the key'],
    [
      { ...base, path: '/p', query: 'x' },
      { ...base, path: '/p?x', query: '' },
      'path and query cannot trade characters',
    ],
    [
      { ...base, headers: { cookie: '\uD800' } },
      { ...base, headers: { cookie: '\uFFFD' } },
      'a lone surrogate is not U+FFFD',
    ],
  ];
  for (const [a, b, why] of pairs) t.not(keyMaterial(fakeContext(a), varyBy), keyMaterial(fakeContext(b), varyBy), why);
});

test('the generated key is buffer: and an MD5; cacheKey replaces it as given, and an empty one falls back', (t) => {
  const ctx = fakeContext({ host: 'example.com', path: '/x', query: 'a=1', headers: { cookie: 'c' } });
  const generated = cacheKeyOf(ctx, { cacheKey: undefined, varyBy: ['cookie'] });
  t.regex(String(generated), /^buffer:[0-9a-f]{32}$/);
  t.not(generated, cacheKeyOf(ctx, { cacheKey: undefined, varyBy: [] }), 'varyBy joins the key');
  t.is(cacheKeyOf(ctx, { cacheKey: 'my page ✨', varyBy: ['cookie'] }), 'my page ✨', 'used as given, any character');
  t.is(cacheKeyOf(ctx, { cacheKey: (c) => `k:${c.path}`, varyBy: [] }), 'k:/x');
  t.is(cacheKeyOf(ctx, { cacheKey: '', varyBy: ['cookie'] }), generated, "'' falls back");
  t.is(
    cacheKeyOf(ctx, { cacheKey: () => undefined, varyBy: ['cookie'] }),
    generated,
    'a function returning nothing falls back',
  );
  t.is(cacheKeyOf(ctx, { cacheKey: () => '', varyBy: ['cookie'] }), generated);
});

/** A server whose page shows what it was built from, counting its runs. */
async function echoServer(
  t: Parameters<typeof serve>[0],
  options: BufferOptions = {},
): Promise<{ server: Served; runs: () => number; store: Map<string, unknown> }> {
  let runs = 0;
  const store = new Map<string, unknown>();
  const server = await serve(t, [
    buffer({ cache: store, ...options }),
    async (ctx) => {
      if (await ctx.bufferIsCached()) return;
      runs++;
      await new Promise((resolve) => setTimeout(resolve, 50));
      ctx.type = 'text';
      ctx.body = `host=${ctx.host} url=${ctx.url} cookie=${ctx.get('Cookie')} run=${runs}`;
    },
  ]);
  return { server, runs: () => runs, store };
}

test('a personalised page with the default varyBy never reaches another cookie, not even a concurrent one', async (t) => {
  const { server, runs } = await echoServer(t);
  const [alice, bob] = await Promise.all([
    server.request('/account', { headers: { cookie: 'session=alice' } }),
    server.request('/account', { headers: { cookie: 'session=bob' } }),
  ]);
  t.regex(alice.body.toString(), /cookie=session=alice/);
  t.regex(bob.body.toString(), /cookie=session=bob/, 'bob is not collapsed into alice’s build');
  const [alice2, bob2, anonymous] = await Promise.all([
    server.request('/account', { headers: { cookie: 'session=alice' } }),
    server.request('/account', { headers: { cookie: 'session=bob' } }),
    server.request('/account'),
  ]);
  t.is(alice2.body.toString(), alice.body.toString());
  t.is(alice2.headers['x-cache'], 'HIT');
  t.is(bob2.body.toString(), bob.body.toString());
  t.regex(anonymous.body.toString(), /cookie= run=3/, 'no cookie is a key of its own');
  t.is(runs(), 3);
});

test('requests with different Host headers never share an entry', async (t) => {
  const { server, runs } = await echoServer(t, { varyBy: [] });
  const hosts = ['a.example', 'b.example', 'a.example:8080', 'A.example'];
  const first = await Promise.all(hosts.map((host) => server.request('/', { headers: { host } })));
  const again = await Promise.all(hosts.map((host) => server.request('/', { headers: { host } })));
  for (const [i, host] of hosts.entries()) {
    t.regex(first[i]!.body.toString(), new RegExp(`^host=${host} `), `${host} got its own page`);
    t.is(again[i]!.body.toString(), first[i]!.body.toString(), `${host} got its own entry back`);
    t.is(again[i]!.headers['x-cache'], 'HIT');
  }
  t.is(runs(), hosts.length);
});

test('a key collision attempt through crafted query strings and header values fails', async (t) => {
  const { server, runs, store } = await echoServer(t, { varyBy: ['cookie', 'accept-language'] });
  const victim = await server.request('/p?a=1', { headers: { cookie: 'a', 'accept-language': 'b' } });
  // Each of these would hit the victim's entry under a naive "join with separators" key.
  const attempts: Array<{ path: string; headers: Record<string, string>; same?: boolean }> = [
    { path: '/p?a=1', headers: { cookie: 'a1:b' } },
    { path: '/p?a=1', headers: { cookie: 'a;accept-language=b' } },
    { path: '/p?a=1', headers: { cookie: 'a', 'accept-language': 'b', 'x-extra': '1' }, same: true },
    { path: '/p?a=1%00', headers: { cookie: 'a', 'accept-language': 'b' } },
    { path: '/p?a=1&', headers: { cookie: 'a', 'accept-language': 'b' } },
    { path: '/p%3Fa=1', headers: { cookie: 'a', 'accept-language': 'b' } },
  ];
  for (const attempt of attempts) {
    const response = await server.request(attempt.path, { headers: attempt.headers });
    if (attempt.same)
      t.is(response.body.toString(), victim.body.toString(), 'a header outside varyBy does not split the key');
    else
      t.not(
        response.body.toString(),
        victim.body.toString(),
        `${attempt.path} ${JSON.stringify(attempt.headers)} got its own page`,
      );
  }
  t.is(runs(), attempts.length, 'every attempt but the identical one built its own page');
  t.is(store.size, attempts.length);
});

test('the cacheKey option names the store entry as given; a throwing cacheKey function bypasses the cache with a log line', async (t) => {
  const { server, store } = await echoServer(t, { cacheKey: (ctx) => `page:${ctx.path}` });
  await server.request('/one');
  t.deepEqual(Array.from(store.keys()), ['page:/one']);

  const log = recordingLogger();
  const failing = await echoServer(t, {
    logger: log,
    cacheKey: () => {
      throw new Error('no key today');
    },
  });
  const response = await failing.server.request('/');
  t.is(response.status, 200, 'the action still runs');
  t.is(response.headers['cache-status'], 'koa-buffer; fwd=bypass; detail=KEY-ERROR');
  t.is(failing.store.size, 0);
  t.is(log.count(/^the cacheKey function failed, so this request bypasses the cache: no key today$/), 1);
});

/** A real Koa context for a request with this url and these headers (nothing is sent). */
function koaContext(app: Koa, url: string, headers: Record<string, string>): Context {
  const req = new IncomingMessage(new Socket());
  req.url = url;
  req.headers = headers;
  req.httpVersionMajor = 1;
  return app.createContext(req, new ServerResponse(req)) as Context;
}

test('the key a request signature finds is the key made from host, path and query, whatever they hold (property, fixed seed)', (t) => {
  const app = new Koa();
  const value = fc.string({
    unit: fc.constantFrom('a', 'b', ':', '1', ',', ' ', '@', '?', '&', '=', '/', '%', '#', '.'),
    maxLength: 8,
  });
  fc.assert(
    fc.property(value, value, fc.option(value, { nil: undefined }), (host, url, cookie) => {
      const headers: Record<string, string> = { host };
      if (cookie !== undefined) headers.cookie = cookie;
      const made = `buffer:${md5(keyMaterial(koaContext(app, `/${url}`, headers), ['cookie']))}`;
      // Twice: the first call reads the key through Koa's getters, the second finds it by signature.
      for (let i = 0; i < 2; i++)
        t.is(cacheKeyOf(koaContext(app, `/${url}`, headers), { cacheKey: undefined, varyBy: ['cookie'] }), made);
    }),
    { seed: 7, numRuns: 300 },
  );
});

test('an application that reads host its own way, or trusts a proxy, gets keys from its getters, not from the request signature', (t) => {
  const options = { cacheKey: undefined, varyBy: [] };
  const own = new Koa();
  Object.defineProperty(own.request, 'host', {
    get(this: { get(name: string): string }) {
      return this.get('X-Tenant');
    },
  });
  const a = cacheKeyOf(koaContext(own, '/p', { host: 'site', 'x-tenant': 'a.example' }), options);
  t.not(
    cacheKeyOf(koaContext(own, '/p', { host: 'site', 'x-tenant': 'b.example' }), options),
    a,
    'its host getter tells the tenants apart',
  );

  const proxied = new Koa({ proxy: true });
  const viaA = cacheKeyOf(koaContext(proxied, '/p', { host: 'edge', 'x-forwarded-host': 'a.example' }), options);
  t.not(
    cacheKeyOf(koaContext(proxied, '/p', { host: 'edge', 'x-forwarded-host': 'b.example' }), options),
    viaA,
    'X-Forwarded-Host counts',
  );
  t.is(
    cacheKeyOf(koaContext(proxied, '/p', { host: 'elsewhere', 'x-forwarded-host': 'a.example' }), options),
    viaA,
    'Host does not, behind a proxy',
  );

  const late = new Koa();
  t.not(
    cacheKeyOf(koaContext(late, '/p', { host: 'site', 'x-tenant': 'a.example' }), options),
    cacheKeyOf(koaContext(late, '/p', { host: 'other' }), options),
  );
  Object.defineProperty(late.request, 'host', {
    get(this: { get(name: string): string }) {
      return this.get('X-Tenant');
    },
  });
  t.not(
    cacheKeyOf(koaContext(late, '/p', { host: 'site', 'x-tenant': 'b.example' }), options),
    cacheKeyOf(koaContext(late, '/p', { host: 'site', 'x-tenant': 'a.example' }), options),
    'a getter defined after the first requests counts from then on',
  );

  const plain = new Koa();
  const shadowed = koaContext(plain, '/p', { host: 'a.example' });
  Object.defineProperty(shadowed.request, 'path', { value: '/q' });
  t.is(
    cacheKeyOf(shadowed, options),
    cacheKeyOf(koaContext(plain, '/q', { host: 'a.example' }), options),
    'a path set on the request itself counts',
  );
});

test('two varyBy lists never share a key through the request signature', (t) => {
  const app = new Koa();
  const byCookie = cacheKeyOf(koaContext(app, '/p', { host: 'a', cookie: 'x' }), {
    cacheKey: undefined,
    varyBy: ['cookie'],
  });
  const byLanguage = cacheKeyOf(koaContext(app, '/p', { host: 'a', 'accept-language': 'x' }), {
    cacheKey: undefined,
    varyBy: ['accept-language'],
  });
  t.not(byLanguage, byCookie);
  t.is(
    byLanguage,
    `buffer:${md5(keyMaterial(koaContext(app, '/p', { host: 'a', 'accept-language': 'x' }), ['accept-language']))}`,
  );
});

test('the request signature finds the key made from the getters for any varyBy list, absent or empty headers, long fields, and after its table starts afresh (property, fixed seed)', (t) => {
  const app = new Koa();
  // Names that would join alike without framing ('a\nb' is no header token, but a per-response varyBy is not checked).
  const names = fc.uniqueArray(fc.constantFrom('a', 'b', 'ab', 'a\nb', '1:a', 'cookie'), { maxLength: 3 });
  const value = fc.option(
    fc.oneof(
      fc.string({ unit: fc.constantFrom('a', 'b', ':', '1', '\t', ' '), maxLength: 6 }),
      fc.constant('x'.repeat(600)),
    ),
    { nil: undefined },
  );
  fc.assert(
    fc.property(names, fc.array(value, { minLength: 3, maxLength: 3 }), value, (varyBy, values, host) => {
      const headers: Record<string, string> = {};
      if (host !== undefined) headers.host = host;
      varyBy.forEach((name, i) => {
        if (values[i] !== undefined) headers[name] = values[i]!;
      });
      const made = `buffer:${md5(keyMaterial(koaContext(app, '/p', headers), varyBy))}`;
      for (let i = 0; i < 2; i++)
        t.is(cacheKeyOf(koaContext(app, '/p', headers), { cacheKey: undefined, varyBy }), made);
    }),
    { seed: 11, numRuns: 400 },
  );
  // Lists whose names would join alike, one a level shorter than the other, on the same url, Host and values.
  const made = (varyBy: string[], headers: Record<string, string>): string =>
    `buffer:${md5(keyMaterial(koaContext(app, '/q', headers), varyBy))}`;
  for (const [long, short] of [
    [['a', 'b'], ['a\nb']],
    [['a', 'b'], ['ab']],
  ] as const) {
    const longHeaders = { host: 'h', a: 'x', b: 'y', ab: 'x', 'a\nb': 'x' };
    for (const varyBy of [long, short, long, short])
      t.is(
        cacheKeyOf(koaContext(app, '/q', longHeaders), { cacheKey: undefined, varyBy }),
        made([...varyBy], longHeaders),
      );
  }
  // More keys than the table holds: it starts afresh, and every request still finds its own key.
  const options = { cacheKey: undefined, varyBy: ['cookie'] };
  const key = (i: number) => cacheKeyOf(koaContext(app, `/many/${i}`, { host: 'a' }), options);
  const first = key(0);
  for (let i = 1; i < 5000; i++) key(i);
  t.is(key(0), first);
  t.is(key(4999), `buffer:${md5(keyMaterial(koaContext(app, '/many/4999', { host: 'a' }), ['cookie']))}`);
});
