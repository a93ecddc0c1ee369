/**
 * Content-coding negotiation over real HTTP (RFC 9110 12.5.3): q-values,
 * server preference on ties, `*`, identity;q=0, x-gzip, Vary merging,
 * minCompressSize, only-if-smaller and levels.
 */
import test from 'ava';
import zlib from 'node:zlib';
import { buffer } from '../../src/buffer.ts';
import { negotiate } from '../../src/http/negotiate.ts';
import { decode, htmlPage, recordingLogger, serve } from '../helpers/serve.ts';

const page = htmlPage(4096);

async function pageServer(t: Parameters<typeof serve>[0], options: Parameters<typeof buffer>[0] = {}, vary?: string) {
  return serve(t, [
    buffer(options),
    (ctx) => {
      if (vary) ctx.set('Vary', vary);
      ctx.body = page;
    },
  ]);
}

// [Accept-Encoding, expected coding] with the fixed server order br, zstd, gzip, deflate (adaptive
// compression, on by default, orders cold bodies by cost: test/encoding/adaptive.test.ts).
const cases: Array<[string | undefined, string]> = [
  [undefined, 'identity'],
  ['', 'identity'],
  ['gzip', 'gzip'],
  ['x-gzip', 'gzip'],
  ['GZIP', 'gzip'],
  ['br', 'br'],
  ['zstd', 'zstd'],
  ['gzip, br', 'br'],
  ['gzip, zstd', 'zstd'],
  ['gzip, deflate, br, zstd', 'br'],
  ['gzip;q=1.0, br;q=0.5', 'gzip'],
  ['br;q=0.1, zstd;q=0.1, gzip;q=0.1', 'br'],
  ['*', 'br'],
  ['*;q=0.5, gzip', 'gzip'],
  ['br;q=0, *', 'zstd'],
  ['br;q=0, zstd;q=0, *;q=0.3', 'gzip'],
  ['br;q=0, zstd;q=0, gzip;q=0, *;q=0.3', 'deflate'],
  ['deflate, compress', 'deflate'],
  ['compress', 'identity'],
  ['deflate, gzip', 'gzip'],
  ['gzip;q=0', 'identity'],
  ['identity', 'identity'],
  ['gzip;q=0.5, identity', 'identity'],
  ['gzip;q=0.5, identity;q=0.5', 'gzip'],
  ['identity;q=0, gzip', 'gzip'],
  ['identity;q=0, deflate', 'deflate'],
  ['identity;q=0, compress', 'identity'],
  ['*;q=0', 'identity'],
  ['gzip;q=2', 'identity'],
  ['gzip;q=abc, br', 'br'],
  ['gzip;level=9, br;q=0.5', 'gzip'],
  ['br;q=0.001, gzip;q=0.002', 'gzip'],
  ['br;q=0.0001', 'identity'],
  [' br ; q = 0.5 , gzip ; q=0.4', 'br'],
  ['gzip,,, ;;; , br', 'br'],
  ['x-gzip;q=0.9, br;q=0.8', 'gzip'],
  ['gzip;q=0, x-gzip;q=0.5', 'gzip'],
];

for (const [header, expected] of cases) {
  test(`Accept-Encoding ${header === undefined ? '(absent)' : JSON.stringify(header)} gives ${expected}`, async (t) => {
    const server = await pageServer(t, { adaptiveCompression: false });
    const response = await server.request('/', { headers: header === undefined ? {} : { 'accept-encoding': header } });
    t.is(response.status, 200);
    t.is(response.headers['content-encoding'] ?? 'identity', expected, 'the negotiated coding');
    t.is(Number(response.headers['content-length']), response.body.length, 'Content-Length equals the bytes sent');
    t.is(decode(response).toString(), page, 'the decoded body is the page');
    t.is(response.headers.vary, 'Accept-Encoding', 'Vary names Accept-Encoding for a compressible type');
  });
}

test('the server order of encodings breaks ties', async (t) => {
  const server = await pageServer(t, { encodings: ['gzip', 'zstd', 'br'] });
  const response = await server.request('/', { headers: { 'accept-encoding': 'br, zstd, gzip' } });
  t.is(response.headers['content-encoding'], 'gzip');
  const starred = await server.request('/', { headers: { 'accept-encoding': '*' } });
  t.is(starred.headers['content-encoding'], 'gzip', '* takes the server favourite');
});

test('a coding left out of encodings is never used', async (t) => {
  const server = await pageServer(t, { encodings: ['gzip'] });
  t.is((await server.request('/', { headers: { 'accept-encoding': 'br' } })).headers['content-encoding'], undefined);
  t.is(
    (await server.request('/', { headers: { 'accept-encoding': 'br, gzip;q=0.1' } })).headers['content-encoding'],
    'gzip',
  );
});

test('encodings: [] sends identity but still says Vary: Accept-Encoding', async (t) => {
  const server = await pageServer(t, { encodings: [] });
  const response = await server.request('/', { headers: { 'accept-encoding': 'br, gzip' } });
  t.is(response.headers['content-encoding'], undefined);
  t.is(response.headers.vary, 'Accept-Encoding');
});

test('Vary: Accept-Encoding is merged with the Vary the action set, without duplicates', async (t) => {
  const merged = await (
    await pageServer(t, {}, 'Accept-Language')
  ).request('/', { headers: { 'accept-encoding': 'gzip' } });
  t.is(merged.headers.vary, 'Accept-Language, Accept-Encoding');
  const already = await (
    await pageServer(t, {}, 'accept-encoding, Cookie')
  ).request('/', { headers: { 'accept-encoding': 'gzip' } });
  t.is(already.headers.vary, 'accept-encoding, Cookie', 'an existing accept-encoding (any case) is not added again');
  const star = await (await pageServer(t, {}, '*')).request('/', { headers: { 'accept-encoding': 'gzip' } });
  t.is(star.headers.vary, '*', 'Vary: * stays as it is');
  t.is(star.headers['content-encoding'], 'gzip');
});

test('bodies shorter than minCompressSize are sent as they are', async (t) => {
  const server = await serve(t, [
    buffer({ minCompressSize: 100 }),
    (ctx) => {
      ctx.body = ctx.path === '/short' ? 'a'.repeat(99) : 'a'.repeat(100);
    },
  ]);
  const short = await server.request('/short', { headers: { 'accept-encoding': 'gzip' } });
  t.is(short.headers['content-encoding'], undefined, '99 bytes < 100');
  t.is(short.body.toString(), 'a'.repeat(99));
  const enough = await server.request('/enough', { headers: { 'accept-encoding': 'gzip' } });
  t.is(enough.headers['content-encoding'], 'gzip', '100 bytes is at least minCompressSize');
});

test('the default minCompressSize is 32 bytes', async (t) => {
  const server = await serve(t, [
    buffer(),
    (ctx) => {
      ctx.body = ctx.path === '/31' ? ' '.repeat(31) : ' '.repeat(32);
    },
  ]);
  t.is(
    (await server.request('/31', { headers: { 'accept-encoding': 'gzip' } })).headers['content-encoding'],
    undefined,
  );
  t.is((await server.request('/32', { headers: { 'accept-encoding': 'gzip' } })).headers['content-encoding'], 'gzip');
});

test('a body that compression would not shrink is sent uncompressed, with an identity ETag', async (t) => {
  const logger = recordingLogger();
  const noise = Buffer.alloc(2000);
  for (let i = 0; i < noise.length; i++) noise[i] = (i * 2654435761) >>> 24; // no repetition gzip can use
  const incompressible = Buffer.from(noise.toString('base64').slice(0, 40)); // 40 bytes: gzip's header and trailer alone are 18
  const server = await serve(t, [
    buffer({ logger }),
    (ctx) => {
      ctx.type = 'text/plain';
      ctx.body = incompressible;
    },
  ]);
  const response = await server.request('/', { headers: { 'accept-encoding': 'gzip' } });
  t.is(response.headers['content-encoding'], undefined);
  t.true(response.body.equals(incompressible));
  t.false(response.headers.etag!.includes('-gzip'), 'the ETag names the identity representation');
  t.is(logger.count(/would not make it smaller/), 1, 'the decision is logged');
});

test('compressionLevels are used per coding', async (t) => {
  const big = htmlPage(64 * 1024, 7);
  const fast = await serve(t, [
    buffer({ compressionLevels: { gzip: 1, br: 0 } }),
    (ctx) => {
      ctx.body = big;
    },
  ]);
  const best = await serve(t, [
    buffer({ compressionLevels: { gzip: 9, br: 11 } }),
    (ctx) => {
      ctx.body = big;
    },
  ]);
  for (const coding of ['gzip', 'br']) {
    const a = await fast.request('/', { headers: { 'accept-encoding': coding } });
    const b = await best.request('/', { headers: { 'accept-encoding': coding } });
    t.true(
      b.body.length < a.body.length,
      `${coding}: the highest level gives fewer bytes (${b.body.length} < ${a.body.length})`,
    );
    t.is(decode(a).toString(), big);
    t.is(decode(b).toString(), big);
  }
  const expected = zlib.gzipSync(Buffer.from(big), { level: 9 });
  const b = await best.request('/', { headers: { 'accept-encoding': 'gzip' } });
  t.is(b.body.length, expected.length, 'gzip level 9 gives the bytes zlib gives at level 9');
});

test('garbage Accept-Encoding values never give a 5xx', async (t) => {
  const server = await pageServer(t);
  const garbage = [
    '\u00ff\u00fe',
    ';;;',
    'q=1',
    'br;q=',
    'br;q=-1',
    'gzip;q=0.5.5',
    ',,,',
    'br;;q=1',
    '"gzip"',
    'gzip;q=1e3',
    'br q=1',
    'a'.repeat(4000),
    'identity;q=0, *;q=0',
  ];
  for (const header of garbage) {
    const response = await server.request('/', { headers: { 'accept-encoding': header } });
    t.is(response.status, 200, `${JSON.stringify(header.slice(0, 20))} gives 200`);
    t.is(decode(response).toString(), page, 'and the page');
  }
});

test('negotiate() answers identity with a reason, and a coding without one', (t) => {
  t.deepEqual(negotiate('br', ['br', 'gzip']), { coding: 'br' });
  t.is(negotiate(undefined, ['br']).reason, 'no Accept-Encoding');
  t.is(negotiate('br', []).reason, 'no encodings offered');
  t.is(negotiate('identity;q=0, deflate', ['br']).reason, 'no acceptable coding; identity refused but sent anyway');
});
