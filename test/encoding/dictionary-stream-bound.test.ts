/**
 * A stream body in a dictionary rule's scope is read into memory only up to
 * the rule's `maxSize`, counted in the bytes it actually gives, whatever
 * length it declares: past the bound the response goes out as a stream, the
 * bytes read first and then the rest, none lost. The stream here declares
 * 100 bytes and gives 16 times `maxSize`, and holds back its second half
 * until the client has the response head, so a server that reads it whole
 * never answers.
 */
import http from 'node:http';
import { Readable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import zlib from 'node:zlib';
import test from 'ava';
import type Koa from 'koa';
import { buffer } from '../../src/buffer.ts';
import { serve } from '../helpers/serve.ts';

const maxSize = 64 * 1024;
const chunkSize = 16 * 1024;
const rules = [{ match: '/feed*', maxSize }];

/** `count` chunks of HTML-ish text, each different (a seeded generator), so order and loss both show. */
function chunksOf(count: number): Buffer[] {
  let seed = 20260105;
  return Array.from({ length: count }, (_, index) => {
    const chunk = Buffer.alloc(chunkSize);
    for (let i = 0; i < chunkSize; i++) {
      seed = (seed * 1103515245 + 12345) >>> 0;
      chunk[i] = 0x61 + ((seed >>> 16) % 26);
    }
    chunk.write(`<p>${index}</p>`, 0);
    return chunk;
  });
}

/** A stream of `chunks` that waits for `gate` before the chunk at `holdAt`; counts what it has given. */
function gatedStream(chunks: Buffer[], holdAt: number, gate: Promise<void>): { stream: Readable; given: () => number } {
  let next = 0;
  let given = 0;
  const stream = new Readable({
    read() {
      const push = (): void => {
        if (next === chunks.length) return void this.push(null);
        given += chunks[next]!.length;
        this.push(chunks[next++]);
      };
      if (next === holdAt) void gate.then(push);
      else push();
    },
  });
  return { stream, given: () => given };
}

test('a stream declaring 100 bytes and giving 16 × maxSize is answered as a stream, every byte in order', async (t) => {
  const chunks = chunksOf((16 * maxSize) / chunkSize);
  const holdAt = (4 * maxSize) / chunkSize;
  let open = (): void => undefined;
  const gate = new Promise<void>((resolve) => (open = resolve));
  let given = (): number => 0;
  const action: Koa.Middleware = (ctx) => {
    const made = gatedStream(chunks, holdAt, gate);
    given = made.given;
    ctx.type = 'html';
    ctx.body = made.stream;
    ctx.length = 100; // what the stream claims
  };
  const server = await serve(t, [buffer({ dictionaries: rules, lastModified: false }), action]);

  const response = await new Promise<http.IncomingMessage>((resolve, reject) => {
    const req = http.request(
      { host: '127.0.0.1', port: server.port, path: '/feed', headers: { 'accept-encoding': 'gzip' }, agent: false },
      resolve,
    );
    req.on('error', reject);
    req.end();
    sleep(20_000, undefined, { ref: false }).then(
      () => reject(new Error('no response head within 20 s: the stream was read whole')),
      () => undefined,
    );
  });
  t.is(response.statusCode, 200);
  t.true(given() <= 4 * maxSize, `no more than the held-back half was read before the head (${given()} bytes)`);
  t.is(response.headers['content-encoding'], 'gzip', 'the stream path compressed it');
  open();
  const body: Buffer[] = [];
  for await (const chunk of response) body.push(chunk as Buffer);
  t.true(zlib.gunzipSync(Buffer.concat(body)).equals(Buffer.concat(chunks)), 'every byte, in order');
});

test('a stream that gives more than it declares but stays within maxSize is read whole and sent whole', async (t) => {
  const chunks = chunksOf(3);
  const server = await serve(t, [
    buffer({ dictionaries: rules, lastModified: false }),
    (ctx) => {
      ctx.type = 'html';
      ctx.body = Readable.from(chunks);
      ctx.length = 100;
    },
  ]);
  const answer = await server.request('/feed', { headers: { 'accept-encoding': 'gzip' } });
  t.is(answer.status, 200);
  t.is(answer.headers['use-as-dictionary'], 'match="/feed*"', 'buffered, so offered as a dictionary');
  t.true(zlib.gunzipSync(answer.body).equals(Buffer.concat(chunks)));
});

test('a string stream past maxSize keeps its text and its encoding', async (t) => {
  const text = chunksOf(8).map((chunk) => `${chunk.toString('latin1')}é`);
  const server = await serve(t, [
    buffer({ dictionaries: rules, lastModified: false }),
    (ctx) => {
      ctx.type = 'html';
      ctx.body = Readable.from(text, { objectMode: false, encoding: 'utf8' });
      ctx.length = 100;
    },
  ]);
  const answer = await server.request('/feed', { headers: { 'accept-encoding': 'gzip' } });
  t.is(answer.status, 200);
  t.is(zlib.gunzipSync(answer.body).toString('utf8'), text.join(''));
});
