/**
 * HTML stream bodies squashed as they flow, over real HTTP: a page written
 * in pieces of any size decodes, in every coding and with none, to exactly
 * what squashHtml makes of the whole page (links shortened as on the buffered
 * path); a streamed page's shell still reaches the client at once; a static
 * HTML file is squashed too, and kept squashed per host by the file memo;
 * no-transform, optimiseContent 0 and other types pass as they are; level 2
 * squashes a stream as level 1 does (its minifiers need whole blocks).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createReadStream, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { PassThrough, Readable } from 'node:stream';
import test from 'ava';
import Koa from 'koa';
import { buffer } from '../../src/buffer.ts';
import { decoder, within } from '../helpers/live-decode.ts';
import { squashHtml } from '../../src/native/exports.ts';
import { decode, serve } from '../helpers/serve.ts';

const corpus = fileURLToPath(new URL('../../support/squash-corpus/', import.meta.url));
const page = readFileSync(`${corpus}docs-page.html`);
const linked = readFileSync(`${corpus}rewrite-links.html`);

/** Pieces of `bytes` of sizes drawn from a seeded generator: single bytes, a few, or more. */
function pieces(bytes: Buffer, seed: number): Buffer[] {
  let state = seed;
  const next = (): number => {
    state = (Math.imul(state, 1103515245) + 12345) >>> 0;
    return state >>> 8;
  };
  const out: Buffer[] = [];
  for (let at = 0; at < bytes.length;) {
    const n = next() % 3 === 0 ? 1 + (next() % 4) : 1 + (next() % 900);
    out.push(bytes.subarray(at, at + n));
    at += n;
  }
  return out;
}

/** A Readable that hands over `chunks` one per turn of the event loop, as a slow renderer would. */
function slowly(chunks: Buffer[]): Readable {
  let i = 0;
  return new Readable({
    read() {
      setImmediate(() => this.push(i < chunks.length ? chunks[i++] : null));
    },
  });
}

const codings = ['br', 'gzip', 'deflate', 'zstd', 'identity'];

for (const coding of codings) {
  test(`${coding}: an HTML page streamed in pieces of any size decodes to squashHtml of the whole page`, async (t) => {
    const server = await serve(t, [
      buffer({ optimiseContent: 1 }),
      (ctx) => {
        ctx.type = 'html';
        const body = ctx.path === '/links' ? linked : page;
        ctx.body = slowly(pieces(body, Number(ctx.query.seed)));
      },
    ]);
    for (const seed of [1, 2, 3]) {
      const response = await server.request(`/?seed=${seed}`, { headers: { 'accept-encoding': coding } });
      t.is(response.headers['content-encoding'], coding === 'identity' ? undefined : coding);
      t.is(response.headers['content-length'], undefined, 'streamed, so without a length');
      t.true(decode(response).equals(squashHtml(page)), `seed ${seed}`);
    }
    // Links are shortened as the buffered path shortens them: by the request's host, path and scheme.
    const response = await server.request('/links?seed=4', { headers: { 'accept-encoding': coding } });
    const host = `127.0.0.1:${server.port}`;
    const want = squashHtml(linked, { level: 1, rewriteLinks: true, host, path: '/links', scheme: 'http' });
    t.true(decode(response).equals(want));
  });
}

test('a page written in one piece squashes as it does on the buffered path', async (t) => {
  const server = await serve(t, [
    buffer({ optimiseContent: 1 }),
    (ctx) => {
      ctx.type = 'html';
      ctx.body = ctx.path === '/stream' ? Readable.from([page]) : page;
    },
  ]);
  const streamed = await server.request('/stream', { headers: { 'accept-encoding': 'gzip' } });
  const buffered = await server.request('/', { headers: { 'accept-encoding': 'gzip' } });
  t.true(decode(streamed).equals(decode(buffered)));
});

for (const coding of ['br', 'gzip', 'deflate', 'zstd']) {
  test(`${coding}: a streamed page's shell is squashed and still decodable at once`, async (t) => {
    let source: PassThrough | undefined;
    const app = new Koa();
    app.use(buffer({ optimiseContent: 1 }));
    app.use((ctx) => {
      source = new PassThrough();
      ctx.type = 'html';
      ctx.body = source;
    });
    const server = app.listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
    const { port } = server.address() as AddressInfo;
    const decoded = { text: '', ended: false };
    http.get({ port, host: '127.0.0.1', path: '/', headers: { 'accept-encoding': coding } }, (response) => {
      const out = response.pipe(decoder(response.headers['content-encoding']!));
      out.on('data', (chunk: Buffer) => (decoded.text += chunk.toString()));
      out.on('end', () => (decoded.ended = true));
    });
    await within(5000, () => source !== undefined);
    const shell =
      '<!doctype html>\n<html>\n  <head>\n    <title>report</title>\n  </head>\n  <body>\n    <header>  the shell  </header>';
    source!.write(shell.slice(0, 40));
    source!.write(shell.slice(40));
    // The shell ends with a tag: all of it is decided, and flushed once the source is idle.
    const squashedShell = squashHtml(shell).toString();
    t.true(await within(2000, () => decoded.text === squashedShell), `decoded ${JSON.stringify(decoded.text)}`);
    // A run at the end waits for what follows it (it may be dropped), and a comment for its end.
    source!.write('\n    <main>  the slow part  </main>\n  <!-- a');
    const upToComment = squashHtml(`${shell}\n    <main>  the slow part  </main>`).toString();
    t.true(await within(2000, () => decoded.text === upToComment), `decoded ${JSON.stringify(decoded.text)}`);
    source!.end(' comment -->\n  </body>\n</html>\n');
    t.true(await within(2000, () => decoded.ended));
    t.is(
      decoded.text,
      squashHtml(`${shell}\n    <main>  the slow part  </main>\n  <!-- a comment -->\n  </body>\n</html>\n`).toString(),
    );
  });
}

test('no-transform, optimiseContent 0 and other media types are streamed as they are', async (t) => {
  const spaced = Buffer.from('<p>\n    a   b\n</p>\n');
  const cases: Array<[string, Parameters<typeof buffer>[0], (ctx: Koa.Context) => void]> = [
    ['no-transform', { optimiseContent: 1 }, (ctx) => ctx.set('Cache-Control', 'no-transform')],
    ['optimiseContent 0', { optimiseContent: 0 }, () => undefined],
    ['text/plain', { optimiseContent: 1 }, (ctx) => (ctx.type = 'text')],
  ];
  for (const [what, options, tweak] of cases) {
    const server = await serve(t, [
      buffer(options),
      (ctx) => {
        ctx.type = 'html';
        tweak(ctx);
        ctx.body = Readable.from([spaced]);
      },
    ]);
    for (const coding of ['gzip', 'identity']) {
      const response = await server.request('/', { headers: { 'accept-encoding': coding } });
      t.true(decode(response).equals(spaced), `${what}, ${coding}`);
    }
  }
});

test('application/xhtml+xml is squashed; level 2 squashes a stream as level 1 does', async (t) => {
  const xhtml = Buffer.from('<html>\n  <body>\n    <script>  var  a = 1;  </script>\n  </body>\n</html>\n');
  const server = await serve(t, [
    buffer({ optimiseContent: 2 }),
    (ctx) => {
      ctx.type = 'application/xhtml+xml';
      ctx.body = Readable.from([xhtml]);
    },
  ]);
  const response = await server.request('/', { headers: { 'accept-encoding': 'br' } });
  t.true(decode(response).equals(squashHtml(xhtml)), 'squashed, the script left as it is');
});

test('a static HTML file is squashed, kept squashed by the file memo, per host', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'kb-stream-squash-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const path = join(dir, 'links.html');
  writeFileSync(path, linked);
  const mw = buffer({ optimiseContent: 1 });
  const server = await serve(t, [
    mw,
    (ctx) => {
      ctx.type = 'html';
      ctx.length = linked.length; // koa-send declares the file's size
      ctx.body = createReadStream(path);
    },
  ]);
  const headers = { 'accept-encoding': 'br' };
  const squashed = (host: string): Buffer =>
    squashHtml(linked, { level: 1, rewriteLinks: true, host, path: '/', scheme: 'http' });
  const first = await server.request('/', { headers });
  t.true(decode(first).equals(squashed(`127.0.0.1:${server.port}`)));
  const second = await server.request('/', { headers });
  t.true(decode(second).equals(decode(first)));
  t.is(second.headers['content-length'], String(second.body.length), 'the second came whole, from the memo');
  const other = await server.request('/', { headers: { ...headers, host: 'shop.example.com' } });
  t.true(decode(other).equals(squashed('shop.example.com')), "another host's links are its own");
  t.false(decode(other).equals(decode(first)));
  const plain = await server.request('/', { headers: { 'accept-encoding': 'identity' } });
  t.true(plain.body.equals(squashed(`127.0.0.1:${server.port}`)), 'squashed without a coding too');
  t.is(plain.headers['content-length'], undefined, 'without the length the app declared');
  const head = await server.request('/', { method: 'HEAD', headers: { 'accept-encoding': 'identity' } });
  t.is(head.headers['content-length'], undefined, 'a HEAD says what a GET would send');
  t.is(mw.stats().responses.br.responses, 1, "one answer was kept bytes: the second; the other host's was its own");
});
