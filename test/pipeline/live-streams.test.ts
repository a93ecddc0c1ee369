/**
 * Streams that stay live: a streamed page's shell and each server-sent event
 * are decodable by the client as soon as the app has written them, in every
 * coding; the writes of one turn share one flush; a source that fails
 * midway never ends in a complete-looking response.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { PassThrough, Readable } from 'node:stream';
import test from 'ava';
import Koa from 'koa';
import { buffer } from '../../src/buffer.ts';
import { decoder, within } from '../helpers/live-decode.ts';

/** Starts an app whose `/` hands a PassThrough to Koa and returns it to the test to write into. */
async function live(t: import('ava').ExecutionContext, type: string) {
  const sources: PassThrough[] = [];
  const app = new Koa();
  app.use(buffer());
  app.use((ctx) => {
    const source = new PassThrough();
    sources.push(source);
    ctx.type = type;
    ctx.body = source;
  });
  const server = app.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  t.teardown(() => new Promise<void>((resolve) => server.close(() => resolve())));
  const { port } = server.address() as AddressInfo;
  /**
   * Requests `/`; once the app has handed its source to Koa, returns the
   * source to write into, the decoded text so far, and the response (its
   * head goes out with the first bytes written).
   */
  const open = async (coding: string) => {
    const before = sources.length;
    const decoded = { text: '', wire: 0, raw: [] as Buffer[], ended: false, error: undefined as Error | undefined };
    const responded = new Promise<http.IncomingMessage>((resolve, reject) =>
      http
        .get({ port, host: '127.0.0.1', path: '/', headers: { 'accept-encoding': coding } }, (response) => {
          response.on('data', (chunk: Buffer) => {
            decoded.wire += chunk.length;
            decoded.raw.push(chunk);
          });
          const coded = response.headers['content-encoding'];
          const out = coded ? response.pipe(decoder(coded)) : response;
          out.on('data', (chunk: Buffer) => (decoded.text += chunk.toString()));
          out.on('end', () => (decoded.ended = true));
          out.on('error', (error: Error) => (decoded.error = error));
          response.on('error', (error: Error) => (decoded.error = error));
          response.on('aborted', () => (decoded.error = new Error('aborted')));
          resolve(response);
        })
        .on('error', reject),
    );
    await within(5000, () => sources.length > before);
    return { responded, decoded, source: sources.at(-1)! };
  };
  return { open };
}

for (const coding of ['br', 'gzip', 'deflate', 'zstd']) {
  test(`${coding}: a streamed page's shell is decodable at once, while the rest is still to come`, async (t) => {
    const { open } = await live(t, 'html');
    const { responded, decoded, source } = await open(coding);
    const shell = `<!doctype html><title>report</title><header>${'the shell of the page '.repeat(40)}</header>`;
    source.write(shell);
    t.is((await responded).headers['content-encoding'], coding);
    // A loaded machine may take a while to run the turn; the point is that nothing waits for more input.
    t.true(await within(2000, () => decoded.text === shell), `the shell decoded before the rest was written`);
    source.write('<main>the slow part</main>');
    t.true(await within(2000, () => decoded.text === `${shell}<main>the slow part</main>`), 'and so is each write');
    source.end('</html>');
    t.true(await within(2000, () => decoded.ended));
    t.is(decoded.text, `${shell}<main>the slow part</main></html>`);
  });
}

test('server-sent events are compressed by default, each decodable on arrival, in far fewer bytes', async (t) => {
  const { open } = await live(t, 'text/event-stream');
  const { responded, decoded, source } = await open('gzip, br');
  let sent = '';
  for (let i = 0; i < 40; i++) {
    const event = `id: ${i}\nevent: price\ndata: {"symbol":"KOA","price":${100 + (i % 7)},"note":"${'steady '.repeat(20)}"}\n\n`;
    source.write(event);
    sent += event;
    if (i === 0) t.is((await responded).headers['content-encoding'], 'br');
    t.true(await within(2000, () => decoded.text === sent), `event ${i} decoded before the next was written`);
  }
  source.end();
  await within(2000, () => decoded.ended);
  t.true(decoded.wire < 0.3 * sent.length, `${decoded.wire} bytes on the wire for ${sent.length} of events`);
});

test('the writes of one turn share one flush', async (t) => {
  const { open } = await live(t, 'text/plain');
  const burst = await open('deflate');
  for (let i = 0; i < 20; i++) burst.source.write(`line ${i}\n`);
  await within(2000, () => burst.decoded.text.endsWith('line 19\n'));
  const oneTurn = burst.decoded.wire;
  const spread = await open('deflate');
  for (let i = 0; i < 20; i++) {
    spread.source.write(`line ${i}\n`);
    await within(2000, () => spread.decoded.text.endsWith(`line ${i}\n`));
  }
  // Each sync flush adds an empty stored block (5 bytes) and ends the block the writes shared.
  t.true(spread.decoded.wire >= oneTurn + 19 * 4, `one turn: ${oneTurn} bytes; twenty turns: ${spread.decoded.wire}`);
  burst.source.end();
  spread.source.end();
});

test('a fast source held back by its compressor is not flushed chunk by chunk', async (t) => {
  const { open } = await live(t, 'html');
  const { decoded, source } = await open('deflate');
  // 4 MiB in 64 KiB slices, written as fast as the compressor takes them: a generated report, a proxied page.
  const slice = `<tr><td>row</td><td>${'cell '.repeat(12)}</td></tr>\n`.repeat(1100).slice(0, 64 * 1024);
  Readable.from(
    (function* () {
      for (let i = 0; i < 64; i++) yield slice;
    })(),
  ).pipe(source);
  t.true(await within(20_000, () => decoded.ended), 'the page ends');
  t.is(decoded.text.length, 64 * slice.length);
  // Each sync flush ends in an empty stored block, 00 00 ff ff; a flush per slice would leave 64 of them.
  const wire = Buffer.concat(decoded.raw);
  let flushes = 0;
  for (let at = wire.indexOf(syncFlush); at !== -1; at = wire.indexOf(syncFlush, at + 4)) flushes++;
  t.true(flushes <= 4, `${flushes} sync flushes in 64 slices`);
});

const syncFlush = Buffer.from([0, 0, 0xff, 0xff]);

test('a source that fails midway ends the response as failed, never as a complete body', async (t) => {
  const { open } = await live(t, 'html');
  const { decoded, source } = await open('br');
  source.write('<p>the start</p>');
  await within(2000, () => decoded.text === '<p>the start</p>');
  source.destroy(new Error('the database went away'));
  t.true(await within(2000, () => decoded.error !== undefined || decoded.ended));
  t.truthy(decoded.error, 'the client sees the response break off, not end');
  t.true(source.destroyed);
});

test('a client that leaves destroys the live source', async (t) => {
  const { open } = await live(t, 'html');
  const { responded, source } = await open('gzip');
  source.write('<p>x</p>');
  (await responded).destroy();
  t.true(await within(2000, () => source.destroyed), 'the source is destroyed when the client goes');
});
