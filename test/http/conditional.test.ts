/**
 * ETag and 304 Not Modified over real HTTP
 * (docs/decisions/0003-etag-semantics.md): If-None-Match alone decides when present (weak comparison,
 * lists, W/, *); If-Modified-Since counts only without an ETag or with
 * trustLastModified; garbage in either header never gives a 5xx.
 */
import test from 'ava';
import { buffer } from '../../src/buffer.ts';
import { bufferSection } from '../../src/config/section.ts';
import { md5 } from '../../src/native/exports.ts';
import { ifNoneMatchMatches, notModifiedReason, parseIfNoneMatch } from '../../src/http/conditional.ts';
import { decode, htmlPage, serve } from '../helpers/serve.ts';
import type { BufferOptions } from '../../src/config/options.ts';

const page = htmlPage(4096, 9);
const modified = 1_700_000_000; // Tue, 14 Nov 2023 22:13:20 GMT
const later = new Date((modified + 60) * 1000).toUTCString();
const earlier = new Date((modified - 60) * 1000).toUTCString();
const exactly = new Date(modified * 1000).toUTCString();

async function pageServer(
  t: Parameters<typeof serve>[0],
  options: BufferOptions = {},
  extra?: (ctx: import('koa').Context) => void,
) {
  return serve(t, [
    buffer({ lastModified: modified, ...options }),
    (ctx) => {
      ctx.set('Cache-Control', 'max-age=60');
      extra?.(ctx);
      ctx.body = page;
    },
  ]);
}

test('the ETag is the MD5 of the uncompressed body, suffixed by the coding', async (t) => {
  const server = await pageServer(t);
  const digest = md5(page);
  t.is((await server.request('/')).headers.etag, `"${digest}"`);
  for (const coding of ['br', 'zstd', 'gzip']) {
    t.is((await server.request('/', { headers: { 'accept-encoding': coding } })).headers.etag, `"${digest}-${coding}"`);
  }
});

test('a matching If-None-Match gives 304 with the validators and caching headers and no body', async (t) => {
  const server = await pageServer(t, {}, (ctx) => {
    ctx.set('Content-Location', '/page');
    ctx.set('Expires', 'Thu, 01 Dec 2039 16:00:00 GMT');
    ctx.set('X-Other', 'kept too');
  });
  const first = await server.request('/', { headers: { 'accept-encoding': 'gzip' } });
  const second = await server.request('/', {
    headers: { 'accept-encoding': 'gzip', 'if-none-match': first.headers.etag! },
  });
  t.is(second.status, 304);
  t.is(second.body.length, 0, 'no body');
  t.is(second.headers.etag, first.headers.etag);
  t.is(second.headers['last-modified'], exactly);
  t.is(second.headers.vary, 'Accept-Encoding');
  t.is(second.headers['cache-control'], 'max-age=60');
  t.is(second.headers['content-location'], '/page');
  t.is(second.headers.expires, 'Thu, 01 Dec 2039 16:00:00 GMT');
  t.truthy(second.headers.date);
  t.is(second.headers['content-encoding'], undefined, 'no Content-Encoding without a body');
  t.is(second.headers['content-type'], undefined);
  t.is(second.headers['content-length'], undefined);
});

test('If-None-Match matches by weak comparison, in a list, and as *', async (t) => {
  const server = await pageServer(t);
  const tag = (await server.request('/', { headers: { 'accept-encoding': 'br' } })).headers.etag!;
  const asked = async (value: string): Promise<number> =>
    (await server.request('/', { headers: { 'accept-encoding': 'br', 'if-none-match': value } })).status;
  t.is(await asked(tag), 304, 'the tag itself');
  t.is(await asked(`W/${tag}`), 304, 'W/ compares weakly');
  t.is(await asked(`"other", ${tag}, "more"`), 304, 'in a list');
  t.is(await asked(`"a,b", W/"x",${tag}`), 304, 'commas inside a tag do not split it');
  t.is(await asked('*'), 304, '* matches any current representation');
  t.is(await asked('"other"'), 200, 'a different tag');
  t.is(
    await asked(tag.replace('-br', '')),
    304,
    'the identity representation of the same content, which a br client accepts',
  );
  t.is(await asked(tag.replace('-br', '-gzip')), 200, 'but not the gzip one: this client does not accept gzip');
});

test('with If-None-Match present the date is ignored', async (t) => {
  const server = await pageServer(t, { trustLastModified: true });
  const response = await server.request('/', { headers: { 'if-none-match': '"nope"', 'if-modified-since': later } });
  t.is(response.status, 200, 'If-None-Match decides alone (RFC 9110 13.1.3)');
});

test('If-Modified-Since alone is not trusted when the page has an ETag', async (t) => {
  const server = await pageServer(t);
  t.is((await server.request('/', { headers: { 'if-modified-since': later } })).status, 200);
});

test('trustLastModified, or no ETag, lets If-Modified-Since give 304 when not older than Last-Modified', async (t) => {
  for (const options of [{ trustLastModified: true }, { generateEtag: false }] as BufferOptions[]) {
    const server = await pageServer(t, options);
    const name = JSON.stringify(options);
    t.is((await server.request('/', { headers: { 'if-modified-since': later } })).status, 304, `${name}: a later date`);
    t.is(
      (await server.request('/', { headers: { 'if-modified-since': exactly } })).status,
      304,
      `${name}: the same second`,
    );
    t.is(
      (await server.request('/', { headers: { 'if-modified-since': earlier } })).status,
      200,
      `${name}: an earlier date`,
    );
  }
});

test('a section may declare trustLastModified, and ctx.state.buffer may turn it on for one response', async (t) => {
  const server = await serve(t, [
    buffer({ lastModified: modified }),
    async (ctx, next) => {
      if (ctx.path.startsWith('/static')) return bufferSection({ trustLastModified: true })(ctx, next);
      return next();
    },
    (ctx) => {
      if (ctx.path === '/one') ctx.state.buffer = { trustLastModified: true };
      ctx.body = page;
    },
  ]);
  t.is((await server.request('/static/a', { headers: { 'if-modified-since': later } })).status, 304);
  t.is((await server.request('/one', { headers: { 'if-modified-since': later } })).status, 304);
  t.is((await server.request('/other', { headers: { 'if-modified-since': later } })).status, 200);
});

test('generate304 off always sends the body', async (t) => {
  const server = await pageServer(t, { generate304: false, trustLastModified: true });
  const tag = (await server.request('/')).headers.etag!;
  t.is((await server.request('/', { headers: { 'if-none-match': tag } })).status, 200);
  t.is((await server.request('/', { headers: { 'if-modified-since': later } })).status, 200);
  const perResponse = await pageServer(t, {}, (ctx) => {
    ctx.state.buffer = { generate304: 0 };
  });
  t.is((await perResponse.request('/', { headers: { 'if-none-match': '*' } })).status, 200, 'also per response');
});

test('an ETag and a Last-Modified set by the action are kept and decide', async (t) => {
  const server = await pageServer(t, {}, (ctx) => {
    ctx.set('ETag', 'W/"v42"');
    ctx.set('Last-Modified', 'Sun, 06 Nov 1994 08:49:37 GMT');
  });
  const response = await server.request('/', { headers: { 'accept-encoding': 'gzip' } });
  t.is(response.headers.etag, 'W/"v42"');
  t.is(response.headers['last-modified'], 'Sun, 06 Nov 1994 08:49:37 GMT');
  t.is(response.headers['content-encoding'], 'gzip');
  t.is((await server.request('/', { headers: { 'accept-encoding': 'gzip', 'if-none-match': '"v42"' } })).status, 304);
});

test('generateEtag off leaves the ETag out', async (t) => {
  const server = await pageServer(t, { generateEtag: false });
  t.is((await server.request('/')).headers.etag, undefined);
});

test('a client holding the compressed representation gets 304, and a new one the full page', async (t) => {
  const server = await pageServer(t, { memoMaxSize: 0 });
  const tag = `"${md5(page)}-gzip"`;
  const held = await server.request('/', { headers: { 'accept-encoding': 'gzip', 'if-none-match': tag } });
  t.is(held.status, 304, 'answered without needing the compressed bytes');
  t.is(held.headers.etag, tag);
  const full = await server.request('/', { headers: { 'accept-encoding': 'gzip' } });
  t.is(decode(full).toString(), page);
  t.is(full.headers.etag, tag);
});

test('garbage If-None-Match and If-Modified-Since never give a 5xx', async (t) => {
  const server = await pageServer(t, { trustLastModified: true });
  const garbage = [
    '',
    ',',
    '"',
    'W/',
    'W/"',
    '"unterminated',
    '**',
    '* , *',
    'W/W/"x"',
    '\u00ff"x"',
    'x'.repeat(8000),
    '"a" garbage "b"',
    ',,,"x",,,',
  ];
  for (const value of garbage) {
    const r = await server.request('/', { headers: { 'if-none-match': value } });
    t.true(
      r.status === 200 || r.status === 304,
      `If-None-Match ${JSON.stringify(value.slice(0, 16))} gives ${r.status}`,
    );
  }
  for (const value of [
    '',
    'yesterday',
    '32 Foo 2020',
    'Sun, 99 Nov 1994 08:49:37 GMT',
    '0',
    '-1',
    'NaN',
    'x'.repeat(8000),
  ]) {
    const r = await server.request('/', { headers: { 'if-modified-since': value } });
    t.is(r.status, 200, `If-Modified-Since ${JSON.stringify(value.slice(0, 16))} is ignored`);
  }
});

test('If-None-Match parsing keeps tags, W/ forms and bare tokens, and skips garbage', (t) => {
  t.is(parseIfNoneMatch('*'), '*');
  t.is(parseIfNoneMatch(' * '), '*');
  t.deepEqual(parseIfNoneMatch('"a", W/"b" ,"c,d"'), ['"a"', '"b"', '"c,d"']);
  t.deepEqual(parseIfNoneMatch('abc, "x"'), ['"abc"', '"x"'], 'an unquoted tag as some clients send it');
  t.deepEqual(parseIfNoneMatch('"x", "unterminated'), ['"x"']);
  t.deepEqual(parseIfNoneMatch('**, "y"'), ['"y"']);
  t.true(ifNoneMatchMatches('W/"x"', '"x"'));
  t.true(ifNoneMatchMatches('"x"', 'W/"x"'));
  t.false(ifNoneMatchMatches('"x"', undefined));
  t.true(ifNoneMatchMatches('*', undefined), '* needs no tag');
  t.is(
    notModifiedReason({
      ifNoneMatch: undefined,
      ifModifiedSince: later,
      etag: undefined,
      lastModified: 'garbage',
      trustLastModified: false,
    }),
    undefined,
    'an unparsable Last-Modified never gives 304',
  );
});
