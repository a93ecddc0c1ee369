/**
 * An ETag the action set, on a body koa-buffer then compresses: a strong tag
 * names exact bytes (RFC 9110 8.8.3), so the compressed representation gets
 * the coding inside the quotes (`"v1"` → `"v1-br"`), as generated tags do; a
 * weak tag stays. A client sending back the tag it was given gets 304. Over
 * real HTTP, also for a cache hit.
 */
import test, { type ExecutionContext } from 'ava';
import { buffer } from '../../src/buffer.ts';
import type { BufferOptions } from '../../src/config/options.ts';
import { decode, htmlPage, serve, type Served } from '../helpers/serve.ts';

const page = htmlPage(4 * 1024, 1);

async function site(t: ExecutionContext, tag: string, options: BufferOptions = {}): Promise<Served> {
  return serve(t, [
    buffer(options),
    async (ctx) => {
      if (await ctx.bufferIsCached()) return;
      ctx.type = 'html';
      ctx.body = page;
      ctx.set('ETag', tag);
    },
  ]);
}

test('a strong app ETag gets the coding suffix inside its quotes, one per coding', async (t) => {
  const server = await site(t, '"v1"');
  for (const coding of ['br', 'gzip', 'zstd'] as const) {
    const response = await server.request('/', { headers: { 'accept-encoding': coding } });
    t.is(response.headers['content-encoding'], coding);
    t.is(response.headers.etag, `"v1-${coding}"`);
    t.is(decode(response).toString(), page);
  }
  const plain = await server.request('/');
  t.is(plain.headers['content-encoding'], undefined);
  t.is(plain.headers.etag, '"v1"', 'uncompressed, the tag is the action’s own');
});

test('a weak app ETag stays as it is', async (t) => {
  const server = await site(t, 'W/"v1"');
  const response = await server.request('/', { headers: { 'accept-encoding': 'br' } });
  t.is(response.headers['content-encoding'], 'br');
  t.is(response.headers.etag, 'W/"v1"');
});

test('the client’s tag still gets 304: "v1-br" for br, "v1" for identity, and not one for the other', async (t) => {
  const server = await site(t, '"v1"');
  const br = { 'accept-encoding': 'br' };
  const held = await server.request('/', { headers: { ...br, 'if-none-match': '"v1-br"' } });
  t.is(held.status, 304);
  t.is(held.headers.etag, '"v1-br"', 'the 304 names what the client holds');
  t.is((await server.request('/', { headers: { 'if-none-match': '"v1"' } })).status, 304);
  t.is(
    (await server.request('/', { headers: { ...br, 'if-none-match': 'W/"v1-br"' } })).status,
    304,
    'weak comparison',
  );
  const other = await server.request('/', { headers: { ...br, 'if-none-match': '"v1-gzip"' } });
  t.is(other.status, 200, 'a gzip copy is not the br representation');
  t.is(other.headers.etag, '"v1-br"');
});

test('a cache hit is suffixed for its own client and answers 304 the same way', async (t) => {
  const server = await site(t, '"v1"', { cache: true });
  const miss = await server.request('/', { headers: { 'accept-encoding': 'gzip' } });
  t.is(miss.headers['x-cache'], 'MISS');
  t.is(miss.headers.etag, '"v1-gzip"');
  const hit = await server.request('/', { headers: { 'accept-encoding': 'br' } });
  t.is(hit.headers['x-cache'], 'HIT');
  t.is(hit.headers.etag, '"v1-br"', 'the stored tag is the action’s, suffixed per hit');
  const held = await server.request('/', { headers: { 'accept-encoding': 'br', 'if-none-match': '"v1-br"' } });
  t.is(held.status, 304);
});
