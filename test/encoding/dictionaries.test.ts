/**
 * Compression dictionaries (RFC 9842) over real HTTP: a page offered with
 * `Use-As-Dictionary`, the next version answered as dcz against it, every
 * dcz body decoded with zstd-napi and the dictionary to the exact bytes;
 * ETags and 304s; the cache-hit path; a dictionary shared through a SQLite
 * store between two middlewares; versioned static assets through koa-static;
 * and every kind of bad input falling back to the normal coding.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import test from 'ava';
import type Koa from 'koa';
import serveStatic from 'koa-static';
import { buffer } from '../../src/buffer.ts';
import type { BufferOptions } from '../../src/config/options.ts';
import { availableHeader, decodeDcz, sha256 } from '../helpers/dcz.ts';
import { decode, serve } from '../helpers/serve.ts';

/** A page of about 50 KiB whose one changing place is `stamp`. */
function page(stamp: string): string {
  const rows = Array.from(
    { length: 600 },
    (_, i) => `<li class="item"><a href="/articles/${i}">Article ${i}</a> by author ${i % 17}</li>`,
  );
  return `<!doctype html><html><head><title>News</title></head><body><p id="stamp">${stamp}</p><ul>${rows.join('')}</ul></body></html>`;
}

const dcz = 'br, gzip, zstd, dcz';
const rules: BufferOptions['dictionaries'] = [{ match: '/news*', id: 'news' }];

/** An app whose /news page says whatever `state.stamp` holds. */
function newsApp(options: BufferOptions = {}): { middleware: Koa.Middleware[]; state: { stamp: string } } {
  const state = { stamp: 'one' };
  const action: Koa.Middleware = async (ctx) => {
    if (options.cache !== undefined && (await ctx.bufferIsCached())) return;
    ctx.type = 'html';
    ctx.body = page(state.stamp);
  };
  return { middleware: [buffer({ dictionaries: rules, lastModified: false, ...options }), action], state };
}

test('a page is offered as a dictionary; its next version goes out as dcz and decodes to the exact bytes', async (t) => {
  const { middleware, state } = newsApp();
  const server = await serve(t, middleware);
  const first = await server.request('/news', { headers: { 'accept-encoding': dcz } });
  t.is(first.headers['use-as-dictionary'], 'match="/news*", id="news"');
  t.is(first.headers.vary, 'Accept-Encoding, Available-Dictionary');
  t.not(first.headers['content-encoding'], 'dcz', 'no dictionary was named');
  const dictionary = decode(first);
  t.is(dictionary.toString(), page('one'));

  state.stamp = 'two';
  const second = await server.request('/news', {
    headers: { 'accept-encoding': dcz, 'available-dictionary': availableHeader(dictionary), 'dictionary-id': '"news"' },
  });
  t.is(second.status, 200);
  t.is(second.headers['content-encoding'], 'dcz');
  t.is(second.headers.vary, 'Accept-Encoding, Available-Dictionary');
  t.is(decodeDcz(second.body, dictionary).toString(), page('two'));
  t.true(second.body.length < 200, `a one-place change costs ${second.body.length} bytes`);
  t.is(Number(second.headers['content-length']), second.body.length);
  // The strong tag names these bytes: the dictionary is part of it.
  const md5Tag = /^"([0-9a-f]{32})-dcz-([0-9a-f]{16})"$/.exec(second.headers.etag!);
  t.truthy(md5Tag, second.headers.etag);
  t.is(md5Tag![2], sha256(dictionary).toString('hex').slice(0, 16));
  t.is(second.headers['use-as-dictionary'], 'match="/news*", id="news"', 'the new version is offered in turn');

  // The same request again: the coded bytes come from the memo, identical.
  const again = await server.request('/news', {
    headers: { 'accept-encoding': dcz, 'available-dictionary': availableHeader(dictionary) },
  });
  t.deepEqual(again.body, second.body);

  // The second version is now a dictionary too.
  state.stamp = 'three';
  const third = await server.request('/news', {
    headers: { 'accept-encoding': dcz, 'available-dictionary': availableHeader(decodeDcz(second.body, dictionary)) },
  });
  t.is(third.headers['content-encoding'], 'dcz');
  t.is(decodeDcz(third.body, Buffer.from(page('two'))).toString(), page('three'));
});

test('ETags and 304: the dcz tag gets 304 for the same dictionary; a tag of another coding of the content too', async (t) => {
  const { middleware, state } = newsApp();
  const server = await serve(t, middleware);
  const dictionary = decode(await server.request('/news', { headers: { 'accept-encoding': dcz } }));
  state.stamp = 'two';
  const headers = { 'accept-encoding': dcz, 'available-dictionary': availableHeader(dictionary) };
  const coded = await server.request('/news', { headers });
  const br = await server.request('/news', { headers: { 'accept-encoding': 'br' } });
  t.not(coded.headers.etag, br.headers.etag, 'different bytes, different strong tags');

  const revalidated = await server.request('/news', { headers: { ...headers, 'if-none-match': coded.headers.etag! } });
  t.is(revalidated.status, 304);
  t.is(revalidated.headers.etag, coded.headers.etag);
  t.is(revalidated.body.length, 0);

  const heldAsBr = await server.request('/news', { headers: { ...headers, 'if-none-match': br.headers.etag! } });
  t.is(heldAsBr.status, 304, 'the client holds the current content, in br');

  state.stamp = 'three';
  const changed = await server.request('/news', { headers: { ...headers, 'if-none-match': coded.headers.etag! } });
  t.is(changed.status, 200);
  t.is(changed.headers['content-encoding'], 'dcz');
  t.is(decodeDcz(changed.body, dictionary).toString(), page('three'));
});

/** The Available-Dictionary values that must all fall back to the normal coding. */
const badHeaders: Array<[string, (known: Buffer) => string]> = [
  ['empty', () => ''],
  ['no colons', (d) => sha256(d).toString('base64')],
  ['one colon', (d) => `:${sha256(d).toString('base64')}`],
  ['a string instead of bytes', (d) => `"${sha256(d).toString('base64')}"`],
  ['hex instead of base64', (d) => `:${sha256(d).toString('hex')}:`],
  [
    'base64url alphabet',
    (d) => {
      const url = sha256(d).toString('base64').replace(/\+/g, '-').replace(/\//g, '_');
      return `:${url.includes('-') || url.includes('_') ? url : `-${url.slice(1)}`}:`;
    },
  ],
  ['padding missing', (d) => `:${sha256(d).toString('base64').slice(0, -1)}:`],
  ['31 bytes', (d) => `:${sha256(d).subarray(0, 31).toString('base64')}:`],
  ['33 bytes', (d) => `:${Buffer.concat([sha256(d), Buffer.from([0])]).toString('base64')}:`],
  [
    'non-canonical last character',
    (d) => {
      const text = sha256(d).toString('base64');
      const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
      const last = alphabet.indexOf(text[42]!);
      return `:${text.slice(0, 42)}${alphabet[last ^ 1]}=:`;
    },
  ],
  [
    'space inside',
    (d) =>
      `:${sha256(d)
        .toString('base64')
        .replace(/^(.{10})/, '$1 ')}:`,
  ],
  ['an inner list', (d) => `(:${sha256(d).toString('base64')}:)`],
  ['two items', (d) => `:${sha256(d).toString('base64')}:, :${sha256(d).toString('base64')}:`],
  ['a broken parameter', (d) => `:${sha256(d).toString('base64')}:;=1`],
  ['trailing garbage', (d) => `:${sha256(d).toString('base64')}:x`],
  ['an unknown hash (a client that lies)', () => `:${sha256(Buffer.from('never offered')).toString('base64')}:`],
];

for (const [name, make] of badHeaders) {
  test(`Available-Dictionary ${name}: the normal coding, 200`, async (t) => {
    const { middleware, state } = newsApp();
    const server = await serve(t, middleware);
    const dictionary = decode(await server.request('/news', { headers: { 'accept-encoding': dcz } }));
    state.stamp = 'two';
    const response = await server.request('/news', {
      headers: { 'accept-encoding': dcz, 'available-dictionary': make(dictionary) },
    });
    t.is(response.status, 200);
    t.is(response.headers['content-encoding'], 'zstd');
    t.is(decode(response).toString(), page('two'));
  });
}

test('a valid header with parameters is accepted (RFC 8941 Item)', async (t) => {
  const { middleware, state } = newsApp();
  const server = await serve(t, middleware);
  const dictionary = decode(await server.request('/news', { headers: { 'accept-encoding': dcz } }));
  state.stamp = 'two';
  const response = await server.request('/news', {
    headers: { 'accept-encoding': dcz, 'available-dictionary': ` ${availableHeader(dictionary)};a=1;b="x";c ` },
  });
  t.is(response.headers['content-encoding'], 'dcz');
  t.is(decodeDcz(response.body, dictionary).toString(), page('two'));
});

test('no dcz in Accept-Encoding, dcz;q=0, or a path outside the rule: the normal coding', async (t) => {
  const { middleware, state } = newsApp();
  const server = await serve(t, middleware);
  const dictionary = decode(await server.request('/news', { headers: { 'accept-encoding': dcz } }));
  state.stamp = 'two';
  const available = availableHeader(dictionary);
  for (const accept of ['br, zstd', 'br, dcz;q=0', '*']) {
    const response = await server.request('/news', {
      headers: { 'accept-encoding': accept, 'available-dictionary': available },
    });
    t.not(response.headers['content-encoding'], 'dcz', accept);
    t.is(decode(response).toString(), page('two'));
  }
  const outside = await server.request('/other', {
    headers: { 'accept-encoding': dcz, 'available-dictionary': available },
  });
  t.not(outside.headers['content-encoding'], 'dcz');
  t.is(outside.headers['use-as-dictionary'], undefined);
});

test('an evicted dictionary (keep: 2, two newer versions since) gets the normal coding', async (t) => {
  const state = { stamp: 'one' };
  const server = await serve(t, [
    buffer({ dictionaries: [{ match: '/news', keep: 2 }] }),
    (ctx) => {
      ctx.type = 'html';
      ctx.body = page(state.stamp);
    },
  ]);
  const old = decode(await server.request('/news', { headers: { 'accept-encoding': dcz } }));
  state.stamp = 'two';
  const newer = await server.request('/news', { headers: { 'accept-encoding': dcz } });
  t.is(newer.headers['use-as-dictionary'], 'match="/news"');
  state.stamp = 'three';
  // The third version is kept when its response is sent; from then on the first is gone.
  t.is((await server.request('/news', { headers: { 'accept-encoding': dcz } })).status, 200);
  const response = await server.request('/news', {
    headers: { 'accept-encoding': dcz, 'available-dictionary': availableHeader(old) },
  });
  t.is(response.headers['content-encoding'], 'zstd', 'the first version was dropped when the third was kept');
  const withNewer = await server.request('/news', {
    headers: { 'accept-encoding': dcz, 'available-dictionary': availableHeader(decode(newer)) },
  });
  t.is(withNewer.headers['content-encoding'], 'dcz');
  t.is(decodeDcz(withNewer.body, decode(newer)).toString(), page('three'));
});

test('a body over maxSize is neither offered nor coded with a dictionary', async (t) => {
  const server = await serve(t, [
    buffer({ dictionaries: [{ match: '/*', maxSize: '10kb' }] }),
    (ctx) => {
      ctx.type = 'html';
      ctx.body = ctx.path === '/small' ? page('x').slice(0, 8000) : page(ctx.path);
    },
  ]);
  const big = await server.request('/big', { headers: { 'accept-encoding': dcz } });
  t.is(big.headers['use-as-dictionary'], undefined);
  const small = decode(await server.request('/small', { headers: { 'accept-encoding': dcz } }));
  const response = await server.request('/big', {
    headers: { 'accept-encoding': dcz, 'available-dictionary': availableHeader(small) },
  });
  t.is(response.headers['content-encoding'], 'zstd');
  t.is(decode(response).toString(), page('/big'));
});

test('through the server-side cache: hits are dcz for a client naming a dictionary, and plain for the others', async (t) => {
  const { middleware, state } = newsApp({ cache: true, varyBy: [] });
  const server = await serve(t, middleware);
  const dictionary = decode(await server.request('/news', { headers: { 'accept-encoding': dcz } }));
  const headers = { 'accept-encoding': dcz, 'available-dictionary': availableHeader(dictionary) };
  state.stamp = 'two'; // the cache still holds 'one'
  for (let i = 0; i < 3; i++) {
    const hit = await server.request('/news', { headers });
    t.regex(hit.headers['cache-status'] ?? hit.headers['x-cache'] ?? '', /hit/i);
    t.is(hit.headers['content-encoding'], 'dcz');
    t.is(decodeDcz(hit.body, dictionary).toString(), page('one'));
    const plain = await server.request('/news', { headers: { 'accept-encoding': dcz } });
    // zstd while the entry is cold, br once its hot upgrade has landed (adaptive compression): never dcz.
    t.regex(
      String(plain.headers['content-encoding']),
      /^(zstd|br)$/,
      'a prepared hit never hands dcz to a client without the dictionary',
    );
    t.is(decode(plain).toString(), page('one'));
  }
});

test('a dictionary offered by one middleware is used by another through a shared SQLite store', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kb-dict-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const cache = `sqlite:${path.join(dir, 'cache.sqlite')}`;
  // A shared copy lives as long as a browser may use it: the rule's ttl here.
  const shared = [{ match: '/news*', id: 'news', ttl: '1 hour' }];
  const one = newsApp({ cache, varyBy: [], dictionaries: shared });
  const two = newsApp({ cache, varyBy: [], cacheDuration: 1, dictionaries: shared });
  const first = await serve(t, one.middleware);
  const second = await serve(t, two.middleware);
  t.teardown(async () => {
    for (const m of [...one.middleware, ...two.middleware]) await (m as { close?: () => Promise<void> }).close?.();
  });
  const offered = decode(await first.request('/news', { headers: { 'accept-encoding': dcz } }));
  // Let the write to the store land (it is made off the request's path).
  await new Promise((resolve) => setTimeout(resolve, 200));
  two.state.stamp = 'two';
  const response = await second.request('/news?fresh', {
    headers: { 'accept-encoding': dcz, 'available-dictionary': availableHeader(offered) },
  });
  t.is(response.headers['content-encoding'], 'dcz');
  t.is(decodeDcz(response.body, offered).toString(), page('two'));
});

test('versioned static assets through koa-static: app.v1.js is the dictionary for app.v2.js', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'kb-assets-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const bundle = (version: number): string =>
    Array.from(
      { length: 800 },
      (_, i) =>
        `export function widget${i}(x) { return render('widget-${i}', x, ${i % 9}); } // v${i === 400 ? version : 1}\n`,
    ).join('');
  fs.writeFileSync(path.join(dir, 'app.v1.js'), bundle(1));
  fs.writeFileSync(path.join(dir, 'app.v2.js'), bundle(2));
  fs.writeFileSync(path.join(dir, 'huge.v1.js'), bundle(1).repeat(20));
  const server = await serve(t, [
    buffer({ dictionaries: [{ match: '/app.*.js', types: ['text/javascript', 'application/javascript'] }] }),
    serveStatic(dir),
  ]);
  const v1 = await server.request('/app.v1.js', { headers: { 'accept-encoding': dcz } });
  t.is(v1.headers['use-as-dictionary'], 'match="/app.*.js"');
  const dictionary = decode(v1);
  t.is(dictionary.toString(), bundle(1));
  const v2 = await server.request('/app.v2.js', {
    headers: { 'accept-encoding': dcz, 'available-dictionary': availableHeader(dictionary) },
  });
  t.is(v2.headers['content-encoding'], 'dcz');
  t.is(decodeDcz(v2.body, dictionary).toString(), bundle(2));
  const br = await server.request('/app.v2.js', { headers: { 'accept-encoding': 'br' } });
  t.true(v2.body.length * 4 < br.body.length, `dcz ${v2.body.length} bytes, br ${br.body.length}`);
  // A file outside the rule stays on the stream path.
  const huge = await server.request('/huge.v1.js', { headers: { 'accept-encoding': dcz } });
  t.is(huge.headers['use-as-dictionary'], undefined);
  t.is(huge.headers['content-length'], undefined, 'streamed');
  t.is(decode(huge).toString(), bundle(1).repeat(20));
});
