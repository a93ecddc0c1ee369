/**
 * The cache as a shared HTTP cache behaves (RFC 9111): every answer from a
 * stored entry says its Age; a successful write purges what it changed; and
 * the application's namespace, not its deploy path, names its entries.
 */
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import test from 'ava';
import { defaultNamespace } from '../../src/base/app-identity.ts';
import { buffer } from '../../src/buffer.ts';
import { encodeEntry } from '../../src/cache/entry.ts';
import { spawnChild } from '../helpers/children.ts';
import { createdAfterTheCode } from '../helpers/code-time.ts';
import { rawRequest, serve } from '../helpers/serve.ts';

const page = `<!doctype html><p>${'an article '.repeat(200)}</p>`;

test('an answer from a stored entry says its Age: the time in this cache plus the Age it was stored with', async (t) => {
  const store = new Map<string, unknown>();
  const now = Date.now();
  // 500 s ago, unless the code is newer (a fresh clone): then as long ago as the code allows.
  const created = createdAfterTheCode(500_000, now);
  const resident = Math.floor((now - created) / 1000);
  const entry = (age?: string) =>
    encodeEntry({
      status: 200,
      headers: { 'content-type': 'text/html', 'cache-control': 'max-age=600', ...(age ? { age } : {}) },
      body: Buffer.from(page),
      created,
      expires: now + 100_000,
    });
  store.set('fresh', entry());
  store.set('aged', entry('100'));
  const server = await serve(t, [
    buffer({ cache: store, cacheKey: (ctx) => ctx.path.slice(1) }),
    async (ctx) => {
      if (await ctx.bufferIsCached()) return;
      ctx.type = 'html';
      ctx.body = page;
    },
  ]);
  const fresh = await server.request('/fresh');
  t.is(fresh.headers['x-cache'], 'HIT');
  const age = Number(fresh.headers.age);
  t.true(age >= resident && age <= resident + 2, `Age ${fresh.headers.age}, in this cache for ${resident} s`);
  t.is(fresh.headers['cache-control'], 'max-age=600', 'the lifetime as stored: Age says how much is used');
  const aged = await server.request('/aged');
  t.true(Number(aged.headers.age) >= 100 + resident, 'an Age the response was stored with counts too');
  const built = await server.request('/new');
  t.is(built.headers['x-cache'], 'MISS');
  t.is(built.headers.age, undefined, 'a response the action just made has no Age');
  const hit = await server.request('/new');
  t.is(hit.headers.age, '0');
});

test('a successful write purges its URL and the same-host URLs its Location and Content-Location name', async (t) => {
  let builds = 0;
  const server = await serve(t, [
    buffer({ cache: true, varyBy: [] }),
    async (ctx) => {
      if (ctx.method === 'POST') {
        if (ctx.query.fail !== undefined) return void (ctx.status = 500);
        ctx.status = 201;
        ctx.set('Location', String(ctx.query.location ?? '/articles/8'));
        if (ctx.query.content) ctx.set('Content-Location', String(ctx.query.content));
        ctx.body = 'saved';
        return;
      }
      if (ctx.method === 'DELETE') return void (ctx.status = 204);
      if (await ctx.bufferIsCached()) return;
      builds++;
      ctx.type = 'html';
      ctx.body = `${ctx.path} ${builds}`;
    },
  ]);
  const cached = async (path: string) => (await server.request(path)).headers['x-cache'];
  for (const path of ['/articles/7', '/articles/8', '/articles/9', '/elsewhere']) {
    await server.request(path);
    t.is(await cached(path), 'HIT', `${path} is cached`);
  }
  await server.request('/articles/7?fail', { method: 'POST' });
  t.is(await cached('/articles/7'), 'HIT', 'a failed write purges nothing');
  await server.request('/articles/7', { method: 'POST' });
  t.is(await cached('/articles/7'), 'MISS', 'the written URL is purged');
  t.is(await cached('/articles/8'), 'MISS', 'and the one its Location names');
  t.is(await cached('/articles/9'), 'HIT', 'but no other');
  await server.request('/articles/7?location=http://evil.example/articles/9&content=/elsewhere', { method: 'POST' });
  t.is(await cached('/articles/9'), 'HIT', 'a Location on another host purges nothing');
  t.is(await cached('/elsewhere'), 'MISS', 'Content-Location on this host is purged');
  await server.request('/articles/9', { method: 'DELETE' });
  t.is(await cached('/articles/9'), 'MISS', 'a DELETE purges its URL');
});

test('the default namespace is the nearest package name and the script path within it, not where it is deployed', (t) => {
  const root = mkdtempSync(join(tmpdir(), 'kb-namespace-'));
  t.teardown(() => rmSync(root, { recursive: true, force: true }));
  for (const release of ['releases/v1', 'releases/v2']) {
    mkdirSync(join(root, release, 'bin'), { recursive: true });
    writeFileSync(join(root, release, 'package.json'), JSON.stringify({ name: 'shop' }));
  }
  t.is(defaultNamespace(join(root, 'releases/v1/bin/server.mjs')), 'shop:bin/server.mjs');
  t.is(defaultNamespace(join(root, 'releases/v2/bin/server.mjs')), 'shop:bin/server.mjs');
  mkdirSync(join(root, 'bare'));
  t.is(defaultNamespace(join(root, 'bare/server.mjs')), join(root, 'bare/server.mjs'), 'no package.json: the path');
});

test('the same application at two deploy paths shares one store: the second process hits what the first built', async (t) => {
  const root = mkdtempSync(join(tmpdir(), 'kb-releases-'));
  t.teardown(() => rmSync(root, { recursive: true, force: true }));
  const index = fileURLToPath(new URL('../../src/index.ts', import.meta.url));
  const store = join(root, 'cache.sqlite');
  // Koa resolves from this repository's node_modules, as an installed app resolves its own.
  symlinkSync(fileURLToPath(new URL('../../node_modules', import.meta.url)), join(root, 'node_modules'), 'dir');
  const script = `import Koa from 'koa';
import { buffer } from ${JSON.stringify(index)};
const app = new Koa();
app.use(buffer({ cache: ${JSON.stringify(`sqlite:${store}`)}, varyBy: [] }));
app.use(async (ctx) => {
  if (await ctx.bufferIsCached()) return;
  ctx.type = 'html';
  ctx.body = '<p>built by ' + process.argv[1] + '</p>';
});
const server = app.listen(0, '127.0.0.1', () => console.log(JSON.stringify({ port: server.address().port })));
`;
  const ports: number[] = [];
  for (const [release, name] of [
    ['v1', 'shop'],
    ['v2', 'shop'],
    ['other', 'blog'],
  ]) {
    const dir = join(root, release!);
    mkdirSync(dir);
    writeFileSync(join(dir, 'package.json'), JSON.stringify({ name, type: 'module' }));
    writeFileSync(join(dir, 'server.ts'), script);
    const child = spawnChild(t, join(dir, 'server.ts'));
    ports.push((await child.waitForJson<{ port: number }>((m) => typeof m.port === 'number', 'the port')).port);
  }
  // One site: the hosts behind its load balancer see one Host.
  const get = (port: number) => rawRequest(port, '/page', { headers: { host: 'shop.example' } });
  const first = await get(ports[0]!);
  t.is(first.headers['x-cache'], 'MISS');
  let second = await get(ports[1]!);
  // The build is written to the store as its response goes out: the next process sees it a moment later.
  for (let i = 0; i < 50 && second.headers['x-cache'] !== 'HIT'; i++) second = await get(ports[1]!);
  t.is(second.headers['x-cache'], 'HIT', 'release v2 hits the page release v1 built');
  t.regex(second.body.toString(), /v1\/server\.ts/);
  const other = await get(ports[2]!);
  t.is(other.headers['x-cache'], 'MISS', 'another application never reads it');
});
