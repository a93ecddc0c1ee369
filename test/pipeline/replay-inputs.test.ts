/**
 * The one rule for answering again (src/pipeline/replay/inputs.ts) names
 * every input the pipeline reads. These tests record what the pipeline
 * actually reads, from the moment the action is done to the moment
 * buffer() returns, over requests that take every path (memo answers,
 * prepared hits, misses, 304s, HEAD, streams, dictionaries, a proxy, the
 * switches an app sets), and fail on any request header, context field or
 * response header the rule does not name. A new read in a step must be
 * named there, and accounted for, before it can leak an earlier answer.
 */
import { createReadStream, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import type { Context, Middleware } from 'koa';
import Koa from 'koa';
import { buffer } from '../../src/buffer.ts';
import { contextInputs, requestHeaderInputs, responseHeaderInputs } from '../../src/pipeline/replay/inputs.ts';
import { htmlPage, serve } from '../helpers/serve.ts';

/** What was read while the pipeline ran. */
interface Reads {
  request: Set<string>;
  context: Set<string>;
  response: Set<string>;
}

/**
 * Middleware that record the reads of the pipeline: `outer` goes before
 * buffer(), `start` after it, right before the action. Reads of functions
 * (methods) are not inputs and are left out.
 */
function recorder(): { reads: Reads; outer: Middleware; start: Middleware } {
  const reads: Reads = { request: new Set(), context: new Set(), response: new Set() };
  let on = false;
  const note = (set: Set<string>, name: string | symbol, value: unknown): void => {
    if (on && typeof name === 'string' && typeof value !== 'function') set.add(name);
  };
  const outer: Middleware = async (ctx, next) => {
    const headers = ctx.req.headers;
    ctx.req.headers = new Proxy(headers, {
      get(target, name, receiver) {
        const value: unknown = Reflect.get(target, name, receiver);
        note(reads.request, name, value);
        return value;
      },
    });
    // Fields of the context reached through its prototype (Koa's delegates, ctx.compress, ctx.respond).
    const proto = Object.getPrototypeOf(ctx) as object;
    Object.setPrototypeOf(
      ctx,
      new Proxy(proto, {
        get(target, name, receiver) {
          const value: unknown = Reflect.get(target, name, receiver);
          note(reads.context, name, value);
          return value;
        },
      }),
    );
    for (const part of ['request', 'response'] as const) {
      const real = ctx[part];
      (ctx as unknown as Record<string, unknown>)[part] = new Proxy(real, {
        get(target, name, receiver) {
          const value: unknown = Reflect.get(target, name, receiver);
          note(reads.context, name, value);
          return value;
        },
        set: (target, name, value) => Reflect.set(target, name, value, target),
      });
    }
    const res = ctx.res;
    const getHeader = res.getHeader.bind(res);
    const hasHeader = res.hasHeader.bind(res);
    res.getHeader = (name: string) => (note(reads.response, name.toLowerCase(), undefined), getHeader(name));
    res.hasHeader = (name: string) => (note(reads.response, name.toLowerCase(), undefined), hasHeader(name));
    try {
      await next();
    } finally {
      on = false;
    }
  };
  const start: Middleware = async (_ctx, next) => {
    await next();
    on = true;
  };
  return { reads, outer, start };
}

/** The names in `read` that the rule does not name. */
function unnamed(read: Set<string>, named: Iterable<string>): string[] {
  const known = new Set(named);
  return [...read].filter((name) => !known.has(name)).sort();
}

/**
 * Context fields that are how the pipeline reaches the parts above, or that
 * Koa's own getters and setters read (`_body` behind ctx.body, `headerSent`
 * in ctx.set and ctx.remove): not inputs.
 */
const plumbing = [
  'request',
  'response',
  'res',
  'req',
  'app',
  'state',
  'headers',
  'header',
  'socket',
  'ctx',
  '_body',
  'headerSent',
];

const page = htmlPage(4);

/** An app that takes every path: pages, JSON, a stream, a cached page, switches, a dictionary rule. */
function paths(dir: string): Middleware {
  return async (ctx: Context) => {
    if (ctx.path.startsWith('/cached') && (await ctx.bufferIsCached())) return;
    if (ctx.path === '/off') ctx.compress = false;
    if (ctx.path === '/forced') ctx.compress = true;
    if (ctx.path === '/json') return void (ctx.body = { page: page.slice(0, 500) });
    if (ctx.path === '/file') {
      ctx.type = 'text/css';
      return void (ctx.body = createReadStream(join(dir, 'style.css')));
    }
    if (ctx.path === '/etag') ctx.set('ETag', '"v1"');
    if (ctx.path === '/dated') ctx.set('Last-Modified', new Date(0).toUTCString());
    if (ctx.path === '/no-transform') ctx.set('Cache-Control', 'no-transform');
    ctx.type = 'html';
    ctx.body = page;
  };
}

const requests: Array<[string, Record<string, string>]> = [
  ['/page', { 'accept-encoding': 'br' }],
  ['/page', { 'accept-encoding': 'br' }], // a memo answer
  ['/page', { 'accept-encoding': 'gzip, deflate, br, zstd' }],
  ['/page', { 'accept-encoding': 'identity' }],
  ['/page', {}],
  ['/page', { 'accept-encoding': 'br', 'if-none-match': '*' }],
  ['/page', { 'accept-encoding': 'br', 'if-modified-since': new Date().toUTCString() }],
  ['/cached', { 'accept-encoding': 'br' }],
  ['/cached', { 'accept-encoding': 'br' }], // a hit
  ['/cached', { 'accept-encoding': 'br' }], // a prepared hit
  ['/cached', { 'accept-encoding': 'gzip', 'if-none-match': 'W/"x"' }],
  ['/off', { 'accept-encoding': 'br' }],
  ['/forced', { 'accept-encoding': 'br' }],
  ['/json', { 'accept-encoding': 'br' }],
  ['/file', { 'accept-encoding': 'br' }],
  ['/file', { 'accept-encoding': 'br', 'if-none-match': '*' }],
  ['/etag', { 'accept-encoding': 'br' }],
  ['/dated', { 'accept-encoding': 'br', 'if-modified-since': new Date().toUTCString() }],
  ['/no-transform', { 'accept-encoding': 'br' }],
  ['/articles/1', { 'accept-encoding': 'dcz, br', 'available-dictionary': `:${'A'.repeat(43)}=:` }],
  ['/articles/2', { 'accept-encoding': 'br', authorization: 'Bearer x' }],
  ['/page', { 'accept-encoding': 'br', 'x-forwarded-proto': 'https', 'x-forwarded-host': 'example.org' }],
];

async function record(t: import('ava').ExecutionContext, planted?: Middleware): Promise<Reads> {
  const dir = mkdtempSync(join(tmpdir(), 'kb-replay-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  writeFileSync(join(dir, 'style.css'), `body { color: red; }\n`.repeat(200));
  const { reads, outer, start } = recorder();
  const app = new Koa({ proxy: true });
  app.use(outer);
  app.use(buffer({ optimiseContent: 1, cache: true, varyBy: [], dictionaries: [{ match: '/articles/*' }] }));
  if (planted) app.use(planted);
  app.use(start);
  app.use(paths(dir));
  const server = await serve(t, app);
  for (const [path, headers] of requests) {
    for (const method of ['GET', 'HEAD'] as const) await server.request(path, { method, headers });
  }
  return reads;
}

test('every request header, context field and response header the pipeline reads is named by the rule', async (t) => {
  const reads = await record(t);
  t.true(reads.request.has('accept-encoding') && reads.response.has('etag'), 'the recorder saw the pipeline read');
  t.deepEqual(unnamed(reads.request, Object.keys(requestHeaderInputs)), [], 'request headers the rule does not name');
  t.deepEqual(
    unnamed(reads.context, [...Object.keys(contextInputs), ...plumbing]),
    [],
    'context fields the rule does not name',
  );
  t.deepEqual(
    // The tag header is taken off the response before the steps run (stored with the entry, never sent), and a
    // response offered as a dictionary is never recorded to be given again: neither is an input.
    unnamed(reads.response, [...responseHeaderInputs, 'use-as-dictionary', 'cache-tag']),
    [],
    'response headers the rule does not name',
  );
});

test('the recorder catches a read the rule does not name (planted)', async (t) => {
  const planted: Middleware = async (ctx, next) => {
    await next();
    void ctx.request.headers['x-planted'];
  };
  const reads = await record(t, planted);
  t.deepEqual(unnamed(reads.request, Object.keys(requestHeaderInputs)), ['x-planted']);
});

// A replayed entry is never optimised (it was when it was built): optimiseContent changes pages, not hits.
for (const [name, value, paths] of [
  ['generateEtag', false, ['/page', '/cached']],
  ['compressContent', false, ['/page', '/cached']],
  ['optimiseContent', 0, ['/page']],
  ['encodings', ['gzip'], ['/page', '/cached']],
] as const) {
  test(`a response whose ctx.state.buffer sets ${name} is never given an earlier answer`, async (t) => {
    const server = await serve(t, [
      // Fixed levels: a hot upgrade would change the bytes between the requests, whatever the rule.
      buffer({ optimiseContent: 1, cache: true, varyBy: [], adaptiveCompression: false }),
      async (ctx) => {
        const cached = ctx.path === '/cached' && (await ctx.bufferIsCached());
        if (ctx.get('x-set') !== '') ctx.state.buffer = { [name]: value };
        if (cached) return;
        ctx.type = 'html';
        ctx.body = page;
      },
    ]);
    for (const path of paths) {
      const headers = { 'accept-encoding': 'br' };
      // The same page twice, and a third time: a memo answer, or a prepared hit, are now known.
      await server.request(path, { headers });
      await server.request(path, { headers });
      const plain = await server.request(path, { headers });
      const changed = await server.request(path, { headers: { ...headers, 'x-set': '1' } });
      const differs =
        changed.headers.etag !== plain.headers.etag ||
        changed.headers['content-encoding'] !== plain.headers['content-encoding'] ||
        !changed.body.equals(plain.body);
      t.true(differs, `${path}: ${name} set for the response changed what was sent`);
    }
  });
}
