/**
 * Load (issue 7): autocannon over loopback, 100 connections, against a real
 * 2-worker node:cluster host (test/fixtures/load-cluster.ts) sharing a
 * SQLite cache and a FileLock directory. The mix: cache hits, misses
 * (a fresh query string each), 304s (If-None-Match), a big page (over
 * 1 MiB) and small ones, JSON, and br, gzip, zstd and identity.
 *
 * Every response body is checked against the bytes it must hold, decoded
 * by its Content-Encoding: autocannon's `setupClient` hook keeps each body's
 * raw chunks (autocannon itself turns them into a string, which would mangle
 * compressed bytes), and `onResponse` compares them. Bytes already proven
 * once for a request are recognised by comparison, so the test process
 * decodes only what is new and keeps up with the load.
 *
 * Runs 5 s by default, 30 s when CI is set; KB_LOAD_SECONDS overrides both.
 */
import { createRequire } from 'node:module';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import zlib from 'node:zlib';
import test, { type ExecutionContext } from 'ava';
import { squashHtml } from '../../src/native/exports.ts';
import { logOnFailure } from '../helpers/log-on-failure.ts';
import { fixture, spawnChild, type LineChild } from '../helpers/children.ts';
import { rawRequest } from '../helpers/serve.ts';
import { bigPage, items, paths, smallPage } from '../fixtures/load-pages.ts';

const require = createRequire(import.meta.url);
const zstd = require('zstd-napi') as typeof import('zstd-napi');

// --- the part of autocannon's API this test uses (the package ships no types) ---

type Headers = Record<string, string | string[]>;
interface CannonRequest {
  method?: string;
  path?: string;
  headers?: Record<string, string>;
  setupRequest?: (request: CannonRequest, context: Record<string, unknown>) => CannonRequest;
  onResponse?: (status: number, body: string, context: Record<string, unknown>, headers: Headers) => void;
}
interface PendingResponse {
  chunks?: Buffer[];
}
interface CannonClient {
  pipelinedRequests: {
    peek(): PendingResponse | undefined;
    addBody(data: Buffer): void;
    terminateRequest(): PendingResponse | undefined;
  };
}
interface CannonResult {
  requests: { average: number; total: number };
  latency: { p50: number; p99: number; max: number };
  throughput: { average: number };
  errors: number;
  timeouts: number;
  statusCodeStats: Record<string, { count: number }>;
}
type Autocannon = (options: Record<string, unknown>) => Promise<CannonResult> & { stop?: () => void };
const autocannon = require('autocannon') as Autocannon;

// --- settings -----------------------------------------------------------------

const seconds = Number(process.env.KB_LOAD_SECONDS) || (process.env.CI ? 30 : 5);
const connections = 100;
/** Open descriptors a worker may gain over the run: a few for SQLite and libuv housekeeping, not one per request or key. */
const fdSlack = 8;
/** How much a worker's RSS may still rise in the last third of the run, above its peak before it. */
const rssSettleBound = 48 * 1024 * 1024;

type Coding = 'br' | 'gzip' | 'zstd' | 'identity';
const codings: Coding[] = ['br', 'gzip', 'zstd', 'identity'];

function decodeBody(bytes: Buffer, encoding: string | undefined): Buffer {
  switch (encoding) {
    case undefined:
      return bytes;
    case 'br':
      return zlib.brotliDecompressSync(bytes);
    case 'gzip':
      return zlib.gunzipSync(bytes);
    case 'zstd':
      return zstd.decompress(bytes);
    default:
      throw new Error(`unexpected Content-Encoding ${encoding}`);
  }
}

function headerOf(headers: Headers, name: string): string | undefined {
  for (const [key, value] of Object.entries(headers)) {
    if (key.toLowerCase() === name) return Array.isArray(value) ? value.join(', ') : value;
  }
  return undefined;
}

// --- the workers' processes -----------------------------------------------------

function fdCount(pid: number): number {
  return readdirSync(`/proc/${pid}/fd`).length;
}

function rssBytes(pid: number): number {
  const match = /^VmRSS:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  if (!match) throw new Error(`no VmRSS for ${pid}`);
  return Number(match[1]) * 1024;
}

const mib = (bytes: number): string => `${(bytes / 1024 / 1024).toFixed(1)} MiB`;

interface Host {
  child: LineChild;
  port: number;
  workers: number[];
  dir: string;
}

async function startHost(t: ExecutionContext): Promise<Host> {
  const dir = mkdtempSync(join(tmpdir(), 'kb-load-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  // Its own process group, so the workers go with the primary in teardown.
  const child = spawnChild(t, fixture('load-cluster.ts'), [JSON.stringify({ dir })], {
    group: true,
    lineTimeoutMs: 30_000,
  });
  const ready = await child.waitForJson<{ port?: number; workers?: number[] }>(
    (m) => typeof m.port === 'number',
    'both workers to listen',
  );
  return { child, port: ready.port!, workers: ready.workers!, dir };
}

// --- what each request must receive ----------------------------------------------

/** One kind of request in the mix. */
interface Route {
  name: string;
  path: string;
  coding: Coding;
  /** Sent as If-None-Match: the answer must be a 304 with no body. */
  etag?: string;
}

/** Bytes proven right, per route, so a repeat is checked by comparison instead of decoding. */
class Verifier {
  readonly problems: string[] = [];
  mismatches = 0;
  checked = 0;
  readonly statuses = new Map<string, number>();
  readonly #proven = new Map<string, Buffer[]>();

  constructor(private readonly port: number) {}

  /** The entity a page must decode to. */
  entity(path: string, query = ''): Buffer {
    const host = `127.0.0.1:${this.port}`;
    if (path === paths.json) return Buffer.from(JSON.stringify(items));
    const page = path === paths.big ? bigPage : smallPage(query);
    return squashHtml(Buffer.from(page), { level: 1, rewriteLinks: true, host, path });
  }

  check(route: Route, status: number, raw: Buffer, headers: Headers, query?: string): void {
    this.checked++;
    const tally = `${route.name} ${status}`;
    this.statuses.set(tally, (this.statuses.get(tally) ?? 0) + 1);
    const problem = this.#problem(route, status, raw, headers, query);
    if (problem === undefined) return;
    this.mismatches++;
    if (this.problems.length < 10) this.problems.push(`${route.name}${query ? `?${query}` : ''}: ${problem}`);
  }

  #problem(route: Route, status: number, raw: Buffer, headers: Headers, query?: string): string | undefined {
    const encoding = headerOf(headers, 'content-encoding');
    if (route.etag !== undefined) {
      if (status !== 304) return `status ${status}, asked for a 304`;
      return raw.length === 0 ? undefined : `a 304 with ${raw.length} body bytes`;
    }
    if (status !== 200) return `status ${status}`;
    const wanted = route.coding === 'identity' ? undefined : route.coding;
    if (encoding !== wanted) return `Content-Encoding ${encoding}, asked for ${route.coding}`;
    const length = Number(headerOf(headers, 'content-length'));
    if (length !== raw.length) return `Content-Length ${length} for ${raw.length} bytes`;
    const key = query === undefined ? route.name : `${route.name}?${query}`;
    const proven = this.#proven.get(key);
    if (proven?.some((bytes) => bytes.equals(raw))) return undefined;
    let decoded: Buffer;
    try {
      decoded = decodeBody(raw, encoding);
    } catch (error) {
      return `does not decode: ${(error as Error).message}`;
    }
    if (!decoded.equals(this.entity(route.path, query ?? '')))
      return `${decoded.length} bytes that differ from the page`;
    // Misses are unique: remembering them would only fill memory.
    if (query === undefined && (proven?.length ?? 0) < 4) this.#proven.set(key, [...(proven ?? []), raw]);
    return undefined;
  }
}

// --- the test --------------------------------------------------------------------

test('a 2-worker cluster with a SQLite cache and cacheLockDir under 100 connections: every answer is the one asked for, byte for byte; descriptors, lock files and RSS stay bounded', async (t) => {
  t.timeout((seconds + 60) * 1000, 'the load run and its checks');
  const host = await startHost(t);
  const { port, workers } = host;
  const verifier = new Verifier(port);

  // Warm up: every page in every coding once per worker (round robin spreads them), and learn the ETags for the 304s.
  const etags = new Map<string, string>();
  for (let round = 0; round < 2; round++) {
    for (const path of Object.values(paths)) {
      for (const coding of codings) {
        const response = await rawRequest(port, path, { headers: { 'accept-encoding': coding } });
        const route: Route = { name: `warm ${path} ${coding}`, path, coding };
        verifier.check(route, response.status, response.body, response.headers);
        etags.set(`${path} ${coding}`, response.headers.etag!);
      }
    }
  }
  t.deepEqual(verifier.problems, [], 'the warm-up answers are right');
  // Let the warm-up connections close before counting descriptors.
  await new Promise((resolve) => setTimeout(resolve, 300));
  const fdsBefore = workers.map(fdCount);

  const routes: Route[] = [
    { name: 'small br', path: paths.small, coding: 'br' },
    { name: 'big zstd', path: paths.big, coding: 'zstd' },
    { name: 'json gzip', path: paths.json, coding: 'gzip' },
    { name: 'miss br', path: paths.small, coding: 'br' },
    { name: 'small gzip', path: paths.small, coding: 'gzip' },
    { name: 'big 304 gzip', path: paths.big, coding: 'gzip', etag: etags.get(`${paths.big} gzip`)! },
    { name: 'small zstd', path: paths.small, coding: 'zstd' },
    { name: 'json identity', path: paths.json, coding: 'identity' },
    { name: 'big br', path: paths.big, coding: 'br' },
    { name: 'miss gzip', path: paths.small, coding: 'gzip' },
    { name: 'small 304 br', path: paths.small, coding: 'br', etag: etags.get(`${paths.small} br`)! },
    { name: 'small identity', path: paths.small, coding: 'identity' },
    { name: 'big identity', path: paths.big, coding: 'identity' },
    { name: 'json 304 zstd', path: paths.json, coding: 'zstd', etag: etags.get(`${paths.json} zstd`)! },
  ];
  // One request definition that takes the next route of the mix from a counter shared by every connection,
  // so the mix is the same however few requests each connection gets through.
  let misses = 0;
  let turn = 0;
  const request: CannonRequest = {
    method: 'GET',
    setupRequest: (base: CannonRequest, context: Record<string, unknown>) => {
      const route = routes[turn++ % routes.length]!;
      const headers: Record<string, string> = { 'accept-encoding': route.coding };
      if (route.etag !== undefined) headers['if-none-match'] = route.etag;
      const query = route.name.startsWith('miss') ? `u=${++misses}` : undefined;
      context.route = route;
      context.query = query;
      return { ...base, path: query === undefined ? route.path : `${route.path}?${query}`, headers };
    },
    onResponse: (status: number, _body: string, context: Record<string, unknown>, responseHeaders: Headers) => {
      verifier.check(
        context.route as Route,
        status,
        Buffer.concat(lastChunks ?? []),
        responseHeaders,
        context.query as string | undefined,
      );
    },
  };

  // The raw chunks of the response autocannon has just completed (onResponse runs synchronously after terminateRequest).
  let lastChunks: Buffer[] | undefined;
  const setupClient = (client: CannonClient): void => {
    const queue = client.pipelinedRequests;
    const terminate = queue.terminateRequest.bind(queue);
    queue.addBody = (data: Buffer) => {
      const pending = queue.peek();
      if (pending) (pending.chunks ??= []).push(data);
    };
    queue.terminateRequest = () => {
      const done = terminate();
      lastChunks = done?.chunks;
      return done;
    };
  };

  const rss: Array<Array<[number, number]>> = workers.map(() => []);
  const started = performance.now();
  const sampler = setInterval(() => {
    const at = performance.now() - started;
    workers.forEach((pid, i) => rss[i]!.push([at, rssBytes(pid)]));
  }, 200);
  t.teardown(() => clearInterval(sampler));

  const result = await autocannon({
    url: `http://127.0.0.1:${port}`,
    connections,
    duration: seconds,
    requests: [request],
    setupClient,
    excludeErrorStats: false,
  });
  clearInterval(sampler);

  // Let autocannon's connections close on the server side.
  await new Promise((resolve) => setTimeout(resolve, 500));
  const fdsAfter = workers.map(fdCount);
  const lockFiles = readdirSync(join(host.dir, 'locks'));

  const summary = [
    `${seconds} s, ${connections} connections, 2 workers: ${Math.round(result.requests.average)} req/s average, ` +
      `p50 ${result.latency.p50} ms, p99 ${result.latency.p99} ms, max ${result.latency.max} ms, ${mib(result.throughput.average)}/s`,
    `${result.requests.total} responses, ${verifier.checked} bodies checked, ${verifier.mismatches} wrong, ${result.errors} errors, ${result.timeouts} timeouts, ${misses} misses`,
    `statuses: ${JSON.stringify(Object.fromEntries(Object.entries(result.statusCodeStats).map(([code, { count }]) => [code, count])))}`,
    ...workers.map((pid, i) => {
      const samples = rss[i]!.map(([, bytes]) => bytes);
      return `worker ${pid}: fds ${fdsBefore[i]} → ${fdsAfter[i]}, RSS ${mib(samples[0] ?? 0)} → peak ${mib(Math.max(...samples))}, end ${mib(samples.at(-1) ?? 0)}`;
    }),
    `lock files: ${lockFiles.length} for ${misses + Object.keys(paths).length} keys`,
  ];
  logOnFailure(t, summary.join('\n'));

  t.deepEqual(verifier.problems, [], 'every answer is the one asked for, byte for byte');
  t.is(verifier.mismatches, 0);
  t.is(result.errors, 0, 'no connection errors');
  t.is(result.timeouts, 0, 'no timeouts');
  t.true(
    verifier.checked >= result.requests.total,
    `every response was checked (${verifier.checked} of ${result.requests.total})`,
  );
  t.true(
    (verifier.statuses.get('miss br 200') ?? 0) > 0 && (verifier.statuses.get('small 304 br 304') ?? 0) > 0,
    'the mix held misses and 304s',
  );

  const logged = host.child.lines.filter((line) => /"log":|"exit":|"error":/.test(line));
  t.deepEqual(logged, [], 'no worker logged a warning or error, and none ended');

  workers.forEach((pid, i) => {
    t.true(
      fdsAfter[i]! <= fdsBefore[i]! + fdSlack,
      `worker ${pid}: ${fdsBefore[i]} descriptors before, ${fdsAfter[i]} after`,
    );
    // Settled: in the last third of the run RSS rises no more than the bound above its peak before it.
    const samples = rss[i]!;
    const cut = (seconds * 1000 * 2) / 3;
    const before = Math.max(...samples.filter(([at]) => at < cut).map(([, bytes]) => bytes));
    const last = Math.max(...samples.filter(([at]) => at >= cut).map(([, bytes]) => bytes));
    t.true(
      last - before <= rssSettleBound,
      `worker ${pid}: RSS rose ${mib(last - before)} in the last third (bound ${mib(rssSettleBound)})`,
    );
  });

  t.true(
    lockFiles.every((name) => /^[0-9a-f]{32}\.lock$/.test(name)),
    'only lock files in the lock directory',
  );
  t.true(
    lockFiles.length <= misses + Object.keys(paths).length,
    `at most one lock file per key: ${lockFiles.length} files, ${misses + 3} keys`,
  );

  // Still serving after the load.
  const after = await rawRequest(port, paths.small, { headers: { 'accept-encoding': 'br' } });
  verifier.check({ name: 'after', path: paths.small, coding: 'br' }, after.status, after.body, after.headers);
  t.is(verifier.mismatches, 0, 'a request after the run gets the page');
});
