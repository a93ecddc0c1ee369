/**
 * Koa over HTTP/2: koa-buffer works on Node's HTTP/2 compatibility API the
 * same as on HTTP/1.1, cleartext (h2c, `http2.createServer`) and over TLS
 * (`http2.createSecureServer`, with a certificate made by openssl for the
 * test): fresh responses, cache hits, 304s and streamed files, each read
 * with Node's own http2 client.
 */
import fs from 'node:fs';
import http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import zlib from 'node:zlib';
import test, { type ExecutionContext } from 'ava';
import Koa from 'koa';
import serveStatic from 'koa-static';
import { buffer } from '../../src/buffer.ts';
import { loopbackCertificate } from '../helpers/certificate.ts';
import { htmlPage } from '../helpers/serve.ts';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'koa-buffer-h2-'));
const page = htmlPage(32 * 1024, 4);
fs.writeFileSync(path.join(dir, 'style.css'), 'main { display: grid }\n'.repeat(3000));
test.after.always(() => fs.rmSync(dir, { recursive: true, force: true }));

type Listener = (request: http2.Http2ServerRequest, response: http2.Http2ServerResponse) => void;

/** The app under test: cached pages, and files from koa-static; its listener never rejects (Koa catches its errors). */
function app(): { handler: Listener; runs: () => number } {
  const koa = new Koa();
  koa.silent = true;
  let runs = 0;
  koa.use(buffer({ cache: true, optimiseContent: 1 }));
  koa.use(serveStatic(dir));
  koa.use(async (ctx) => {
    if (await ctx.bufferIsCached()) return;
    runs++;
    ctx.type = 'html';
    ctx.body = page;
  });
  return { handler: koa.callback() as unknown as Listener, runs: () => runs };
}

interface H2Response {
  headers: http2.IncomingHttpHeaders;
  body: Buffer;
}

/** One request on an HTTP/2 session. */
function get(
  session: http2.ClientHttp2Session,
  url: string,
  headers: Record<string, string> = {},
): Promise<H2Response> {
  return new Promise((resolve, reject) => {
    const req = session.request({ ':path': url, ...headers });
    const chunks: Buffer[] = [];
    let received: http2.IncomingHttpHeaders = {};
    req.on('response', (h) => (received = h));
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => resolve({ headers: received, body: Buffer.concat(chunks) }));
    req.on('error', reject);
    req.end();
  });
}

async function exercise(t: ExecutionContext, session: http2.ClientHttp2Session, runs: () => number): Promise<void> {
  const fresh = await get(session, '/page', { 'accept-encoding': 'br' });
  t.is(Number(fresh.headers[':status']), 200);
  t.is(fresh.headers['content-encoding'], 'br');
  t.is(Number(fresh.headers['content-length']), fresh.body.length);
  const html = zlib.brotliDecompressSync(fresh.body).toString();
  t.true(html.length > 0 && html.length < page.length, 'squashed');
  t.is(fresh.headers['x-cache'], 'MISS');

  const hit = await get(session, '/page', { 'accept-encoding': 'gzip' });
  t.is(Number(hit.headers[':status']), 200);
  t.is(hit.headers['x-cache'], 'HIT');
  t.is(zlib.gunzipSync(hit.body).toString(), html);
  t.is(runs(), 1, 'the hit did not run the action');

  const notModified = await get(session, '/page', {
    'accept-encoding': 'br',
    'if-none-match': String(fresh.headers.etag),
  });
  t.is(Number(notModified.headers[':status']), 304);
  t.is(notModified.body.length, 0);

  const file = await get(session, '/style.css', { 'accept-encoding': 'br' });
  t.is(Number(file.headers[':status']), 200);
  t.is(file.headers['content-encoding'], 'br');
  t.is(zlib.brotliDecompressSync(file.body).toString(), fs.readFileSync(path.join(dir, 'style.css'), 'utf8'));
  t.regex(String(file.headers.etag), /^W\//);
  const fileAgain = await get(session, '/style.css', { 'if-modified-since': String(file.headers['last-modified']) });
  t.is(Number(fileAgain.headers[':status']), 304);
}

async function listen(server: http2.Http2Server | http2.Http2SecureServer, t: ExecutionContext): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  return (server.address() as AddressInfo).port;
}

test('h2c: fresh, cached, 304 and streamed responses', async (t) => {
  const { handler, runs } = app();
  const server = http2.createServer(handler);
  const port = await listen(server, t);
  const session = http2.connect(`http://127.0.0.1:${port}`);
  t.teardown(() => session.close());
  await exercise(t, session, runs);
});

test('h2 over TLS: fresh, cached, 304 and streamed responses', async (t) => {
  const pair = loopbackCertificate(dir);
  if (!pair) {
    t.log('skipped: openssl is not installed (apt-get install openssl) to make a test certificate');
    t.pass();
    return;
  }
  const { handler, runs } = app();
  const server = http2.createSecureServer({ ...pair }, handler);
  const port = await listen(server, t);
  const session = http2.connect(`https://127.0.0.1:${port}`, { ca: pair.cert });
  t.teardown(() => session.close());
  await exercise(t, session, runs);
  t.is((session.socket as import('node:tls').TLSSocket).alpnProtocol, 'h2');
});
