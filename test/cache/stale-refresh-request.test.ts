/**
 * The stale-while-revalidate refresh rebuilds the page a visitor would get:
 * it is the visitor's request replayed (scheme, host, HTTP version, remote
 * address, headers), over real TLS (a certificate made by openssl for the
 * test), real HTTP/2 (TLS with allowHTTP1, and h2c) and HTTP/1.1 behind a
 * proxy (app.proxy with X-Forwarded-*), with and without cacheHosts. The
 * page prints everything Koa tells the action about the request, so a
 * refresh built for another scheme, host or client stores other bytes.
 */
import fs from 'node:fs';
import http from 'node:http';
import http2 from 'node:http2';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import test, { type ExecutionContext } from 'ava';
import Koa from 'koa';
import { decodeEntry } from '../../src/cache/entry.ts';
import { buffer } from '../../src/buffer.ts';
import { loopbackCertificate } from '../helpers/certificate.ts';
import { logOnFailure } from '../helpers/log-on-failure.ts';
import { recordingLogger } from '../helpers/serve.ts';

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'koa-buffer-refresh-'));
test.after.always(() => fs.rmSync(dir, { recursive: true, force: true }));

/** A certificate for 127.0.0.1, or undefined when openssl is missing. */
const pair = loopbackCertificate(dir);

interface Answer {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  body: string;
}

/** A client of one server: each request as the visitor's browser would send it. */
type Client = (urlPath: string, headers?: Record<string, string>) => Promise<Answer>;

type Listener = (request: http.IncomingMessage, response: http.ServerResponse) => void;

interface Transport {
  /** Starts a server for `listener`; closed in teardown. */
  listen(t: ExecutionContext, listener: Listener): Promise<Client>;
  /** Headers every request of this visitor carries (a proxy's forwarding headers). */
  headers?: Record<string, string>;
  /** The host name the visitor asks for (cacheHosts names it). */
  host: string;
  proxy?: boolean;
  needsTls?: boolean;
}

async function listening(t: ExecutionContext, server: http.Server | http2.Http2Server): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  t.teardown(
    () =>
      new Promise<void>((resolve) => {
        (server as http.Server).closeAllConnections?.();
        server.close(() => resolve());
      }),
  );
  return (server.address() as AddressInfo).port;
}

function collect(
  res: http.IncomingMessage | http2.ClientHttp2Stream,
  resolve: (body: string) => void,
  reject: (e: Error) => void,
): void {
  const chunks: Buffer[] = [];
  res.on('data', (chunk: Buffer) => chunks.push(chunk));
  res.on('end', () => resolve(Buffer.concat(chunks).toString()));
  res.on('error', reject);
}

/** HTTP/1.1 requests on their own connections (`https` when `tls` is given). */
function http1Client(port: number, tls?: { ca: Buffer }): Client {
  return (urlPath, headers = {}) =>
    new Promise((resolve, reject) => {
      const options = { host: '127.0.0.1', port, path: urlPath, headers, agent: false as const };
      const done = (res: http.IncomingMessage): void =>
        collect(res, (body) => resolve({ status: res.statusCode!, headers: res.headers, body }), reject);
      const req = tls ? https.request({ ...options, ca: tls.ca }, done) : http.request(options, done);
      req.on('error', reject);
      req.end();
    });
}

/** HTTP/2 requests on one session, closed in teardown. */
function http2Client(t: ExecutionContext, authority: string, ca?: Buffer): Client {
  const session = http2.connect(authority, ca ? { ca } : {});
  t.teardown(() => session.close());
  return (urlPath, headers = {}) =>
    new Promise((resolve, reject) => {
      const stream = session.request({ ':path': urlPath, ...headers });
      let received: http2.IncomingHttpHeaders = {};
      stream.on('response', (h) => (received = h));
      collect(stream, (body) => resolve({ status: Number(received[':status']), headers: received, body }), reject);
      stream.end();
    });
}

const transports: Record<string, Transport> = {
  'HTTP/1.1 over TLS (an HTTP/2 server with allowHTTP1)': {
    host: '127.0.0.1',
    needsTls: true,
    async listen(t, listener) {
      const server = http2.createSecureServer({ ...pair!, allowHTTP1: true }, listener as never);
      return http1Client(await listening(t, server as never), { ca: pair!.cert });
    },
  },
  'HTTP/2 over TLS': {
    host: '127.0.0.1',
    needsTls: true,
    async listen(t, listener) {
      const server = http2.createSecureServer({ ...pair!, allowHTTP1: true }, listener as never);
      const port = await listening(t, server as never);
      return http2Client(t, `https://127.0.0.1:${port}`, pair!.cert);
    },
  },
  'HTTP/2 in cleartext (h2c)': {
    host: '127.0.0.1',
    async listen(t, listener) {
      const server = http2.createServer(listener as never);
      const port = await listening(t, server as never);
      return http2Client(t, `http://127.0.0.1:${port}`);
    },
  },
  'HTTP/1.1 behind a TLS proxy (app.proxy, X-Forwarded-*)': {
    host: 'www.example.com',
    proxy: true,
    headers: { 'x-forwarded-proto': 'https', 'x-forwarded-host': 'www.example.com', 'x-forwarded-for': '203.0.113.7' },
    async listen(t, listener) {
      return http1Client(await listening(t, http.createServer(listener)));
    },
  },
};

/** Everything Koa tells the action about the request, as the page's own links and text. */
function page(ctx: Koa.Context): string {
  return [
    '<!doctype html>',
    `<script src="${ctx.protocol}://${ctx.host}/app.js"></script>`,
    `<link rel="canonical" href="${ctx.href}">`,
    `<p>protocol=${ctx.protocol} secure=${String(ctx.secure)} host=${ctx.host} hostname=${ctx.hostname}</p>`,
    `<p>ip=${ctx.ip} ips=${ctx.ips.join(',')} remote=${String(ctx.req.socket.remoteAddress)}</p>`,
    `<p>http=${ctx.req.httpVersion} major=${String(ctx.req.httpVersionMajor)} tenant=${ctx.get('x-tenant')}</p>`,
  ].join('\n');
}

async function until(condition: () => boolean, what: string): Promise<void> {
  const deadline = Date.now() + 15_000;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`gave up waiting until ${what}`);
    await sleep(10);
  }
}

for (const [name, transport] of Object.entries(transports)) {
  for (const hosts of [false, true]) {
    const title = `${name}${hosts ? ', with cacheHosts' : ''}: the stale refresh stores the page a visitor gets, once`;
    test(title, async (t) => {
      if (transport.needsTls && pair === undefined) {
        t.log('skipped: openssl is not installed (apt-get install openssl) to make a test certificate');
        t.pass();
        return;
      }
      const log = recordingLogger();
      const map = new Map<string, unknown>();
      const sets: string[] = [];
      const store = {
        get: (key: string) => map.get(key),
        set: (key: string, value: unknown) => {
          map.set(key, value);
          if (!key.startsWith('koa-buffer:probe:')) sets.push(key); // the start-up probe of a user store
        },
        delete: (key: string) => map.delete(key),
      };
      const app = new Koa();
      app.silent = true;
      app.proxy = transport.proxy === true;
      let builds = 0;
      app.use(
        buffer({
          cache: store,
          varyBy: [],
          optimiseContent: 0,
          cacheStaleWhileRevalidate: 60,
          logger: log,
          ...(hosts ? { cacheHosts: [transport.host] } : {}),
        }),
      );
      app.use(async (ctx) => {
        if (await ctx.bufferIsCached()) return;
        builds += 1;
        // The first build expires at once; the refresh's stays fresh for the rest of the test.
        ctx.set('Cache-Control', builds === 1 ? 's-maxage=1' : 's-maxage=600');
        ctx.type = 'html';
        ctx.body = page(ctx);
      });
      logOnFailure(t, () => log.lines.map((l) => `${l.level} ${l.message}`).join('\n'));
      const visit = await transport.listen(t, app.callback() as unknown as Listener);
      const visitor = { ...transport.headers, 'x-tenant': 'blue' };

      const first = await visit('/page?q=1', visitor);
      t.is(first.headers['x-cache'], 'MISS');
      t.regex(String(first.headers['cache-status']), /fwd=miss; stored/);
      t.notRegex(first.body, /host= |ip= |tenant=\n|undefined/, 'the page names the host, the client and the tenant');
      t.is(sets.length, 1);

      await sleep(1100); // the first entry's s-maxage=1 passes
      const stale = await visit('/page?q=1', { ...visitor, 'if-none-match': '"nothing"' });
      t.is(stale.headers['x-cache'], 'STALE');
      t.is(stale.body, first.body, 'the stale answer is the stored page');
      await until(() => sets.length === 2, 'the refresh stored its page');

      const [key] = sets;
      const refreshed = decodeEntry(map.get(key!));
      t.truthy(refreshed, 'the refreshed entry decodes');
      t.is(refreshed!.body.toString(), first.body, 'the refreshed page is the one a visitor gets');
      t.is(builds, 2, 'one refresh');

      for (let i = 0; i < 3; i++) {
        const hit = await visit('/page?q=1', visitor);
        t.is(hit.headers['x-cache'], 'HIT');
        t.is(hit.body, first.body);
      }
      t.is(builds, 2, 'the refreshed entry answers the hits: no build is run and discarded');
      t.deepEqual(sets, [key, key], 'the first build and one refresh were stored, under the visitor key');
      t.deepEqual(
        log.lines.filter((l) => l.level === 'error'),
        [],
      );
    });
  }
}
