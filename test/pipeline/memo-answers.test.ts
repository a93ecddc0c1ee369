/**
 * Memo answers (src/pipeline/replay/memo-answers.ts): a page rendered again with
 * the same bytes is answered as the pipeline answered it the last time,
 * without the pipeline. These tests hold it to "the same way, byte for
 * byte", count the pipeline's runs through its debug lines, and check that
 * whatever could change the answer sends the page through the pipeline.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import test from 'ava';
import type { Context } from 'koa';
import { buffer } from '../../src/buffer.ts';
import {
  decode,
  htmlPage,
  rawRequest,
  recordingLogger,
  serve,
  untilLogged,
  type RawResponse,
} from '../helpers/serve.ts';

const page = htmlPage(20 * 1024, 5);
/** Rendered afresh per request: a new string with the same bytes each time. */
const render = (): string => page.slice(0, 10) + page.slice(10);
/** A debug line every run of COMPRESS leaves; a memo answer leaves none. */
const pipelineRuns = /^(coding |sending \d+ bytes uncompressed)/;

/** Everything a client sees, but the Date header. */
function seen(response: RawResponse): unknown {
  const headers = response.rawHeaders
    .filter(([name]) => name.toLowerCase() !== 'date')
    .map(([name, value]) => `${name.toLowerCase()}: ${value}`)
    .sort();
  return { status: response.status, headers, body: response.body.toString('base64') };
}

test('a repeated page gets byte for byte what the pipeline answered, for every Accept-Encoding, without the pipeline', async (t) => {
  const logger = recordingLogger();
  const server = await serve(t, [
    buffer({ logger, optimiseContent: 1, adaptiveCompression: false }),
    (ctx) => {
      ctx.set('X-Page', 'report');
      ctx.type = 'html';
      ctx.body = render();
    },
  ]);
  // The memo keeps a body from its second sighting; the second response is the first the memo answers.
  for (let i = 0; i < 2; i++) await server.request('/');
  for (const encodings of ['br', 'gzip', 'zstd', 'deflate', 'gzip;q=0.5, br;q=0.1', 'identity', '']) {
    const headers: Record<string, string> = encodings === '' ? {} : { 'accept-encoding': encodings };
    const first = await server.request('/', { headers });
    const runs = logger.count(pipelineRuns);
    for (let i = 0; i < 3; i++)
      t.deepEqual(
        seen(await server.request('/', { headers })),
        seen(first),
        `${encodings || 'no Accept-Encoding'}: response ${i + 2} is response 1`,
      );
    t.is(logger.count(pipelineRuns), runs, `${encodings || 'no Accept-Encoding'}: answered without the pipeline`);
    t.true(decode(first).equals(decode(await server.request('/', { headers }))));
  }
  const head = await rawRequest(server.port, '/', { method: 'HEAD', headers: { 'accept-encoding': 'br' } });
  const get = await server.request('/', { headers: { 'accept-encoding': 'br' } });
  t.is(head.headers['content-length'], get.headers['content-length'], 'HEAD gets the headers of the GET');
  t.is(head.headers.etag, get.headers.etag);
  t.is(head.body.length, 0);
});

test('what could change the answer sends a known page through the pipeline again', async (t) => {
  const logger = recordingLogger();
  const server = await serve(t, [
    buffer({ logger, adaptiveCompression: false }),
    (ctx: Context) => {
      if (ctx.query.raw !== undefined) ctx.compress = false;
      if (ctx.query.nt !== undefined) ctx.set('Cache-Control', 'no-transform');
      if (ctx.query.json !== undefined) ctx.type = 'application/json';
      ctx.type ||= 'html';
      ctx.body = render();
    },
  ]);
  const br = { 'accept-encoding': 'br' };
  for (let i = 0; i < 3; i++) await server.request('/', { headers: br });
  const known = await server.request('/', { headers: br });
  t.is(known.headers['content-encoding'], 'br');

  const raw = await server.request('/?raw', { headers: br });
  t.is(raw.headers['content-encoding'], undefined, 'ctx.compress = false is honoured');
  const noTransform = await server.request('/?nt', { headers: br });
  t.is(noTransform.headers['content-encoding'], undefined, 'no-transform is honoured');
  t.is(decode(noTransform).toString(), page, 'and the page is not squashed either');
  const json = await server.request('/?json', { headers: br });
  t.is(json.headers['content-type'], 'application/json; charset=utf-8', 'the same bytes under another type');

  const post = await rawRequest(server.port, '/', { method: 'POST', headers: br });
  t.is(post.headers.etag, undefined, 'no validators outside GET and HEAD');
  const conditional = await server.request('/', { headers: { ...br, 'if-none-match': known.headers.etag! } });
  t.is(conditional.status, 304);
  const since = await server.request('/', { headers: { ...br, 'if-modified-since': known.headers['last-modified']! } });
  t.is(since.status, 200, 'a generated date alone answers no 304');

  const again = await server.request('/', { headers: br });
  t.deepEqual(seen(again), seen(known), 'the plain request still gets the answer it got');
});

test('a header the app sets on some responses keeps those from another response’s answer', async (t) => {
  let n = 0;
  const server = await serve(t, [
    buffer({ adaptiveCompression: false }),
    (ctx) => {
      ctx.type = 'html';
      // Every third response carries its own ETag: the pipeline codes it instead of making one.
      if (n++ % 3 === 2) ctx.set('ETag', '"v7"');
      ctx.body = render();
    },
  ]);
  const tags = [];
  for (let i = 0; i < 9; i++)
    tags.push((await server.request('/', { headers: { 'accept-encoding': 'gzip' } })).headers.etag);
  t.deepEqual(
    tags.map((tag, i) => (i % 3 === 2 ? tag === '"v7-gzip"' : /^"[0-9a-f]{32}-gzip"$/.test(tag!))),
    Array(9).fill(true),
  );
});

test('an edited template moves Last-Modified even when the page’s bytes stay the same', async (t) => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'koa-buffer-memo-answers-'));
  t.teardown(() => fs.rmSync(dir, { recursive: true, force: true }));
  const template = path.join(dir, 'page.html');
  fs.writeFileSync(template, page);
  // Later than the test runner's own script, whose time also counts.
  const first = new Date(Date.now() + 60_000);
  fs.utimesSync(template, first, first);
  const server = await serve(t, [
    buffer({ templatePaths: [dir], adaptiveCompression: false }),
    (ctx) => {
      ctx.type = 'html';
      ctx.body = render();
    },
  ]);
  const headers = { 'accept-encoding': 'gzip' };
  for (let i = 0; i < 3; i++) await server.request('/', { headers });
  const before = await server.request('/', { headers });
  t.is(before.headers['last-modified'], new Date(Math.floor(first.getTime() / 1000) * 1000).toUTCString());

  const edited = new Date(first.getTime() + 5_000);
  fs.utimesSync(template, edited, edited);
  await new Promise((resolve) => setTimeout(resolve, 400)); // the scan is trusted for 250 ms
  const after = await server.request('/', { headers });
  t.is(after.headers['last-modified'], new Date(Math.floor(edited.getTime() / 1000) * 1000).toUTCString());
  t.is(after.headers.etag, before.headers.etag, 'the same bytes keep their tag');
});

test('two addresses with one body: the dictionary offered on one is not answered on the other', async (t) => {
  const server = await serve(t, [
    buffer({ dictionaries: [{ match: '/news' }], lastModified: false }),
    (ctx) => {
      ctx.type = 'html';
      ctx.body = render();
    },
  ]);
  const headers = { 'accept-encoding': 'gzip, br, zstd, dcz' };
  for (const address of ['/news', '/other', '/news', '/other', '/news', '/other']) {
    const response = await server.request(address, { headers });
    t.is(response.headers['use-as-dictionary'] !== undefined, address === '/news', address);
  }
});

test('an adaptive page still reaches its hot bytes while its answers are remembered', async (t) => {
  const logger = recordingLogger();
  const server = await serve(t, [
    buffer({ logger, optimiseContent: 1 }),
    (ctx) => {
      ctx.type = 'html';
      ctx.body = render();
    },
  ]);
  const headers = { 'accept-encoding': 'br' };
  const first = await server.request('/', { headers });
  // Repeated until its upgrade is queued; then waited for, however long a
  // loaded machine makes the upgrade (it runs off the request path).
  const queued = (): boolean => logger.count(/^queued the upgrade .* to br level 11/) > 0;
  for (let i = 0; i < 50 && !queued(); i++) await server.request('/', { headers });
  t.true(queued(), 'the repeated page has its upgrade queued');
  await untilLogged(logger, /^recompressed .* with br level 11/);
  const hot = await server.request('/', { headers });
  t.regex(hot.headers.etag ?? '', /-br11"$/, 'the page goes out hot once its upgrade is done');
  t.true(hot.body.length < first.body.length, 'the hot bytes are smaller than the first');
  t.deepEqual(seen(await server.request('/', { headers })), seen(hot), 'and they are the answer from then on');
});
