/**
 * A real Koa app on 127.0.0.1 port 0 and a raw `http.request` client that
 * returns the status, the raw header pairs and the raw body bytes exactly as
 * they came off the wire (no decompression, no header folding).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import zlib from 'node:zlib';
import type { ExecutionContext } from 'ava';
import Koa from 'koa';
import { createRequire } from 'node:module';

/** A response as received. */
export interface RawResponse {
  status: number;
  /** Lowercased header names to values; repeated headers joined with ', '. */
  headers: Record<string, string>;
  /** [name, value] pairs in wire order, names as sent. */
  rawHeaders: Array<[string, string]>;
  /** The body bytes as sent (compressed if they were). */
  body: Buffer;
}

/** A running server. */
export interface Served {
  port: number;
  /** Sends a request and collects the whole response. */
  request(path?: string, options?: { method?: string; headers?: Record<string, string> }): Promise<RawResponse>;
  close(): Promise<void>;
}

/**
 * Starts `app` (a Koa app, or a list of middleware to build one from) on
 * loopback port 0; the server is closed in `t.teardown`.
 */
export async function serve(t: ExecutionContext, app: Koa | Koa.Middleware[]): Promise<Served> {
  let koa: Koa;
  if (Array.isArray(app)) {
    koa = new Koa();
    for (const middleware of app) koa.use(middleware);
  } else {
    koa = app;
  }
  koa.silent = true;
  const server = http.createServer(koa.callback() as http.RequestListener); // Koa catches its own errors: its promise never rejects
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  const close = (): Promise<void> =>
    new Promise((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  t.teardown(close);
  return { port, request: (path = '/', options = {}) => rawRequest(port, path, options), close };
}

/** One request over a fresh connection, with exactly the headers given (plus Host). */
export function rawRequest(
  port: number,
  path: string,
  options: { method?: string; headers?: Record<string, string> } = {},
): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: '127.0.0.1', port, path, method: options.method ?? 'GET', headers: options.headers ?? {}, agent: false },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('error', reject);
        res.on('end', () => {
          const rawHeaders: Array<[string, string]> = [];
          for (let i = 0; i < res.rawHeaders.length; i += 2)
            rawHeaders.push([res.rawHeaders[i]!, res.rawHeaders[i + 1]!]);
          const headers: Record<string, string> = {};
          for (const [name, value] of rawHeaders) {
            const lower = name.toLowerCase();
            headers[lower] = lower in headers ? `${headers[lower]}, ${value}` : value;
          }
          resolve({ status: res.statusCode!, headers, rawHeaders, body: Buffer.concat(chunks) });
        });
      },
    );
    req.on('error', reject);
    req.end();
  });
}

const require = createRequire(import.meta.url);

/** Decodes a body by its Content-Encoding (br, gzip, deflate, zstd, or none). */
export function decode(response: RawResponse): Buffer {
  switch (response.headers['content-encoding']) {
    case undefined:
      return response.body;
    case 'br':
      return zlib.brotliDecompressSync(response.body);
    case 'gzip':
      return zlib.gunzipSync(response.body);
    case 'deflate':
      return zlib.inflateSync(response.body);
    case 'zstd':
      return (require('zstd-napi') as typeof import('zstd-napi')).decompress(response.body);
    default:
      throw new Error(`unexpected Content-Encoding ${response.headers['content-encoding']}`);
  }
}

/** A logger that keeps every line, for asserting on the pipeline's decisions. */
export function recordingLogger(): {
  lines: Array<{ level: string; message: string }>;
  debug(m: string): void;
  info(m: string): void;
  warn(m: string): void;
  error(m: string): void;
  count(pattern: RegExp): number;
} {
  const lines: Array<{ level: string; message: string }> = [];
  return {
    lines,
    debug: (message) => lines.push({ level: 'debug', message }),
    info: (message) => lines.push({ level: 'info', message }),
    warn: (message) => lines.push({ level: 'warn', message }),
    error: (message) => lines.push({ level: 'error', message }),
    count: (pattern) => lines.filter((l) => pattern.test(l.message)).length,
  };
}

/**
 * Resolves once `logger` has a line matching `pattern`: for work made off the
 * request path (an upgrade), which a loaded machine can make take any time.
 * A line that never comes fails the test at ava's timeout.
 */
export async function untilLogged(logger: { count(pattern: RegExp): number }, pattern: RegExp): Promise<void> {
  while (logger.count(pattern) === 0) await new Promise((resolve) => setTimeout(resolve, 20));
}

export { htmlPage } from '../../support/pages.ts';
