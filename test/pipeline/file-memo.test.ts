/**
 * A static file is compressed once: the next client gets the kept bytes
 * whole (with their length, a HEAD too) without the file being read or
 * compressed; a file seen again gets its smallest encoding, made off the
 * request path; an edited file is a new identity; a byte range and a large
 * file stream as before; a 206 keeps its ETag and Vary.
 */
import { createReadStream, mkdtempSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import zlib from 'node:zlib';
import test from 'ava';
import { buffer } from '../../src/buffer.ts';
import { serve } from '../helpers/serve.ts';

function stylesheet(seed: number, rules = 2000): string {
  let css = '';
  for (let i = 0; i < rules; i++)
    css += `.c${i} { color: #${((i * 2654435761 + seed) >>> 8).toString(16).padStart(6, '0').slice(0, 6)}; margin: ${i % 13}px; }\n`;
  return css;
}

async function site(t: import('ava').ExecutionContext) {
  const dir = mkdtempSync(join(tmpdir(), 'kb-file-memo-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  const path = join(dir, 'site.css');
  writeFileSync(path, stylesheet(1));
  const mw = buffer();
  const server = await serve(t, [
    mw,
    (ctx) => {
      ctx.type = 'css';
      if (ctx.path === '/range') ctx.body = createReadStream(path, { start: 10, end: 4009 });
      else if (ctx.path === '/partial') {
        ctx.status = 206;
        ctx.set('Content-Range', 'bytes 0-99/1000');
        ctx.set('ETag', '"v1"');
        ctx.set('Vary', 'Origin');
        ctx.body = createReadStream(path, { start: 0, end: 99 });
      } else ctx.body = createReadStream(ctx.path === '/big' ? join(dir, 'big.css') : path);
    },
  ]);
  return { mw, server, path, dir };
}

const br = { 'accept-encoding': 'br' };

test('the second request gets the kept bytes whole, with their length, and the file is not compressed again', async (t) => {
  const { mw, server, path } = await site(t);
  const first = await server.request('/site.css', { headers: br });
  t.is(first.headers['content-encoding'], 'br');
  t.is(first.headers['content-length'], undefined, 'the first is streamed');
  t.true(zlib.brotliDecompressSync(first.body).equals(readFileSync(path)));
  const second = await server.request('/site.css', { headers: br });
  t.is(second.headers['content-length'], String(second.body.length), 'the kept bytes go with their length');
  t.true(zlib.brotliDecompressSync(second.body).equals(readFileSync(path)));
  t.is(second.headers.etag, first.headers.etag, 'the same weak tag');
  t.is(mw.stats().responses.br.responses, 1, 'the second came from the memo');
  const head = await server.request('/site.css', { method: 'HEAD', headers: br });
  t.is(head.body.length, 0);
  t.true(Number(head.headers['content-length']) > 0, 'a HEAD says what a GET would send');
});

test('a file seen again is recompressed at its smallest setting, off the request path', async (t) => {
  const { server, path } = await site(t);
  const cold = await server.request('/site.css', { headers: br });
  let smallest = cold.body.length;
  for (let i = 0; i < 100 && smallest >= cold.body.length; i++) {
    const again = await server.request('/site.css', { headers: br });
    t.true(zlib.brotliDecompressSync(again.body).equals(readFileSync(path)), 'every answer decodes to the file');
    smallest = Math.min(smallest, again.body.length);
    await sleep(20);
  }
  t.true(smallest < cold.body.length, `hot ${smallest} bytes, cold ${cold.body.length}`);
});

test('an edited file is a new identity: its new bytes are sent, not the kept ones', async (t) => {
  const { server, path } = await site(t);
  await server.request('/site.css', { headers: br });
  await server.request('/site.css', { headers: br });
  writeFileSync(path, stylesheet(2));
  utimesSync(path, new Date(), new Date(Date.now() + 5000));
  const after = await server.request('/site.css', { headers: br });
  t.true(zlib.brotliDecompressSync(after.body).equals(readFileSync(path)), 'the edited file');
});

test('a byte range and a file over the memo’s size stream every time; a 206 keeps its ETag and Vary', async (t) => {
  const { mw, server, path, dir } = await site(t);
  for (let i = 0; i < 3; i++) {
    const range = await server.request('/range', { headers: br });
    t.true(zlib.brotliDecompressSync(range.body).equals(readFileSync(path).subarray(10, 4010)));
    t.is(range.headers['content-length'], undefined);
  }
  writeFileSync(join(dir, 'big.css'), stylesheet(3, 120_000)); // about 5 MiB: over what the memo keeps
  for (let i = 0; i < 2; i++) {
    const big = await server.request('/big', { headers: br });
    t.is(big.headers['content-length'], undefined, 'a large file is streamed');
    t.true(zlib.brotliDecompressSync(big.body).equals(readFileSync(join(dir, 'big.css'))));
  }
  t.is(mw.stats().responses.br.responses, 0, 'none came from the memo');
  const partial = await server.request('/partial', { headers: br });
  t.is(partial.status, 206);
  t.is(partial.headers.etag, '"v1"');
  t.is(partial.headers.vary, 'Origin');
  t.is(partial.headers['content-encoding'], undefined);
});
