/**
 * Precedence: ctx.state.buffer, then the innermost bufferSection,
 * then the buffer() options, laid over each other one key deep; and the
 * pitfalls of these layers (the Perl original's COMMON PITFALLS that apply
 * to Koa), each as a test.
 */
import test from 'ava';
import Koa from 'koa';
import compose from 'koa-compose';
import koaCompress from 'koa-compress';
import { Readable } from 'node:stream';
import { buffer } from '../../src/buffer.ts';
import { bufferSection } from '../../src/config/section.ts';
import { decode, htmlPage, recordingLogger, serve } from '../helpers/serve.ts';

const page = htmlPage(4096, 21);
const all = { 'accept-encoding': 'gzip, br' };

/** A minimal koa-mount: runs `sub`'s middleware for paths under `prefix`, with the prefix stripped. */
function mount(prefix: string, sub: Koa): Koa.Middleware {
  const run = compose(sub.middleware);
  return async (ctx, next) => {
    if (ctx.path !== prefix && !ctx.path.startsWith(`${prefix}/`)) return next();
    const outside = ctx.path;
    ctx.path = ctx.path.slice(prefix.length) || '/';
    try {
      await run(ctx, async () => {
        ctx.path = outside;
        await next();
      });
    } finally {
      ctx.path = outside;
    }
  };
}

const render: Koa.Middleware = (ctx) => {
  const override = ctx.query.override;
  if (typeof override === 'string') ctx.state.buffer = JSON.parse(override);
  ctx.body = page;
};

function site(): Koa {
  const raw = new Koa();
  raw.use(bufferSection({ compressContent: false, optimiseContent: 0 }));
  raw.use(render);
  const docs = new Koa();
  docs.use(bufferSection({ optimiseContent: 1, trustLastModified: true }));
  docs.use(mount('/raw', raw));
  docs.use(render);
  const app = new Koa();
  app.use(buffer({ lastModified: 1_600_000_000 }));
  app.use(mount('/docs', docs));
  app.use(render);
  return app;
}

test('a mounted sub-app’s bufferSection applies beneath it, and the innermost one wins', async (t) => {
  const server = await serve(t, site());
  const outside = await server.request('/home', { headers: all });
  t.is(decode(outside).toString(), page, 'outside the section: not optimised (buffer() default)');
  t.is(outside.headers['content-encoding'], 'br');
  const docs = await server.request('/docs/intro', { headers: all });
  t.true(decode(docs).length < page.length, 'inside /docs: optimised');
  t.is(docs.headers['content-encoding'], 'br');
  const raw = await server.request('/docs/raw/file', { headers: all });
  t.is(raw.headers['content-encoding'], undefined, 'the inner section turns compression off');
  t.is(raw.body.toString(), page, 'and optimisation, overriding /docs');
  const later = new Date(1_700_000_000_000).toUTCString();
  t.is(
    (await server.request('/docs/raw/file', { headers: { 'if-modified-since': later } })).status,
    304,
    'a key the inner section does not declare comes from the outer one',
  );
  t.is(
    (await server.request('/home', { headers: { 'if-modified-since': later } })).status,
    200,
    'outside, trustLastModified is off',
  );
});

test('ctx.state.buffer overrides the innermost section', async (t) => {
  const server = await serve(t, site());
  const response = await server.request(`/docs/raw/file?override=${encodeURIComponent('{"compressContent":true}')}`, {
    headers: all,
  });
  t.is(response.headers['content-encoding'], 'br');
  const plain = await server.request(`/docs/intro?override=${encodeURIComponent('{"optimiseContent":0}')}`, {
    headers: all,
  });
  t.is(decode(plain).toString(), page, 'optimisation off for this response only');
});

test('pitfall: ctx.state.buffer undefined or null does not turn koa-buffer off; {} keeps it on and changes nothing', async (t) => {
  for (const value of ['undefined', 'null', '{}']) {
    const server = await serve(t, [
      buffer({ optimiseContent: 1 }),
      (ctx) => {
        ctx.state.buffer = value === 'undefined' ? undefined : JSON.parse(value);
        ctx.body = page;
      },
    ]);
    const response = await server.request('/', { headers: all });
    t.is(response.headers['content-encoding'], 'br', `${value}: still compressed`);
    t.true(decode(response).length < page.length, `${value}: still optimised`);
    t.truthy(response.headers.etag, `${value}: still tagged`);
  }
});

test('pitfall: ctx.state.buffer is merged one level deep, so a list replaces the option’s list', async (t) => {
  const server = await serve(t, [
    buffer({ encodings: ['br', 'gzip'] }),
    (ctx) => {
      if (ctx.path === '/br-only') ctx.state.buffer = { encodings: ['br'] };
      ctx.body = page;
    },
  ]);
  t.is(
    (await server.request('/other', { headers: { 'accept-encoding': 'gzip' } })).headers['content-encoding'],
    'gzip',
  );
  const only = await server.request('/br-only', { headers: { 'accept-encoding': 'gzip' } });
  t.is(
    only.headers['content-encoding'],
    undefined,
    'this response may only use br, so a gzip-only client gets identity',
  );
  t.is((await server.request('/br-only', { headers: { 'accept-encoding': 'br' } })).headers['content-encoding'], 'br');
});

test('pitfall: an undefined value inside ctx.state.buffer is a real value meaning off or none', async (t) => {
  const server = await serve(t, [
    buffer({ optimiseContent: 1, lastModified: 1_600_000_000 }),
    (ctx) => {
      ctx.state.buffer = { [ctx.path.slice(1)]: undefined };
      ctx.body = page;
    },
  ]);
  t.is(
    (await server.request('/compressContent', { headers: all })).headers['content-encoding'],
    undefined,
    'compressContent: undefined turns compression off',
  );
  t.is(
    decode(await server.request('/optimiseContent', { headers: all })).toString(),
    page,
    'optimiseContent: undefined turns optimisation off',
  );
  t.is((await server.request('/generateEtag')).headers.etag, undefined, 'generateEtag: undefined, no ETag');
  t.is((await server.request('/lastModified')).headers['last-modified'], undefined, 'lastModified: undefined, none');
  t.is(
    (await server.request('/encodings', { headers: all })).headers['content-encoding'],
    undefined,
    'encodings: undefined, no coding',
  );
  t.is(
    (await server.request('/compressibleTypes', { headers: all })).headers['content-encoding'],
    undefined,
    'compressibleTypes: undefined, nothing is compressible',
  );
  t.is(
    (await server.request('/minCompressSize', { headers: all })).headers['content-encoding'],
    'br',
    'minCompressSize: undefined, no minimum',
  );
});

test('pitfall: in a bufferSection undefined means not declared, so the buffer() option stays', async (t) => {
  const server = await serve(t, [
    buffer({ optimiseContent: 1 }),
    bufferSection({ optimiseContent: 0 }),
    bufferSection({ optimiseContent: undefined, compressContent: undefined }),
    render,
  ]);
  const response = await server.request('/', { headers: all });
  t.is(decode(response).toString(), page, 'the outer section’s 0 still holds');
  t.is(response.headers['content-encoding'], 'br', 'compressContent keeps the buffer() default');
});

test('pitfall: in buffer() options undefined means off for flags and none for lastModified', async (t) => {
  const server = await serve(t, [
    buffer({
      compressContent: undefined,
      generateEtag: undefined,
      lastModified: undefined,
      optimiseContent: undefined,
    }),
    render,
  ]);
  const response = await server.request('/', { headers: all });
  t.is(response.headers['content-encoding'], undefined);
  t.is(response.headers.etag, undefined);
  t.is(response.headers['last-modified'], undefined);
  t.is(response.body.toString(), page);
});

test('pitfall: in messages undefined does not restore the built-in text: the key shows', async (t) => {
  const logger = recordingLogger();
  const server = await serve(t, [
    buffer({ logger, messages: { log_skipped: undefined } }),
    (ctx) => {
      ctx.body = '';
    },
  ]);
  await server.request('/');
  t.deepEqual(
    logger.lines.map((l) => l.message),
    ['log_skipped'],
  );
});

test('pitfall: a compressor mounted inside buffer() compresses first, and koa-buffer then leaves the response alone', async (t) => {
  const logger = recordingLogger();
  const server = await serve(t, [buffer({ logger, optimiseContent: 1 }), koaCompress({ threshold: 0 }), render]);
  const response = await server.request('/', { headers: { 'accept-encoding': 'gzip' } });
  t.is(response.headers['content-encoding'], 'gzip');
  t.is(decode(response).toString(), page, 'compressed once, and not optimised');
  t.is(response.headers.etag, undefined, 'no ETag');
  t.true(logger.count(/left alone: (Content-Encoding already set|stream body)/) === 1);
});

test('pitfall: a streamed response is not buffered', async (t) => {
  const server = await serve(t, [
    buffer(),
    (ctx) => {
      ctx.type = 'text/plain';
      ctx.body = Readable.from(['a', 'b', 'c']);
    },
  ]);
  const response = await server.request('/', { headers: all });
  t.is(response.headers['transfer-encoding'], 'chunked');
  t.truthy(response.headers['content-encoding'], 'compressed as a stream');
  t.is(decode(response).toString(), 'abc');
});

test('pitfall: ctx.state.buffer is read once every inner middleware has finished, so a late setting counts', async (t) => {
  const server = await serve(t, [
    buffer(),
    async (ctx, next) => {
      await next();
      if (ctx.path === '/late') ctx.state.buffer = 0; // after the action, but before buffer() reworks the response
    },
    render,
  ]);
  t.is((await server.request('/late', { headers: all })).headers['content-encoding'], undefined);
  t.is((await server.request('/early', { headers: all })).headers['content-encoding'], 'br');
});

test('an outer buffer() handles the request alone; an inner one passes it through', async (t) => {
  const logger = recordingLogger();
  const server = await serve(t, [buffer({ logger }), buffer({ logger, optimiseContent: 1 }), render]);
  const response = await server.request('/', { headers: all });
  t.is(decode(response).toString(), page, 'the inner instance did not optimise');
  t.is(logger.count(/^compressed /), 1, 'compressed once');
});
