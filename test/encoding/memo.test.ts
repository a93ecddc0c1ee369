/**
 * The representation memo: a page whose bytes repeat is compressed once
 * (counted through the log_compressed debug line), changed bytes are
 * compressed again, concurrent requests share one compression, and the
 * memo never holds more bytes than its bound.
 */
import test from 'ava';
import { buffer } from '../../src/buffer.ts';
import { RepresentationMemo } from '../../src/encoding/memo.ts';
import { decode, htmlPage, recordingLogger, serve } from '../helpers/serve.ts';

const compressions = /^compressed /;

test('the second identical response is not compressed again', async (t) => {
  const logger = recordingLogger();
  const base = htmlPage(50 * 1024, 2);
  // Rendered afresh per request: a new string with the same bytes each time.
  const server = await serve(t, [
    buffer({ logger, optimiseContent: 1 }),
    (ctx) => {
      ctx.body = base.slice(0, 10) + base.slice(10);
    },
  ]);
  const first = await server.request('/', { headers: { 'accept-encoding': 'br' } });
  const second = await server.request('/', { headers: { 'accept-encoding': 'br' } });
  t.is(logger.count(compressions), 1, 'one compression for two identical responses');
  t.true(first.body.equals(second.body), 'the same bytes are sent');
  t.is(first.headers.etag, second.headers.etag);
  await server.request('/', { headers: { 'accept-encoding': 'gzip' } });
  t.is(logger.count(compressions), 2, 'another coding is another representation');
  await server.request('/', { headers: { 'accept-encoding': 'gzip' } });
  t.is(logger.count(compressions), 2);
});

test('a changed body is compressed again', async (t) => {
  const logger = recordingLogger();
  let n = 0;
  const server = await serve(t, [
    buffer({ logger }),
    (ctx) => {
      ctx.body = `${htmlPage(8192, 4)}<p>${n++}</p>`;
    },
  ]);
  const a = await server.request('/', { headers: { 'accept-encoding': 'br' } });
  const b = await server.request('/', { headers: { 'accept-encoding': 'br' } });
  t.is(logger.count(compressions), 2);
  t.not(a.headers.etag, b.headers.etag);
  t.true(decode(b).toString().endsWith('<p>1</p>'));
});

test('a change the fingerprint does not sample is still caught by the byte comparison', async (t) => {
  const logger = recordingLogger();
  const base = htmlPage(8192, 4);
  const mid = 4099; // not one of the sixteen sampled offsets
  let flip = false;
  const server = await serve(t, [
    buffer({ logger }),
    (ctx) => {
      flip = !flip;
      ctx.body = base.slice(0, mid) + (flip ? 'A' : 'B') + base.slice(mid + 1);
    },
  ]);
  const a = await server.request('/', { headers: { 'accept-encoding': 'gzip' } });
  const b = await server.request('/', { headers: { 'accept-encoding': 'gzip' } });
  t.not(a.headers.etag, b.headers.etag, 'different bytes, different tags');
  t.is(decode(a).toString()[mid], 'A');
  t.is(decode(b).toString()[mid], 'B');
  t.is(logger.count(compressions), 2);
});

test('a Buffer the application changes in place after sending is not mistaken for the old body', async (t) => {
  const shared = Buffer.from(htmlPage(8192, 12));
  const server = await serve(t, [
    buffer(),
    (ctx) => {
      ctx.type = 'text/html';
      ctx.body = shared;
    },
  ]);
  const before = await server.request('/', { headers: { 'accept-encoding': 'gzip' } });
  shared.write('CHANGED', 4000);
  const after = await server.request('/', { headers: { 'accept-encoding': 'gzip' } });
  t.not(after.headers.etag, before.headers.etag);
  t.true(decode(after).equals(shared), 'the new bytes are sent');
});

test('memoMaxSize 0 turns the memo off: every response is compressed', async (t) => {
  const logger = recordingLogger();
  const body = htmlPage(8192, 6);
  const server = await serve(t, [
    buffer({ logger, memoMaxSize: 0 }),
    (ctx) => {
      ctx.body = body;
    },
  ]);
  for (let i = 0; i < 3; i++) await server.request('/', { headers: { 'accept-encoding': 'br' } });
  t.is(logger.count(compressions), 3);
});

test('concurrent requests for new bytes share one compression', async (t) => {
  const logger = recordingLogger();
  const body = htmlPage(1024 * 1024, 8); // above the sync limit, so the compression spans event-loop turns
  const server = await serve(t, [
    buffer({ logger }),
    (ctx) => {
      ctx.body = body;
    },
  ]);
  const responses = await Promise.all(
    Array.from({ length: 5 }, () => server.request('/', { headers: { 'accept-encoding': 'gzip' } })),
  );
  t.is(logger.count(compressions), 1, 'five requests, one compression');
  for (const r of responses) t.is(decode(r).toString(), body);
});

test('the memo evicts old pages and never grows past its bound', async (t) => {
  const logger = recordingLogger();
  const bound = 256 * 1024;
  const server = await serve(t, [
    // Fixed levels: hot upgrades land in the memo when the upgrade thread gets to them, which would make
    // the eviction order depend on timing (their accounting is tested in test/encoding/adaptive*.test.ts).
    buffer({ logger, memoMaxSize: bound, adaptiveCompression: false }),
    (ctx) => {
      ctx.body = htmlPage(16 * 1024, Number(ctx.path.slice(1)));
    },
  ]);
  // Twice each: a body is remembered from its second sighting.
  for (let i = 1; i <= 40; i++)
    for (let k = 0; k < 2; k++) await server.request(`/${i}`, { headers: { 'accept-encoding': 'br' } });
  t.is(logger.count(compressions), 40);
  await server.request('/40', { headers: { 'accept-encoding': 'br' } });
  t.is(logger.count(compressions), 40, 'the newest page is still remembered');
  await server.request('/1', { headers: { 'accept-encoding': 'br' } });
  t.is(logger.count(compressions), 41, 'the oldest was evicted: 40 pages of 16 KiB do not fit in 256 KiB');

  const memo = new RepresentationMemo(bound);
  for (let i = 0; i < 200; i++) {
    const raw = Buffer.from(htmlPage(4096 + i * 37, i));
    memo.learn(raw, '', raw, String(i).padStart(32, '0'));
    memo.learn(raw, '', raw, String(i).padStart(32, '0'));
    memo.remember(String(i).padStart(32, '0'), 'br', 4, raw.subarray(0, 1000 + i));
    t.true(memo.size <= bound, `after ${i + 1} pages the memo holds ${memo.size} <= ${bound} bytes`);
  }
  const huge = Buffer.alloc(bound + 1, 'x');
  memo.learn(huge, '', huge, 'f'.repeat(32));
  t.false(memo.learn(huge, '', huge, 'f'.repeat(32)), 'an entry larger than the bound is refused');
  t.true(memo.size <= bound, 'an entry larger than the bound is not kept');
  t.is(memo.recall(huge, ''), undefined);
});

test('a recalled entity must be byte-identical and of the same optimisation variant', (t) => {
  const memo = new RepresentationMemo(1024 * 1024);
  const raw = Buffer.from(htmlPage(4096, 1));
  const squashed = Buffer.from('<p>squashed</p>');
  t.false(memo.learn(raw, 'o1', squashed, 'a'.repeat(32)), 'a body seen once is not kept');
  t.is(memo.recall(raw, 'o1'), undefined);
  t.true(memo.learn(raw, 'o1', squashed, 'a'.repeat(32)), 'seen twice, it is');
  t.is(memo.recall(Buffer.from(raw), 'o1')?.entity, squashed, 'a copy of the same bytes is recognised');
  t.is(memo.recall(raw, 'o2'), undefined, 'another variant is another entity');
  t.is(memo.recall(raw, ''), undefined);
  const changed = Buffer.from(raw);
  changed[2000] = changed[2000]! ^ 1;
  t.is(memo.recall(changed, 'o1'), undefined, 'one different byte is another body');
  t.is(memo.encoded('a'.repeat(32), 'br', 4), undefined);
  memo.remember('a'.repeat(32), 'br', 4, null);
  t.is(memo.encoded('a'.repeat(32), 'br', 4), null, '"no gain" is remembered too');
  t.is(new RepresentationMemo(0).enabled, false);
});

test('bytes that change on every request leave no bodies in the memo, only their compressed forms', async (t) => {
  let n = 0;
  const page = htmlPage(16 * 1024, 9);
  const logger = recordingLogger();
  const server = await serve(t, [
    buffer({ logger }),
    (ctx) => {
      ctx.body = `${page}<p>${n++}</p>`;
    },
  ]);
  for (let i = 0; i < 5; i++)
    t.is(
      decode(await server.request('/', { headers: { 'accept-encoding': 'gzip' } })).toString(),
      `${page}<p>${i}</p>`,
    );
  t.is(logger.count(compressions), 5);
  // What the memo holds, through a memo of its own: 20 changing pages of 16 KiB.
  const memo = new RepresentationMemo(64 * 1024 * 1024);
  for (let i = 0; i < 20; i++) {
    const raw = `${page}<p>${i}</p>`;
    memo.learn(raw, '', Buffer.from(raw), String(i).padStart(32, '0'));
    memo.remember(String(i).padStart(32, '0'), 'gzip', 6, Buffer.alloc(1000));
  }
  t.true(memo.size < 20 * (1000 + 200), `only the 20 compressed forms are held (${memo.size} bytes)`);
});
