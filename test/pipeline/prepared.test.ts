/**
 * Prepared hits (src/pipeline/replay/prepared-hits.ts): a cache hit the pipeline answered
 * before, for the very same inputs, is answered the same way without the
 * pipeline. These tests hold it to "the same way, byte for byte", and check
 * that anything that could change the pipeline's answer sends the hit
 * through the pipeline again.
 */
import test from 'ava';
import Koa, { type Context, type Next } from 'koa';
import { buffer } from '../../src/buffer.ts';
import { decode, htmlPage, rawRequest, recordingLogger, serve, type RawResponse } from '../helpers/serve.ts';

const page = htmlPage(20 * 1024, 11);

/** Everything a client sees, but the Date header, and Age and the ttl of Cache-Status, which move with the clock. */
function seen(response: RawResponse): unknown {
  const headers = response.rawHeaders
    .filter(([name]) => !/^(date|cache-status)$/i.test(name))
    .map(([name, value]) => (/^age$/i.test(name) ? 'age: N' : `${name.toLowerCase()}: ${value}`))
    .sort();
  return {
    status: response.status,
    headers,
    body: response.body.toString('base64'),
    cacheStatus: response.headers['cache-status']?.replace(/ttl=\d+/, 'ttl=N'),
  };
}

test('repeated hits get byte for byte what the pipeline answered the first time, for every Accept-Encoding', async (t) => {
  let runs = 0;
  const server = await serve(t, [
    // Fixed levels: with adaptive compression a hot upgrade finishing between two hits changes the bytes
    // on purpose (a loaded machine finished one mid-test); answers given again are what this test holds.
    buffer({ cache: true, optimiseContent: 1, adaptiveCompression: false }),
    async (ctx) => {
      if (await ctx.bufferIsCached()) return;
      runs++;
      ctx.set('X-Page', 'report');
      ctx.type = 'html';
      ctx.body = page;
    },
  ]);
  await server.request('/');
  for (const encodings of ['br', 'gzip', 'zstd', 'gzip;q=0.5, br;q=0.1', 'identity', '']) {
    const headers: Record<string, string> = encodings === '' ? {} : { 'accept-encoding': encodings };
    const first = await server.request('/', { headers });
    for (let i = 0; i < 3; i++)
      t.deepEqual(
        seen(await server.request('/', { headers })),
        seen(first),
        `${encodings || 'no Accept-Encoding'}: hit ${i + 2} is hit 1`,
      );
    t.is(first.headers['x-cache'], 'HIT');
    t.true(decode(first).length > 0);
  }
  const head = await rawRequest(server.port, '/', { method: 'HEAD', headers: { 'accept-encoding': 'br' } });
  const get = await server.request('/', { headers: { 'accept-encoding': 'br' } });
  t.is(head.headers['content-length'], get.headers['content-length'], 'HEAD gets the headers of the GET');
  t.is(head.body.length, 0);
  t.is(runs, 1);
});

test('an inner middleware that changes a replayed response on its way out sends it through the pipeline', async (t) => {
  let wrap = false;
  const layout = async (ctx: Context, next: Next): Promise<void> => {
    await next();
    if (wrap && Buffer.isBuffer(ctx.body)) ctx.body = `<!doctype html><main>${ctx.body.toString()}</main>`;
  };
  const server = await serve(t, [
    buffer({ cache: true }),
    layout,
    async (ctx) => {
      if (await ctx.bufferIsCached()) return;
      ctx.type = 'html';
      ctx.body = page;
    },
  ]);
  const headers = { 'accept-encoding': 'gzip' };
  await server.request('/', { headers });
  const plain = await server.request('/', { headers });
  await server.request('/', { headers });
  wrap = true;
  const wrapped = await server.request('/', { headers });
  t.is(decode(wrapped).toString(), `<!doctype html><main>${page}</main>`, 'the wrapped page, compressed afresh');
  t.not(wrapped.headers.etag, plain.headers.etag, 'with its own ETag');
  t.is(Number(wrapped.headers['content-length']), wrapped.body.length);
});

test('ctx.state.buffer set after a hit is honoured, prepared answer or not', async (t) => {
  let off = false;
  const server = await serve(t, [
    buffer({ cache: true }),
    async (ctx) => {
      const cached = await ctx.bufferIsCached();
      if (off) ctx.state.buffer = { compressContent: false };
      if (cached) return;
      ctx.type = 'html';
      ctx.body = page;
    },
  ]);
  const headers = { 'accept-encoding': 'br' };
  await server.request('/', { headers });
  await server.request('/', { headers });
  t.is((await server.request('/', { headers })).headers['content-encoding'], 'br');
  off = true;
  const plain = await server.request('/', { headers });
  t.is(plain.headers['content-encoding'], undefined, 'compressContent false for this response');
  t.is(plain.body.toString(), page);
});

test('a conditional request for a prepared hit still gets its 304, and an outer header is not remembered', async (t) => {
  let requestId = 0;
  const server = await serve(t, [
    async (ctx: Context, next: Next) => {
      ctx.set('X-Request-Id', String(++requestId));
      await next();
    },
    buffer({ cache: true }),
    async (ctx) => {
      if (await ctx.bufferIsCached()) return;
      ctx.type = 'html';
      ctx.body = page;
    },
  ]);
  const headers = { 'accept-encoding': 'br' };
  await server.request('/', { headers });
  const hit = await server.request('/', { headers });
  const again = await server.request('/', { headers });
  t.is(again.headers['x-request-id'], String(requestId), 'each request keeps its own header');
  const notModified = await server.request('/', { headers: { ...headers, 'if-none-match': hit.headers.etag! } });
  t.is(notModified.status, 304);
  t.is(notModified.headers.etag, hit.headers.etag);
  const modifiedSince = await server.request('/', { headers: { ...headers, 'if-none-match': '"other"' } });
  t.is(modifiedSince.status, 200);
});

test('a header an outer middleware sets per request does not keep a hit from its prepared answer, and stays its own', async (t) => {
  const logger = recordingLogger();
  let requestId = 0;
  const server = await serve(t, [
    async (ctx: Context, next: Next) => {
      ctx.set('X-Request-Id', String(++requestId));
      await next();
    },
    // Fixed levels: the hot upgrade of a hit (test/encoding/adaptive.test.ts) would change the answer after the first hits.
    buffer({ cache: true, logger, adaptiveCompression: false }),
    async (ctx) => {
      if (await ctx.bufferIsCached()) return;
      ctx.type = 'html';
      ctx.body = page;
    },
  ]);
  const headers = { 'accept-encoding': 'gzip' };
  await server.request('/', { headers }); // the build
  const first = await server.request('/', { headers }); // the first hit: through the pipeline, recorded
  const pipelineRuns = (): number => logger.count(/^coding gzip/);
  const before = pipelineRuns();
  const later = [];
  for (let i = 0; i < 3; i++) later.push(await server.request('/', { headers }));
  t.is(pipelineRuns(), before, 'later hits skip the pipeline');
  for (const [i, response] of later.entries()) {
    t.is(response.headers['x-request-id'], String(requestId - 2 + i));
    t.deepEqual(decode(response), decode(first));
    t.is(response.headers.etag, first.headers.etag);
  }
});

test('a Koa whose response keeps its body elsewhere gets prepared hits through its own body setter, byte for byte', async (t) => {
  // Koa 2 and 3 keep the body in response._body, which a prepared hit swaps directly; this app's
  // response keeps it in a field of its own, as another Koa might, so the swap must use the setter.
  const app = new Koa();
  const koaBody = Object.getOwnPropertyDescriptor(Object.getPrototypeOf(app.response), 'body')!;
  Object.defineProperty(app.response, 'body', {
    get(this: { kept?: unknown }) {
      return this.kept;
    },
    set(this: { kept?: unknown; _body?: unknown }, value: unknown) {
      koaBody.set!.call(this, value);
      this.kept = value;
      this._body = undefined;
    },
  });
  let runs = 0;
  app.use(buffer({ cache: true }));
  app.use(async (ctx) => {
    if (await ctx.bufferIsCached()) return;
    runs++;
    ctx.type = 'html';
    ctx.body = page;
  });
  const server = await serve(t, app);
  const headers = { 'accept-encoding': 'br' };
  await server.request('/', { headers });
  const first = await server.request('/', { headers });
  for (let i = 0; i < 3; i++)
    t.deepEqual(seen(await server.request('/', { headers })), seen(first), `hit ${i + 2} is hit 1`);
  t.is(decode(first).toString(), page);
  t.is(Number(first.headers['content-length']), first.body.length);
  t.is(runs, 1);
});

test('hits while their hot upgrade runs are answered the prepared way, and the first hit after it gets the smaller bytes', async (t) => {
  // A server too busy to finish an upgrade soon must not pay the whole pipeline on every hit meanwhile.
  const logger = recordingLogger();
  const big = htmlPage(1024 * 1024, 5); // br 11 takes about a second here: many hits fall inside it
  const server = await serve(t, [
    buffer({ cache: true, logger }),
    async (ctx) => {
      if (await ctx.bufferIsCached()) return;
      ctx.type = 'html';
      ctx.body = big;
    },
  ]);
  const headers = { 'accept-encoding': 'br' };
  await server.request('/', { headers }); // the build
  const pipelineRuns = (): number => logger.count(/^coding br/);
  const firstHit = await server.request('/', { headers }); // through the pipeline: cold bytes, the upgrade queued
  const coldTag = firstHit.headers.etag!;
  const runsAfterFirstHit = pipelineRuns();
  let coldHits = 0;
  let hot: RawResponse | undefined;
  // Within ava's timeout; a machine too loaded to upgrade in that time still shows the cold hits prepared.
  for (const started = Date.now(); Date.now() - started < 40_000 && hot === undefined;) {
    const response = await server.request('/', { headers });
    if (response.headers.etag === coldTag) coldHits++;
    else hot = response;
  }
  t.true(coldHits >= 1, `hits arrived while the upgrade ran (${coldHits})`);
  t.deepEqual(decode(await server.request('/', { headers })), decode(firstHit), 'the same page throughout');
  if (hot === undefined) {
    t.is(pipelineRuns(), runsAfterFirstHit, `${coldHits} cold hits were prepared (the upgrade is still running)`);
    return;
  }
  t.regex(String(hot.headers.etag), /-br11"$/);
  t.is(
    pipelineRuns(),
    runsAfterFirstHit + 1,
    `${coldHits} cold hits were prepared; only the first hot hit ran the pipeline`,
  );
  t.true(hot.body.length < firstHit.body.length, 'smaller bytes');
  t.deepEqual(decode(hot), decode(firstHit), 'the same page in smaller bytes');
});
