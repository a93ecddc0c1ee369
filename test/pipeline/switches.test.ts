/**
 * The switches an application sets for koa-compress, honoured by koa-buffer:
 * `ctx.compress`, `Cache-Control: no-transform`, compressibleTypes as
 * wildcards, RegExps and predicates, the mime-db defaults, size strings for
 * minCompressSize, and deflate as a coding.
 */
import zlib from 'node:zlib';
import test from 'ava';
import type Koa from 'koa';
import { buffer } from '../../src/buffer.ts';
import { BufferOptionError } from '../../src/base/errors.ts';
import type { BufferOptions } from '../../src/config/options.ts';
import { decode, htmlPage, serve } from '../helpers/serve.ts';

const page = htmlPage(4096, 5);
const text = 'koa-buffer '.repeat(400);

/** A server whose action sends `body` as `type`, after `before` has run on the context. */
async function typed(
  t: Parameters<typeof serve>[0],
  options: BufferOptions,
  type: string,
  body: string | Buffer = text,
  before: (ctx: Koa.Context) => void = () => {},
) {
  return serve(t, [
    buffer(options),
    (ctx) => {
      before(ctx);
      ctx.type = type;
      ctx.body = body;
    },
  ]);
}

const gzip = { headers: { 'accept-encoding': 'gzip' } };

test('ctx.compress = false sends the body uncompressed, with its ETag', async (t) => {
  const server = await typed(t, {}, 'text/plain', text, (ctx) => {
    ctx.compress = false;
  });
  const response = await server.request('/', gzip);
  t.is(response.headers['content-encoding'], undefined);
  t.is(response.body.toString(), text);
  t.regex(response.headers.etag ?? '', /^"[0-9a-f]{32}"$/);
});

test('ctx.compress = true compresses a type outside compressibleTypes', async (t) => {
  const server = await typed(t, {}, 'image/png', Buffer.from(text), (ctx) => {
    ctx.compress = true;
  });
  const response = await server.request('/', gzip);
  t.is(response.headers['content-encoding'], 'gzip');
  t.is(decode(response).toString(), text);
  const plain = await typed(t, {}, 'image/png', Buffer.from(text));
  t.is((await plain.request('/', gzip)).headers['content-encoding'], undefined, 'not without the switch');
});

for (const cacheControl of ['no-transform', 'public, No-Transform, max-age=60']) {
  test(`Cache-Control: ${cacheControl} is neither squashed nor compressed`, async (t) => {
    const server = await typed(t, { optimiseContent: 1 }, 'text/html', page, (ctx) => {
      ctx.set('Cache-Control', cacheControl);
    });
    const response = await server.request('/', gzip);
    t.is(response.headers['content-encoding'], undefined);
    t.is(response.body.toString(), page, 'byte for byte as the action made it');
  });
}

test('compressibleTypes takes wildcards: text/* and */*+json', async (t) => {
  const options = { compressibleTypes: ['text/*', '*/*+json'] };
  for (const [type, compressed] of [
    ['text/css', true],
    ['application/ld+json', true],
    ['application/json', false],
    ['image/svg+xml', false],
  ] as const) {
    const server = await typed(t, options, type);
    const response = await server.request('/', gzip);
    t.is(response.headers['content-encoding'], compressed ? 'gzip' : undefined, type);
  }
});

test('compressibleTypes takes a predicate, alone or in a list with RegExps', async (t) => {
  const seen: string[] = [];
  const alone = await typed(
    t,
    {
      compressibleTypes: (type) => {
        seen.push(type);
        return type.startsWith('application/vnd.');
      },
    },
    'application/vnd.custom; charset=utf-8',
  );
  t.is((await alone.request('/', gzip)).headers['content-encoding'], 'gzip');
  t.deepEqual(seen, ['application/vnd.custom'], 'called with the bare, lowercased type');
  const listed = await typed(t, { compressibleTypes: [/^font\//, (type) => type === 'x/y'] }, 'x/y');
  t.is((await listed.request('/', gzip)).headers['content-encoding'], 'gzip');
  const throwing = await typed(
    t,
    {
      compressibleTypes: () => {
        throw new Error('bad predicate');
      },
    },
    'text/plain',
  );
  const response = await throwing.request('/', gzip);
  t.is(response.status, 200, 'a predicate that throws counts as no');
  t.is(response.headers['content-encoding'], undefined);
});

test('the default compressible types come from mime-db, with server-sent events', async (t) => {
  const expected: Array<[string, boolean]> = [
    ['application/wasm', true],
    ['font/ttf', true],
    ['font/otf', true],
    ['image/x-icon', true],
    ['image/vnd.microsoft.icon', true],
    ['text/css', true],
    ['application/manifest+json', true],
    ['image/svg+xml', true],
    ['image/png', false],
    ['application/zip', false],
    ['application/octet-stream', false],
    ['text/event-stream', true],
  ];
  const server = await serve(t, [
    buffer(),
    (ctx) => {
      ctx.type = ctx.query.type as string;
      ctx.body = text;
    },
  ]);
  for (const [type, compressed] of expected) {
    const response = await server.request(`/?type=${encodeURIComponent(type)}`, gzip);
    t.is(response.headers['content-encoding'], compressed ? 'gzip' : undefined, type);
  }
});

test("minCompressSize takes a size string: '1kb' is 1024 bytes", async (t) => {
  const server = await serve(t, [
    buffer({ minCompressSize: '1kb' }),
    (ctx) => {
      ctx.type = 'text/plain';
      ctx.body = 'a'.repeat(Number(ctx.query.n));
    },
  ]);
  t.is((await server.request('/?n=1023', gzip)).headers['content-encoding'], undefined);
  t.is((await server.request('/?n=1024', gzip)).headers['content-encoding'], 'gzip');
});

test('deflate is a coding: last in the default preference, with its own ETag suffix', async (t) => {
  const server = await typed(t, {}, 'text/plain');
  const response = await server.request('/', { headers: { 'accept-encoding': 'deflate' } });
  t.is(response.headers['content-encoding'], 'deflate');
  t.is(zlib.inflateSync(response.body).toString(), text, 'zlib-wrapped deflate (RFC 9110 8.4.1.2)');
  t.regex(response.headers.etag ?? '', /^"[0-9a-f]{32}-deflate"$/);
  const both = await server.request('/', { headers: { 'accept-encoding': 'deflate, gzip' } });
  t.is(both.headers['content-encoding'], 'gzip', 'gzip before deflate');
  const again = await server.request('/', {
    headers: { 'accept-encoding': 'deflate', 'if-none-match': response.headers.etag! },
  });
  t.is(again.status, 304);
});

test('bad values of the new forms are BufferOptionErrors with their keys', (t) => {
  for (const [options, key] of [
    [{ minCompressSize: '1 lot' }, 'option_min_compress_size'],
    [{ minCompressSize: Number.NaN }, 'option_min_compress_size'],
    [{ compressibleTypes: ['text/*', 7] }, 'option_compressible_types'],
    [{ compressibleTypes: undefined }, 'option_compressible_types'],
    [{ excludedTypes: () => true }, 'option_excluded_types'],
    [{ compressionLevels: { deflate: 10 } }, 'option_compression_levels'],
  ] as const) {
    const error = t.throws(() => buffer(options as unknown as BufferOptions), { instanceOf: BufferOptionError });
    t.is(error?.key, key, JSON.stringify(options));
  }
});
