/**
 * The cache's rules over real HTTP: every bypass, every reason a
 * response is not stored, what a hit replays and how it goes through the
 * rest of the pipeline, staleness and expiry, and stores that fail or hang.
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import test, { type ExecutionContext } from 'ava';
import type { Context } from 'koa';
import { decodeEntry } from '../../src/cache/entry.ts';
import { readMarker } from '../../src/cache/hit-for-miss.ts';
import { envTrustMs } from '../../src/cache/bypass.ts';
import { mtimeTrustMs } from '../../src/http/last-modified.ts';
import { buffer } from '../../src/buffer.ts';
import { squashHtml } from '../../src/native/exports.ts';
import type { BufferOptions, CacheStore } from '../../src/config/options.ts';
import { decode, htmlPage, rawRequest, recordingLogger, serve, type Served } from '../helpers/serve.ts';

const page = htmlPage(8 * 1024, 3);

interface Site {
  server: Served;
  runs: () => number;
  store: Map<string, unknown>;
  log: ReturnType<typeof recordingLogger>;
}

/** A cached route whose action is `action` (a default HTML page), counting its runs. */
async function site(
  t: ExecutionContext,
  options: BufferOptions = {},
  action: (ctx: Context) => void = (ctx) => {
    ctx.type = 'html';
    ctx.body = page;
  },
): Promise<Site> {
  let runs = 0;
  const store = new Map<string, unknown>();
  const log = recordingLogger();
  const server = await serve(t, [
    buffer({ cache: store, varyBy: [], logger: log, ...options }),
    async (ctx) => {
      if (await ctx.bufferIsCached()) return;
      runs++;
      action(ctx);
    },
  ]);
  return { server, runs: () => runs, store, log };
}

// --- bypass -------------------------------------------------------------------

const bypasses: Array<[string, { method?: string; headers?: Record<string, string> }, string]> = [
  ['POST', { method: 'POST' }, 'METHOD'],
  ['PUT', { method: 'PUT' }, 'METHOD'],
  ['an Authorization header', { headers: { authorization: 'Basic YTpi' } }, 'AUTHORIZATION'],
  ['Cache-Control: no-store', { headers: { 'cache-control': 'no-store' } }, 'REQUEST-CACHE-CONTROL'],
  ['Cache-Control: no-cache', { headers: { 'cache-control': 'No-Cache' } }, 'REQUEST-CACHE-CONTROL'],
  ['Cache-Control: private', { headers: { 'cache-control': 'max-stale, private' } }, 'REQUEST-CACHE-CONTROL'],
  ['Cache-Control: max-age=0', { headers: { 'cache-control': 'max-age=0' } }, 'REQUEST-CACHE-CONTROL'],
  ['Cache-Control: max-age="0"', { headers: { 'cache-control': 'max-age="0"' } }, 'REQUEST-CACHE-CONTROL'],
  ['Pragma: no-cache', { headers: { pragma: 'no-cache' } }, 'REQUEST-CACHE-CONTROL'],
];

for (const [what, request, detail] of bypasses) {
  test(`a request with ${what} bypasses the cache: the action runs every time and nothing is stored`, async (t) => {
    // A request's own Cache-Control bypasses only with cacheRequestNoCache: 'bypass' (test/cache/request-no-cache.test.ts).
    const { server, runs, store } = await site(
      t,
      detail === 'REQUEST-CACHE-CONTROL' ? { cacheRequestNoCache: 'bypass' } : {},
    );
    for (let i = 0; i < 2; i++) {
      const response = await server.request('/', request);
      t.is(response.status, 200);
      t.is(response.headers['cache-status'], `koa-buffer; fwd=bypass; detail=${detail}`);
      t.is(response.headers['x-cache'], undefined, 'X-Cache only says HIT or MISS');
    }
    t.is(runs(), 2);
    t.is(store.size, 0);
  });
}

test('Cache-Control max-age=10 or no-transform does not bypass', async (t) => {
  const { server, runs } = await site(t);
  await server.request('/', { headers: { 'cache-control': 'max-age=10' } });
  const second = await server.request('/', { headers: { 'cache-control': 'no-transform' } });
  t.is(second.headers['x-cache'], 'HIT');
  t.is(runs(), 1);
});

for (const variable of ['NO_CACHE', 'NO_STORE']) {
  test.serial(`requests made while ${variable} is set bypass the cache, from envTrustMs after it is set`, async (t) => {
    const { server, runs, store } = await site(t);
    process.env[variable] = '1';
    t.teardown(() => delete process.env[variable]);
    await sleep(envTrustMs + 50);
    const response = await server.request('/');
    t.is(response.headers['cache-status'], `koa-buffer; fwd=bypass; detail=${variable}`);
    delete process.env[variable];
    await sleep(envTrustMs + 50);
    t.is(
      (await server.request('/')).headers['cache-status'],
      'koa-buffer; fwd=miss; stored',
      'unset, the cache is used again',
    );
    t.is(runs(), 2);
    t.is(store.size, 1);
  });
}

test('ctx.state.buffer = 0 leaves the response alone: false, and no cache headers', async (t) => {
  const answers: boolean[] = [];
  const server = await serve(t, [
    buffer({ cache: true }),
    async (ctx) => {
      ctx.state.buffer = 0;
      answers.push(await ctx.bufferIsCached());
      ctx.body = page;
    },
  ]);
  const response = await server.request('/');
  t.deepEqual(answers, [false]);
  t.is(response.headers['cache-status'], undefined);
  t.is(response.headers['x-cache'], undefined);
});

test('no cache, or ctx.state.buffer {cache: undefined}, bypasses with CACHE-OFF', async (t) => {
  const none = await serve(t, [
    buffer(),
    async (ctx) => {
      if (!(await ctx.bufferIsCached())) ctx.body = 'built';
    },
  ]);
  t.is((await none.request('/')).headers['cache-status'], 'koa-buffer; fwd=bypass; detail=CACHE-OFF');
  const off = await serve(t, [
    buffer({ cache: true }),
    async (ctx) => {
      ctx.state.buffer = { cache: undefined };
      if (!(await ctx.bufferIsCached())) ctx.body = 'built';
    },
  ]);
  t.is((await off.request('/')).headers['cache-status'], 'koa-buffer; fwd=bypass; detail=CACHE-OFF');
  t.is(
    (await off.request('/')).headers['cache-status'],
    'koa-buffer; fwd=bypass; detail=CACHE-OFF',
    'nothing was stored',
  );
});

/**
 * True for the keys of pages: the stores below fail for those only, so they
 * pass the start-up probe (which refuses a store that cannot keep an entry at
 * all) and fail later, as a disk that fills up or a backend that goes away does.
 */
const pageKey = (key: string): boolean => key.startsWith('buffer:');

test('a store whose get throws costs one log line per request and the action runs', async (t) => {
  const map = new Map<string, unknown>();
  const store: CacheStore = {
    get: (k) => {
      if (pageKey(k)) throw new Error('disk on fire');
      return map.get(k);
    },
    set: (k, v) => map.set(k, v),
    delete: (k) => map.delete(k),
  };
  const log = recordingLogger();
  const { server, runs } = await site(t, { cache: store, logger: log });
  const response = await server.request('/');
  t.is(response.status, 200);
  t.is(response.headers['cache-status'], 'koa-buffer; fwd=bypass; detail=STORE-ERROR');
  t.is(runs(), 1);
  t.is(log.count(/^cache get buffer:[0-9a-f]{32} failed: disk on fire$/), 1);
  t.is(log.lines.find((l) => l.message.includes('disk on fire'))?.level, 'error');
});

test('a store whose get hangs is a bypass after cacheStoreTimeout, never a hung request', async (t) => {
  const store: CacheStore = { get: () => new Promise(() => undefined), set: () => true, delete: () => true };
  const log = recordingLogger();
  const { server } = await site(t, { cache: store, logger: log, cacheStoreTimeout: 0.1 });
  const started = Date.now();
  const response = await server.request('/');
  const took = Date.now() - started;
  t.is(response.status, 200);
  t.is(response.headers['cache-status'], 'koa-buffer; fwd=bypass; detail=STORE-ERROR');
  // Far under the hang it stands for; a sanitizer build on a loaded CI machine took 1,129 ms.
  t.true(took >= 95 && took < 3000, `answered after ${took} ms`);
  t.is(log.count(/cache get .* failed: cache get did not answer within 100 ms/), 1);
});

// --- storing ------------------------------------------------------------------

const unstorable: Array<[string, (ctx: Context) => void, string, BufferOptions?]> = [
  [
    'a 404',
    (ctx) => {
      ctx.status = 404;
      ctx.type = 'html';
      ctx.body = page;
    },
    'STATUS',
  ],
  [
    'a 201',
    (ctx) => {
      ctx.status = 201;
      ctx.type = 'html';
      ctx.body = page;
    },
    'STATUS',
  ],
  [
    'Set-Cookie',
    (ctx) => {
      ctx.set('Set-Cookie', 'a=1');
      ctx.type = 'html';
      ctx.body = page;
    },
    'SET-COOKIE',
  ],
  [
    'Cache-Control: no-store',
    (ctx) => {
      ctx.set('Cache-Control', 'public, no-store');
      ctx.type = 'html';
      ctx.body = page;
    },
    'NO-STORE',
  ],
  [
    'Cache-Control: private',
    (ctx) => {
      ctx.set('Cache-Control', 'Private');
      ctx.type = 'html';
      ctx.body = page;
    },
    'PRIVATE',
  ],
  [
    'Cache-Control: private="set-cookie"',
    (ctx) => {
      ctx.set('Cache-Control', 'max-age=60, private="set-cookie"');
      ctx.type = 'html';
      ctx.body = page;
    },
    'PRIVATE',
  ],
  [
    // Vary on a header outside varyBy is a secondary key now (test/cache/vary-variants.test.ts); these never are:
    'Vary on more than eight headers outside varyBy',
    (ctx) => {
      ctx.vary('A, B, C, D, E, F, G, H, I');
      ctx.type = 'html';
      ctx.body = page;
    },
    'VARY',
  ],
  [
    'Vary: *',
    (ctx) => {
      ctx.set('Vary', '*');
      ctx.type = 'html';
      ctx.body = page;
    },
    'VARY',
  ],
  [
    'a body over cacheMaxSize',
    (ctx) => {
      ctx.type = 'html';
      ctx.body = page;
    },
    'TOO-LARGE',
    { cacheMaxSize: 1000 },
  ],
  [
    'a stream body',
    (ctx) => {
      ctx.type = 'html';
      ctx.body = Readable.from([page]);
    },
    'NOT-BUFFERED',
  ],
  [
    'an empty body',
    (ctx) => {
      ctx.status = 200;
      ctx.body = '';
    },
    'NOT-BUFFERED',
  ],
];

for (const [what, action, detail, options] of unstorable) {
  test(`a response with ${what} is served but not stored (Cache-Status detail=${detail})`, async (t) => {
    const { server, runs, store } = await site(t, options, action);
    const response = await server.request('/');
    t.is(response.headers['x-cache'], 'MISS');
    t.is(response.headers['cache-status'], `koa-buffer; fwd=uri-miss; detail=${detail}`);
    const second = await server.request('/');
    t.is(runs(), 2, 'the next request runs the action again');
    t.is(second.headers['cache-status'], `koa-buffer; fwd=uri-miss; detail=${detail}`);
    // What the store holds for the key is a hit-for-miss marker naming why, never an entry.
    t.is(store.size, 1);
    const [value] = [...store.values()];
    t.is(decodeEntry(value), undefined, 'no entry is stored');
    t.is(readMarker(value)?.reason, detail, 'the key is marked not storable');
  });
}

test('cacheHitForMiss 0: a response that cannot be stored leaves nothing in the store', async (t) => {
  const { server, runs, store } = await site(t, { cacheHitForMiss: 0 }, (ctx) => {
    ctx.cookies.set('csrf', 'a');
    ctx.type = 'html';
    ctx.body = page;
  });
  await server.request('/');
  await server.request('/');
  t.is(runs(), 2);
  t.is(store.size, 0);
});

test('Vary on a header listed in varyBy, and on Accept-Encoding, is stored', async (t) => {
  const { server, runs } = await site(t, { varyBy: ['accept-language'] }, (ctx) => {
    ctx.vary('Accept-Language');
    ctx.vary('Accept-Encoding');
    ctx.type = 'html';
    ctx.body = page;
  });
  t.is((await server.request('/')).headers['cache-status'], 'koa-buffer; fwd=miss; stored');
  t.is((await server.request('/')).headers['x-cache'], 'HIT');
  t.is(runs(), 1);
});

test('the stored body is the optimised, uncompressed entity; each hit is compressed for its client, gets its own ETag and a 304', async (t) => {
  const { server, runs, store } = await site(t, { optimiseContent: 1, rewriteLinks: false }, (ctx) => {
    ctx.set('X-Report', 'monthly');
    ctx.type = 'html';
    ctx.body = page;
  });
  const built = await server.request('/', { headers: { 'accept-encoding': 'br' } });
  const entry = decodeEntry(Array.from(store.values())[0])!;
  const squashed = squashHtml(page, { level: 1 });
  t.true(entry.body.equals(squashed), 'the squashed, uncompressed page');
  t.is(entry.headers['content-encoding'], undefined);
  t.is(entry.headers['x-cache'], undefined, 'per-delivery headers are not stored');
  t.is(entry.headers['cache-status'], undefined);
  t.is(entry.headers['x-report'], 'monthly');

  for (const coding of ['br', 'gzip', 'zstd', 'identity']) {
    const hit = await server.request('/', { headers: { 'accept-encoding': coding } });
    t.is(hit.headers['x-cache'], 'HIT');
    // The TTL left counts down in whole seconds from the store; a loaded CI machine took over 2 s for these four hits.
    const ttl = Number(/^koa-buffer; hit; ttl=(\d+)$/.exec(hit.headers['cache-status'] ?? '')?.[1]);
    t.true(ttl > 570 && ttl <= 600, `Cache-Status ${hit.headers['cache-status']}: a hit with up to 600 s left`);
    t.is(hit.headers['content-encoding'], coding === 'identity' ? undefined : coding);
    t.true(decode(hit).equals(squashed), `${coding}: the page`);
    t.is(hit.headers['x-report'], 'monthly', 'headers are replayed');
    t.is(hit.headers.vary, 'Accept-Encoding', 'one Vary, not two');
    const tag =
      coding === 'identity' ? `"${hit.headers.etag!.slice(1, 33)}"` : `"${hit.headers.etag!.slice(1, 33)}-${coding}"`;
    t.is(hit.headers.etag, tag, 'the ETag of this representation');
    const notModified = await server.request('/', {
      headers: { 'accept-encoding': coding, 'if-none-match': hit.headers.etag! },
    });
    t.is(notModified.status, 304);
    t.is(notModified.headers['x-cache'], 'HIT');
  }
  t.is(built.headers.etag, `"${built.headers.etag!.slice(1, 33)}-br"`);
  t.is(runs(), 1);
});

test('an entry older than the app script or a template is removed and rebuilt, noticed within mtimeTrustMs', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'kb-templates-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const views = join(dir, 'views');
  mkdirSync(views);
  const template = join(views, 'report.html');
  writeFileSync(template, '<p>v1</p>');
  const past = new Date(Date.now() - 60_000);
  utimesSync(template, past, past);
  const { server, runs, log } = await site(t, { templatePaths: [views] });
  await server.request('/');
  t.is((await server.request('/')).headers['x-cache'], 'HIT');
  const now = new Date();
  utimesSync(template, now, now);
  await sleep(mtimeTrustMs + 50); // the newest mtime is read again at most this often
  const rebuilt = await server.request('/');
  t.is(rebuilt.headers['x-cache'], 'MISS');
  t.is(rebuilt.headers['cache-status'], 'koa-buffer; fwd=stale; stored', 'the stale entry was replaced');
  // A debug line names the URL beside the key.
  t.is(
    log.count(/^cache entry \S+ \(key buffer:[0-9a-f]{32}\) predates the application or a template; rebuilding$/),
    1,
  );
  t.is((await server.request('/')).headers['x-cache'], 'HIT', 'the new entry is newer than the template');
  t.is(runs(), 2);
});

test('an entry expires after cacheDuration, even in a store without TTLs (a Map)', async (t) => {
  const { server, runs } = await site(t, { cacheDuration: 1 });
  await server.request('/');
  t.is((await server.request('/')).headers['x-cache'], 'HIT');
  await sleep(1100);
  t.is((await server.request('/')).headers['cache-status'], 'koa-buffer; fwd=stale; stored');
  t.is(runs(), 2);
});

test('a store whose set throws or hangs costs a log line; the page is served', async (t) => {
  for (const fail of [
    () => {
      throw new Error('disk full');
    },
    () => new Promise(() => undefined),
  ]) {
    const map = new Map<string, unknown>();
    const store: CacheStore = {
      get: (k) => map.get(k),
      set: (k, v) => (pageKey(k) ? fail() : map.set(k, v)),
      delete: (k) => map.delete(k),
    };
    const log = recordingLogger();
    const { server } = await site(t, { cache: store, logger: log, cacheStoreTimeout: 0.1 });
    const response = await server.request('/');
    t.is(response.status, 200);
    t.is(response.body.toString(), page);
    t.is(response.headers['cache-status'], 'koa-buffer; fwd=uri-miss; detail=STORE-ERROR');
    t.is(log.count(/^cache set buffer:[0-9a-f]{32} failed: (disk full|cache set did not answer within 100 ms)$/), 1);
  }
});

test('a stale entry whose delete fails is still rebuilt, with a log line', async (t) => {
  const map = new Map<string, unknown>();
  const store: CacheStore = {
    get: (k) => map.get(k),
    set: (k, v) => map.set(k, v),
    delete: (k) => {
      if (pageKey(k)) throw new Error('read-only');
      return map.delete(k);
    },
  };
  const log = recordingLogger();
  const { server, runs } = await site(t, { cache: store, logger: log, cacheDuration: 600 });
  await server.request('/');
  // Make the entry older than the app script: rewrite its created time to the epoch.
  const [key, value] = Array.from(map.entries())[0]!;
  const bytes = Buffer.from(value as Buffer);
  bytes.writeDoubleLE(0, 8);
  map.set(key, bytes);
  const rebuilt = await server.request('/');
  t.is(rebuilt.headers['cache-status'], 'koa-buffer; fwd=stale; stored');
  // Once at the lookup, once more at the builder's second look (the entry is still there).
  t.true(log.count(/^cache delete buffer:[0-9a-f]{32} failed: read-only$/) >= 1);
  t.is(runs(), 2);
});

test('a HEAD hit sends the headers of the page and no body', async (t) => {
  const { server } = await site(t);
  await server.request('/');
  const head = await rawRequest(server.port, '/', { method: 'HEAD', headers: { 'accept-encoding': 'gzip' } });
  t.is(head.status, 200);
  t.is(head.headers['x-cache'], 'HIT');
  t.is(head.headers['content-encoding'], 'gzip');
  t.is(head.body.length, 0);
});

test("a 'sqlite:' cache named by the option is opened on first use and shared by two middlewares on the same file", async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'kb-sqlite-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const cache = `sqlite:${join(dir, 'pages.sqlite')}`;
  const a = await site(t, { cache });
  t.false(existsSync(join(dir, 'pages.sqlite')), 'nothing opened before a request needs it');
  const b = await site(t, { cache });
  await a.server.request('/', { headers: { host: 'shared' } });
  const fromB = await b.server.request('/', { headers: { host: 'shared' } });
  t.is(fromB.headers['x-cache'], 'HIT', 'the other middleware (as another process would) reads the entry');
  t.is(b.runs(), 0);
});

test('a cache that cannot be opened is logged once and bypassed, and the page is served', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'kb-sqlite-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(join(dir, 'file'), 'not a directory');
  const log = recordingLogger();
  const { server } = await site(t, { cache: `sqlite:${join(dir, 'file', 'pages.sqlite')}`, logger: log });
  for (let i = 0; i < 3; i++) {
    const response = await server.request('/');
    t.is(response.status, 200);
    t.is(response.headers['cache-status'], 'koa-buffer; fwd=bypass; detail=STORE-ERROR');
  }
  t.is(
    log.count(/^cannot open the cache "sqlite:.*": koa-buffer: cannot open the SQLite cache/),
    1,
    'one log line, not one per request',
  );
});

test('an entry with a header name no response may carry costs a log line, is removed, and the page is stored again', async (t) => {
  const map = new Map<string, unknown>();
  const log = recordingLogger();
  const { server, runs } = await site(t, { cache: map, cacheKey: 'page', logger: log });
  const { encodeEntry } = await import('../../src/cache/entry.ts');
  map.set(
    'page',
    encodeEntry({
      status: 200,
      headers: { 'bad header': 'x' },
      body: Buffer.from('<p>old</p>'),
      created: Date.now(),
      expires: Date.now() + 60_000,
    }),
  );
  const response = await server.request('/');
  t.is(response.status, 200);
  t.is(response.body.toString(), page, 'the action made the page');
  t.is(runs(), 1);
  t.is(log.count(/^cache entry page is damaged \(header name "bad header"\)/), 1);
  t.is(log.count(/^cache get for this request failed: /), 0, 'found before the replay, not by it');
  t.is((await server.request('/')).headers['x-cache'], 'HIT', 'the rebuilt page was stored');
  t.is(runs(), 1);
});
