/**
 * Revalidation instead of rebuild (src/cache/revalidation.ts): an expired
 * entry with the application's ETag or Last-Modified is rebuilt by running
 * the action with that validator in If-None-Match / If-Modified-Since, and
 * an action answering 304 (`ctx.fresh`) renews the entry. The visitor's own
 * conditional headers never reach the action of such a build, and never
 * decide what is stored.
 */
import test from 'ava';
import type { Context } from 'koa';
import { buffer } from '../../src/buffer.ts';
import { encodeEntry, type CacheEntry } from '../../src/cache/entry.ts';
import { serve } from '../helpers/serve.ts';
import { createdAfterTheCode } from '../helpers/code-time.ts';

const page = `<!doctype html><p>${'an article '.repeat(200)}</p>`;

/** An entry that expired a second ago, built with these headers. */
function expired(headers: Record<string, string>, body = page, ago = 60_000): Buffer {
  const now = Date.now();
  const entry: CacheEntry = {
    status: 200,
    headers: { 'content-type': 'text/html; charset=utf-8', ...headers },
    body: Buffer.from(body),
    created: createdAfterTheCode(ago, now - 1000),
    expires: now - 1000,
  };
  return encodeEntry(entry);
}

/** What the action saw of each request: its conditional headers. */
interface Seen {
  ifNoneMatch: string | undefined;
  ifModifiedSince: string | undefined;
}

/** An action that checks its validators the way Koa documents it, and records what it was asked. */
function checkingAction(
  seen: Seen[],
  version: () => string,
  opts: { lastModified?: string; delay?: number; maxAge?: number } = {},
) {
  return async (ctx: Context) => {
    if (await ctx.bufferIsCached()) return;
    seen.push({
      ifNoneMatch: ctx.get('If-None-Match') || undefined,
      ifModifiedSince: ctx.get('If-Modified-Since') || undefined,
    });
    ctx.status = 200;
    ctx.set('Cache-Control', `max-age=${opts.maxAge ?? 60}`);
    if (opts.lastModified !== undefined) ctx.set('Last-Modified', opts.lastModified);
    else ctx.set('ETag', `"${version()}"`);
    if (opts.delay !== undefined) await new Promise((resolve) => setTimeout(resolve, opts.delay));
    if (ctx.fresh) return void (ctx.status = 304);
    ctx.type = 'html';
    ctx.body = page.replace('an article', `version ${version()}`);
  };
}

test('an expired entry with an ETag is revalidated: the action is asked with it, answers 304, and the entry is renewed', async (t) => {
  const store = new Map<string, unknown>([
    ['a', expired({ etag: '"v1"', 'cache-control': 'max-age=60', 'x-from': 'build' })],
  ]);
  const seen: Seen[] = [];
  const server = await serve(t, [
    buffer({ cache: store, cacheKey: (ctx) => ctx.path.slice(1) }),
    async (ctx, next) => {
      ctx.set('X-Per-Request', 'outer');
      await next();
    },
    checkingAction(seen, () => 'v1'),
  ]);
  const revalidated = await server.request('/a', { headers: { 'accept-encoding': 'identity' } });
  t.deepEqual(seen, [{ ifNoneMatch: '"v1"', ifModifiedSince: undefined }], 'the action is asked with the stored ETag');
  t.is(revalidated.status, 200);
  t.is(revalidated.body.toString(), page, 'the stored page, not rendered again');
  t.is(revalidated.headers['cache-status'], 'koa-buffer; fwd=stale; fwd-status=304; stored; detail=REVALIDATED');
  t.is(revalidated.headers['x-cache'], 'REVALIDATED');
  t.is(revalidated.headers['x-from'], 'build', 'the stored header fields the 304 did not send are kept');
  t.is(revalidated.headers['content-type'], 'text/html; charset=utf-8');
  t.is(revalidated.headers.etag, '"v1"');
  const hit = await server.request('/a');
  t.is(hit.headers['x-cache'], 'HIT', 'renewed: fresh again');
  t.regex(hit.headers['cache-status'] as string, /^koa-buffer; hit; ttl=(59|60)$/, 'with the lifetime the 304 gave');
  t.is(hit.headers.age, '0', 'aged from its renewal');
  t.is(seen.length, 1);
});

test("the visitor's own If-None-Match never reaches a revalidating action, and gets its 304 from the renewed entry", async (t) => {
  const store = new Map<string, unknown>([['a', expired({ etag: '"v1"' })]]);
  const seen: Seen[] = [];
  const server = await serve(t, [
    buffer({ cache: store, cacheKey: (ctx) => ctx.path.slice(1) }),
    checkingAction(seen, () => 'v1'),
  ]);
  // A tag the visitor holds from elsewhere: it says nothing of the stored entry.
  const other = await server.request('/a', { headers: { 'if-none-match': '"v0"', 'accept-encoding': 'identity' } });
  t.is(other.status, 200);
  t.deepEqual(seen[0], { ifNoneMatch: '"v1"', ifModifiedSince: undefined });
  t.is(other.body.toString(), page);
  // Expire it again; this visitor holds the very representation.
  store.set('a', expired({ etag: '"v1"' }));
  const holder = await server.request('/a', { headers: { 'if-none-match': '"v1"', 'accept-encoding': 'identity' } });
  t.is(holder.status, 304, 'the visitor holds what the renewed entry sends');
  t.is(seen.length, 2);
  t.deepEqual(seen[1], { ifNoneMatch: '"v1"', ifModifiedSince: undefined });
});

test('a visitor asking with an entry-less tag on a page being built without revalidation reaches the action as sent', async (t) => {
  const seen: Seen[] = [];
  const server = await serve(t, [buffer({ cache: new Map(), cacheKey: () => 'k' }), checkingAction(seen, () => 'v1')]);
  await server.request('/a', { headers: { 'if-none-match': '"mine"' } });
  t.deepEqual(seen, [{ ifNoneMatch: '"mine"', ifModifiedSince: undefined }], 'nothing stored: nothing swapped');
});

test('an action that answers 200 to the stored validator replaces the entry with the new page', async (t) => {
  const store = new Map<string, unknown>([['a', expired({ etag: '"v1"' })]]);
  const seen: Seen[] = [];
  const server = await serve(t, [
    buffer({ cache: store, cacheKey: (ctx) => ctx.path.slice(1) }),
    checkingAction(seen, () => 'v2'),
  ]);
  const changed = await server.request('/a');
  t.deepEqual(seen, [{ ifNoneMatch: '"v1"', ifModifiedSince: undefined }]);
  t.is(changed.headers['cache-status'], 'koa-buffer; fwd=stale; stored');
  t.is(changed.headers['x-cache'], 'MISS');
  t.regex(changed.body.toString(), /version v2/);
  t.regex((await server.request('/a')).body.toString(), /version v2/, 'the new page is stored');
});

test('a Last-Modified entry is revalidated with If-Modified-Since', async (t) => {
  const date = 'Wed, 02 Dec 2026 10:00:00 GMT';
  const store = new Map<string, unknown>([['a', expired({ 'last-modified': date })]]);
  const seen: Seen[] = [];
  const server = await serve(t, [
    buffer({ cache: store, cacheKey: (ctx) => ctx.path.slice(1) }),
    checkingAction(seen, () => 'v1', { lastModified: date }),
  ]);
  const renewed = await server.request('/a');
  t.deepEqual(seen, [{ ifNoneMatch: undefined, ifModifiedSince: date }]);
  t.is(renewed.headers['x-cache'], 'REVALIDATED');
  t.is(renewed.body.toString(), page);
});

test('requests that wait for a revalidating build are answered from the renewed entry; the action runs once', async (t) => {
  const store = new Map<string, unknown>([['a', expired({ etag: '"v1"' })]]);
  const seen: Seen[] = [];
  const server = await serve(t, [
    buffer({ cache: store, cacheKey: (ctx) => ctx.path.slice(1) }),
    checkingAction(seen, () => 'v1', { delay: 150 }),
  ]);
  const answers = await Promise.all(Array.from({ length: 6 }, () => server.request('/a')));
  t.is(seen.length, 1);
  for (const answer of answers) {
    t.is(answer.status, 200);
    t.is(answer.body.toString(), page);
  }
  const statuses = answers.map((a) => a.headers['cache-status']);
  t.is(statuses.filter((s) => s === 'koa-buffer; fwd=stale; fwd-status=304; stored; detail=REVALIDATED').length, 1);
  // On a loaded machine a request may arrive after the renewal: a hit of the renewed entry, still no second run.
  for (const status of statuses)
    t.regex(
      status as string,
      /^koa-buffer; (fwd=stale; fwd-status=304; stored; detail=REVALIDATED|fwd=miss; collapsed|hit; ttl=\d+)$/,
    );
});

test('a purged entry is rebuilt, never revalidated: a 304 would bring it back', async (t) => {
  const seen: Seen[] = [];
  const middleware = buffer({ cache: true, varyBy: [] });
  const server = await serve(t, [middleware, checkingAction(seen, () => 'v1', { maxAge: 1 })]);
  await server.request('/a');
  await server.request('/b');
  await new Promise((resolve) => setTimeout(resolve, 1100));
  await middleware.purge('/a');
  t.is((await server.request('/b')).headers['x-cache'], 'REVALIDATED', 'the control: an expired entry is revalidated');
  t.is((await server.request('/a')).headers['cache-status'], 'koa-buffer; fwd=miss; stored');
  t.deepEqual(
    seen.map((s) => s.ifNoneMatch),
    [undefined, undefined, '"v1"', undefined],
  );
});

test('cacheRevalidationWindow: 0 keeps nothing past its lifetime, so the rebuild renders', async (t) => {
  const seen: Seen[] = [];
  const server = await serve(t, [
    buffer({ cache: true, varyBy: [], cacheRevalidationWindow: 0 }),
    async (ctx) => {
      if (await ctx.bufferIsCached()) return;
      seen.push({ ifNoneMatch: ctx.get('If-None-Match') || undefined, ifModifiedSince: undefined });
      ctx.set('Cache-Control', 'max-age=1');
      ctx.set('ETag', '"v1"');
      ctx.type = 'html';
      ctx.body = page;
    },
  ]);
  await server.request('/a');
  await new Promise((resolve) => setTimeout(resolve, 1100));
  const again = await server.request('/a');
  t.is(again.headers['cache-status'], 'koa-buffer; fwd=miss; stored', 'the store let it go at its TTL');
  t.deepEqual(seen[1], { ifNoneMatch: undefined, ifModifiedSince: undefined });
});

test('with the default window, an entry that expired in a real store is kept and revalidated', async (t) => {
  const seen: Seen[] = [];
  const server = await serve(t, [buffer({ cache: true, varyBy: [] }), checkingAction(seen, () => 'v1', { maxAge: 1 })]);
  await server.request('/a');
  await new Promise((resolve) => setTimeout(resolve, 1100));
  const again = await server.request('/a');
  t.is(again.headers['cache-status'], 'koa-buffer; fwd=stale; fwd-status=304; stored; detail=REVALIDATED');
  t.deepEqual(seen[1], { ifNoneMatch: '"v1"', ifModifiedSince: undefined });
});

test('a no-cache response is stored and revalidated on every request; without a validator it is not stored', async (t) => {
  const seen: Seen[] = [];
  const server = await serve(t, [
    buffer({ cache: true, varyBy: [], cacheStaleWhileRevalidate: 60 }),
    async (ctx) => {
      if (await ctx.bufferIsCached()) return;
      seen.push({ ifNoneMatch: ctx.get('If-None-Match') || undefined, ifModifiedSince: undefined });
      ctx.status = 200;
      ctx.set('Cache-Control', 'no-cache');
      if (ctx.path === '/tagged') ctx.set('ETag', '"v1"');
      if (ctx.fresh) return void (ctx.status = 304);
      ctx.type = 'html';
      ctx.body = page;
    },
  ]);
  t.is((await server.request('/tagged')).headers['cache-status'], 'koa-buffer; fwd=miss; stored');
  for (let i = 0; i < 3; i++) {
    const again = await server.request('/tagged');
    t.is(
      again.headers['x-cache'],
      'REVALIDATED',
      'never a hit, never stale (cacheStaleWhileRevalidate does not apply)',
    );
    t.is(again.body.toString(), page);
  }
  t.deepEqual(
    seen.map((s) => s.ifNoneMatch),
    [undefined, '"v1"', '"v1"', '"v1"'],
  );
  const untagged = await server.request('/untagged');
  t.is(untagged.headers['cache-status'], 'koa-buffer; fwd=uri-miss; detail=EXPIRED');
  t.is((await server.request('/untagged')).headers['x-cache'], 'MISS');
});

test('must-revalidate: a failing rebuild is an error, not the stale entry cacheStaleIfError would answer', async (t) => {
  const store = new Map<string, unknown>();
  let fail = false;
  const server = await serve(t, [
    buffer({ cache: store, cacheKey: (ctx) => ctx.path.slice(1), cacheStaleIfError: 3600 }),
    async (ctx) => {
      if (await ctx.bufferIsCached()) return;
      if (fail) throw new Error('the database is down');
      ctx.set('Cache-Control', `max-age=1${ctx.path === '/strict' ? ', must-revalidate' : ''}`);
      ctx.type = 'html';
      ctx.body = page;
    },
  ]);
  await server.request('/strict');
  await server.request('/lenient');
  await new Promise((resolve) => setTimeout(resolve, 1100));
  fail = true;
  t.is((await server.request('/lenient')).headers['x-cache'], 'STALE', 'the control: stale-if-error answers');
  t.is((await server.request('/strict')).status, 500);
});

test('a 304 that sets a cookie is answered with the page and the cookie, and renews nothing', async (t) => {
  const store = new Map<string, unknown>([['a', expired({ etag: '"v1"' })]]);
  const server = await serve(t, [
    buffer({ cache: store, cacheKey: (ctx) => ctx.path.slice(1) }),
    async (ctx) => {
      if (await ctx.bufferIsCached()) return;
      ctx.status = 200;
      ctx.set('ETag', '"v1"');
      ctx.cookies.set('seen', '1');
      if (ctx.fresh) return void (ctx.status = 304);
      ctx.body = page;
    },
  ]);
  const answer = await server.request('/a');
  t.is(answer.status, 200);
  t.is(answer.body.toString(), page);
  t.regex(String(answer.headers['set-cookie']), /^seen=1/);
  t.is(answer.headers['cache-status'], 'koa-buffer; fwd=uri-miss; detail=SET-COOKIE');
  t.is((await server.request('/a')).headers['x-cache'], 'MISS', 'the stored entry was not renewed');
});

test('a stale-while-revalidate refresh asks the action with the stale entry’s validator', async (t) => {
  const store = new Map<string, unknown>();
  const seen: Seen[] = [];
  const server = await serve(t, [
    buffer({ cache: store, cacheKey: (ctx) => ctx.path.slice(1), cacheStaleWhileRevalidate: 60 }),
    checkingAction(seen, () => 'v1'),
  ]);
  const now = Date.now();
  store.set(
    'a',
    encodeEntry({
      status: 200,
      headers: { 'content-type': 'text/html', etag: '"v1"' },
      body: Buffer.from(page),
      created: createdAfterTheCode(10_000, now - 1000),
      expires: now - 1000,
      staleWhileRevalidate: 60_000,
    }),
  );
  t.is((await server.request('/a')).headers['x-cache'], 'STALE');
  for (let i = 0; i < 50 && seen.length === 0; i++) await new Promise((resolve) => setTimeout(resolve, 20));
  t.deepEqual(seen, [{ ifNoneMatch: '"v1"', ifModifiedSince: undefined }]);
  for (let i = 0; i < 50; i++) {
    const answer = await server.request('/a');
    if (answer.headers['x-cache'] === 'HIT') return t.pass();
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  t.fail('the refresh renewed nothing');
});

test('an Age the action set counts against its max-age, and an Expires in the past is not kept without a validator', async (t) => {
  const server = await serve(t, [
    buffer({ cache: true, varyBy: [] }),
    async (ctx) => {
      if (await ctx.bufferIsCached()) return;
      if (ctx.path === '/aged') {
        ctx.set('Cache-Control', 'max-age=100');
        ctx.set('Age', '99');
      }
      if (ctx.path === '/expired') ctx.set('Expires', 'Thu, 01 Jan 1970 00:00:00 GMT');
      if (ctx.path === '/garbled') ctx.set('Expires', '0');
      ctx.type = 'html';
      ctx.body = page;
    },
  ]);
  await server.request('/aged');
  const hit = await server.request('/aged');
  t.regex(hit.headers['cache-status'] as string, /^koa-buffer; hit; ttl=[01]$/, 'one second of freshness left');
  t.true(Number(hit.headers.age) >= 99);
  for (const path of ['/expired', '/garbled']) {
    t.is((await server.request(path)).headers['cache-status'], 'koa-buffer; fwd=uri-miss; detail=EXPIRED', path);
    t.is((await server.request(path)).headers['x-cache'], 'MISS', path);
  }
});
