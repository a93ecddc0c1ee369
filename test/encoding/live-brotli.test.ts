/**
 * The live brotli stream (src/encoding/live-brotli.ts): its quality chosen
 * by the source's first pause, every byte written before a flush decodable
 * at once, the whole stream decoding to what was written, back-pressure
 * kept, and a paused page no bigger than koa-compress's unflushed stream.
 */
import { once } from 'node:events';
import zlib from 'node:zlib';
import test from 'ava';
import { bulkBytes, LiveBrotli } from '../../src/encoding/live-brotli.ts';
import { htmlPage } from '../../support/pages.ts';

const q = zlib.constants.BROTLI_PARAM_QUALITY;

/** Collects what the stream gives until it ends. */
async function collect(stream: LiveBrotli): Promise<Buffer> {
  const chunks: Buffer[] = [];
  stream.on('data', (chunk: Buffer) => chunks.push(chunk));
  await once(stream, 'end');
  return Buffer.concat(chunks);
}

test('a source that pauses before 64 KiB gets the live quality, and the bytes decode to what it wrote', async (t) => {
  const page = Buffer.from(htmlPage(15 * 1024, 3));
  const live = new LiveBrotli(4, 5);
  const out = collect(live);
  live.write(page.subarray(0, 10_000));
  live.flush();
  live.end(page.subarray(10_000));
  const bytes = await out;
  t.is(live.chosen, 5);
  t.deepEqual(zlib.brotliDecompressSync(bytes), page);
});

test('a source that writes on past 64 KiB without a pause keeps the fixed quality', async (t) => {
  const page = Buffer.from(htmlPage(300 * 1024, 4));
  const live = new LiveBrotli(4, 5);
  const out = collect(live);
  for (let at = 0; at < page.length; at += 16 * 1024) live.write(page.subarray(at, at + 16 * 1024));
  live.end();
  const bytes = await out;
  t.is(live.chosen, 4);
  t.deepEqual(zlib.brotliDecompressSync(bytes), page);
  // The same bytes as one unflushed stream at that quality, as koa-compress sends.
  t.is(bytes.length, zlib.brotliCompressSync(page, { params: { [q]: 4 } }).length);
});

test('a source that ends without a pause or a flush gets the live quality', async (t) => {
  const live = new LiveBrotli(4, 6);
  const out = collect(live);
  live.end(Buffer.from('<p>short'));
  t.is(zlib.brotliDecompressSync(await out).toString(), '<p>short');
  t.is(live.chosen, 6);
});

test('what was written before a flush is decodable before the stream ends, in order', async (t) => {
  const live = new LiveBrotli(4, 5);
  const decoder = zlib.createBrotliDecompress();
  live.pipe(decoder);
  let decoded = '';
  decoder.on('data', (chunk: Buffer) => (decoded += chunk.toString()));
  live.write(Buffer.from('<html><body><h1>shell</h1>'));
  live.write(Buffer.from('<p>first part</p>'));
  live.flush();
  for (let i = 0; i < 50 && !decoded.includes('first part'); i++) await new Promise((r) => setTimeout(r, 5));
  t.is(decoded, '<html><body><h1>shell</h1><p>first part</p>');
  live.write(Buffer.from('<p>later</p>'));
  live.flush();
  for (let i = 0; i < 50 && !decoded.includes('later'); i++) await new Promise((r) => setTimeout(r, 5));
  t.true(decoded.endsWith('<p>later</p>'));
  live.end();
  await once(decoder, 'end');
  t.is(decoded, '<html><body><h1>shell</h1><p>first part</p><p>later</p>');
});

test('a reader that stops holds the writer back: memory stays bounded', async (t) => {
  const live = new LiveBrotli(1, 1);
  const noise = Buffer.alloc(8 * 1024);
  let accepted = 0;
  // Nothing reads. A writer that waits for 'drain' whenever asked must be stopped well before 8 MiB.
  while (accepted < 8 * 1024 * 1024) {
    for (let i = 0; i < noise.length; i++) noise[i] = (Math.random() * 256) | 0;
    accepted += noise.length;
    if (live.write(Buffer.from(noise))) continue;
    const drained = await Promise.race([
      once(live, 'drain').then(() => true),
      new Promise<boolean>((resolve) => setTimeout(() => resolve(false), 300)),
    ]);
    if (!drained) break;
  }
  t.true(accepted < 2 * 1024 * 1024, `took ${accepted} bytes with nobody reading`);
  t.true(accepted > bulkBytes);
  live.destroy();
});

test('a page that pauses once is no bigger than one unflushed stream at the fixed quality', async (t) => {
  for (const seed of [1, 2, 3, 4, 5]) {
    const page = Buffer.from(htmlPage(12 * 1024 + seed * 1000, seed));
    const live = new LiveBrotli(4, 5);
    const out = collect(live);
    live.write(page.subarray(0, (page.length * 2) / 3));
    live.flush();
    live.end(page.subarray((page.length * 2) / 3));
    const flushed = (await out).length;
    const unflushed = zlib.brotliCompressSync(page, { params: { [q]: 4 } }).length;
    t.true(flushed <= unflushed, `seed ${seed}: ${flushed} B flushed against ${unflushed} B unflushed`);
  }
});

test('an error of the encoder, or a destroy, ends the stream', async (t) => {
  const live = new LiveBrotli(4, 5);
  live.write(Buffer.from('<p>x'));
  live.destroy(new Error('client left'));
  const [error] = (await once(live, 'error').catch((e: unknown) => [e])) as [Error];
  t.is(error.message, 'client left');
  t.true(live.destroyed);
});
