/**
 * Adaptive compression over real HTTP: a body seen once gets cheap cold
 * bytes, a body seen again gets its smallest encoding once the upgrade has
 * run off the request path, with an ETag naming those bytes; a client
 * holding any coding of the current content gets 304; the option that pins
 * fixed levels; a cache entry served hot from its second hit; the memo
 * counting the upgraded bytes. The upgrade of a 4 MiB body under load:
 * adaptive-load.test.ts (a process of its own: upgrades share one thread).
 */
import test, { type ExecutionContext } from 'ava';
import { setTimeout as sleep } from 'node:timers/promises';
import { BufferOptionError } from '../../src/base/errors.ts';
import { buffer } from '../../src/buffer.ts';
import { md5 } from '../../src/native/exports.ts';
import { codingTable } from '../../src/encoding/coding-table.ts';
import { DecisionLog } from '../../src/base/decision-log.ts';
import { RepresentationMemo } from '../../src/encoding/memo.ts';
import { Messages } from '../../src/base/messages.ts';
import { upgradeMaxSize, Upgrades } from '../../src/encoding/upgrades.ts';
import { decode, htmlPage, recordingLogger, serve } from '../helpers/serve.ts';

const chrome = { 'accept-encoding': 'gzip, deflate, br, zstd' };
const page = htmlPage(50 * 1024, 42);
const upgraded = /^recompressed /;

/** Polls until `done()` is true, for at most `ms` (a niced upgrade on a loaded machine can take a while). */
async function waitFor(t: ExecutionContext, done: () => boolean, what: string, ms = 60_000): Promise<void> {
  const until = Date.now() + ms;
  while (!done()) {
    if (Date.now() > until) t.fail(`${what}: not within ${ms} ms`);
    await sleep(20);
  }
}

async function pageServer(t: ExecutionContext, options: Parameters<typeof buffer>[0] = {}, body = () => page) {
  const logger = recordingLogger();
  const server = await serve(t, [
    buffer({ logger, ...options }),
    (ctx) => {
      ctx.type = 'html';
      ctx.body = body();
    },
  ]);
  return { server, logger };
}

test('a repeated page: cold bytes first, then the smaller hot bytes with an ETag naming them', async (t) => {
  const { server, logger } = await pageServer(t, { optimiseContent: 1 });
  const entity = (await server.request('/')).body; // identity: the squashed page, whose MD5 the tags carry
  const tag = md5(entity);
  const first = await server.request('/', { headers: chrome });
  t.is(first.headers['content-encoding'], 'zstd', 'cold: the cheapest coding Chrome accepts');
  t.is(first.headers.etag, `"${tag}-zstd"`);
  t.true(decode(first).equals(entity));
  const second = await server.request('/', { headers: chrome });
  t.true(second.body.equals(first.body), 'the second sighting is answered with what is there, the cold bytes');
  t.is(logger.count(/^queued the upgrade of \d+ bytes to br level 11/), 1, 'and queues the upgrade');
  await waitFor(t, () => logger.count(upgraded) === 1, 'the upgrade');
  const third = await server.request('/', { headers: chrome });
  t.is(third.headers['content-encoding'], 'br', 'hot: the smallest coding Chrome accepts');
  t.is(third.headers.etag, `"${tag}-br11"`, 'a tag of its own: these bytes differ from any cold br bytes');
  t.true(third.body.length < first.body.length * 0.85, `${third.body.length} B hot against ${first.body.length} cold`);
  t.true(decode(third).equals(entity));
  t.is(Number(third.headers['content-length']), third.body.length);
  const fourth = await server.request('/', { headers: chrome });
  t.true(fourth.body.equals(third.body), 'and the hot bytes stay');
  t.is(logger.count(upgraded), 1, 'upgraded once');
});

test('each client gets the hot bytes of the smallest coding it accepts, gzip 9 and zstd 19 included', async (t) => {
  const { server, logger } = await pageServer(t);
  for (const [coding, hotLevel] of [
    ['gzip', 9],
    ['zstd', 19],
    ['br', 11],
  ] as const) {
    const headers = { 'accept-encoding': coding };
    const cold = await server.request('/', { headers });
    t.is(cold.headers.etag, `"${md5(page)}-${coding}"`);
    await server.request('/', { headers });
    await waitFor(
      t,
      () => logger.count(new RegExp(`with ${coding} level ${hotLevel} off the request path`)) === 1,
      coding,
    );
    const hot = await server.request('/', { headers });
    t.is(hot.headers['content-encoding'], coding);
    t.is(hot.headers.etag, `"${md5(page)}-${coding}${hotLevel}"`);
    t.true(hot.body.length < cold.body.length, `${coding}: ${hot.body.length} B hot, ${cold.body.length} B cold`);
    t.is(decode(hot).toString(), page);
  }
});

test('a body that changes on every request stays cold and is never upgraded', async (t) => {
  let n = 0;
  const { server, logger } = await pageServer(t, {}, () => `${page}<p>${n++}</p>`);
  const sizes = [];
  for (let i = 0; i < 4; i++) {
    const response = await server.request('/', { headers: chrome });
    t.is(response.headers['content-encoding'], 'zstd');
    t.regex(response.headers.etag!, /^"[0-9a-f]{32}-zstd"$/);
    sizes.push(response.body.length);
  }
  await sleep(200);
  t.is(logger.count(/upgrade/), 0, 'nothing queued');
});

test('a client holding any coding of the current content gets 304, in a coding it accepts', async (t) => {
  const { server, logger } = await pageServer(t);
  const tag = md5(page);
  const asked = (headers: Record<string, string>) => server.request('/', { headers });
  const gzipped = await asked({ 'accept-encoding': 'gzip' });
  t.is(gzipped.headers.etag, `"${tag}-gzip"`);
  const switched = await asked({ ...chrome, 'if-none-match': gzipped.headers.etag! });
  t.is(switched.status, 304, 'gzip held, though the server would now send zstd');
  t.is(switched.headers.etag, `"${tag}-gzip"`, 'the 304 names what the client holds');
  t.is(switched.headers.vary, 'Accept-Encoding');
  t.is((await asked({ ...chrome, 'if-none-match': `"${tag}"` })).status, 304, 'identity held');
  t.is((await asked({ ...chrome, 'if-none-match': `"other", W/"${tag}-br"` })).status, 304, 'in a list, weakly');
  // Upgrade br, so that both br tags exist.
  await asked({ 'accept-encoding': 'br' });
  await asked({ 'accept-encoding': 'br' });
  await waitFor(t, () => logger.count(upgraded) === 1, 'the br upgrade');
  const hot = await asked(chrome);
  t.is(hot.headers.etag, `"${tag}-br11"`);
  t.is(
    (await asked({ ...chrome, 'if-none-match': `"${tag}-br"` })).status,
    304,
    'the cold br tag, now that hot br is sent',
  );
  t.is((await asked({ ...chrome, 'if-none-match': `"${tag}-zstd"` })).status, 304, 'the cold zstd tag');
  t.is(
    (await asked({ 'accept-encoding': 'zstd', 'if-none-match': hot.headers.etag! })).status,
    200,
    'not br to a zstd-only client',
  );
  t.is(
    (await asked({ 'accept-encoding': 'br', 'if-none-match': `"${tag}-gzip"` })).status,
    200,
    'nor gzip to a br-only one',
  );
  t.is(
    (await asked({ 'accept-encoding': 'br, identity;q=0', 'if-none-match': `"${tag}"` })).status,
    200,
    'nor identity to a client refusing it',
  );
  t.is((await asked({ ...chrome, 'if-none-match': `"${tag}-br7"` })).status, 200, 'a level this server never sends');
  t.is((await asked({ ...chrome, 'if-none-match': `"${md5('old')}-br"` })).status, 200, 'older content');
});

test('encodings set by the user: their order wins for cold and hot bodies', async (t) => {
  const { server, logger } = await pageServer(t, { encodings: ['gzip', 'br', 'zstd'] });
  t.is((await server.request('/', { headers: chrome })).headers['content-encoding'], 'gzip');
  await server.request('/', { headers: chrome });
  await waitFor(t, () => logger.count(upgraded) === 1, 'the upgrade');
  t.is((await server.request('/', { headers: chrome })).headers.etag, `"${md5(page)}-gzip9"`);
});

test('adaptiveCompression: false, or compressionLevels given, pins fixed levels and the br-first order', async (t) => {
  for (const options of [{ adaptiveCompression: false }, { compressionLevels: { br: 5 } }]) {
    const { server, logger } = await pageServer(t, options);
    const responses = [];
    for (let i = 0; i < 3; i++) responses.push(await server.request('/', { headers: chrome }));
    await sleep(200);
    for (const response of responses) {
      t.is(response.headers['content-encoding'], 'br');
      t.is(response.headers.etag, `"${md5(page)}-br"`);
    }
    t.is(logger.count(/upgrade/), 0, `${JSON.stringify(options)}: no upgrade`);
    const level = 'compressionLevels' in options ? 5 : 4;
    t.is(logger.count(new RegExp(`with br level ${level} `)), 1, `br level ${level}, compressed once`);
  }
  const { server } = await pageServer(t);
  t.is((await server.request('/', { headers: chrome })).headers['content-encoding'], 'zstd', 'the default is adaptive');
});

test('adaptiveCompression is validated, and cannot be combined with compressionLevels', (t) => {
  const error = t.throws(() => buffer({ adaptiveCompression: 'yes' as never }), { instanceOf: BufferOptionError });
  t.is(error?.key, 'option_flag');
  t.is(error?.message, 'koa-buffer: adaptiveCompression must be a true or false value, not "yes"');
  const combined = t.throws(() => buffer({ adaptiveCompression: true, compressionLevels: { br: 5 } }), {
    instanceOf: BufferOptionError,
  });
  t.is(combined?.key, 'adaptive_levels_combined');
  t.notThrows(() => buffer({ adaptiveCompression: false, compressionLevels: { br: 5 } }));
  t.notThrows(() => buffer({ adaptiveCompression: true, compressionLevels: undefined }));
});

test('a cache entry is served hot from its second hit, then as a prepared hit', async (t) => {
  const logger = recordingLogger();
  let builds = 0;
  const server = await serve(t, [
    buffer({ cache: true, logger }),
    async (ctx) => {
      if (await ctx.bufferIsCached()) return;
      builds++;
      ctx.type = 'html';
      ctx.body = page;
    },
  ]);
  const headers = { 'accept-encoding': 'br' };
  const built = await server.request('/', { headers });
  t.is(built.headers.etag, `"${md5(page)}-br"`, 'the build: cold');
  const firstHit = await server.request('/', { headers });
  t.is(firstHit.headers['x-cache'], 'HIT');
  t.true(firstHit.body.equals(built.body), 'the first hit: cold, its upgrade queued');
  await waitFor(t, () => logger.count(upgraded) === 1, 'the upgrade');
  const pipelineRuns = (): number => logger.count(/^coding br/);
  const hot = await server.request('/', { headers });
  t.is(hot.headers.etag, `"${md5(page)}-br11"`, 'the next hit: hot');
  t.true(hot.body.length < built.body.length);
  const runs = pipelineRuns();
  const later = await server.request('/', { headers });
  t.true(later.body.equals(hot.body));
  t.is(later.headers.etag, hot.headers.etag);
  t.is(pipelineRuns(), runs, 'a prepared hit: the pipeline is skipped');
  t.is(builds, 1);
});

test('the memo counts the upgraded bytes, and refuses bodies above the size cap', async (t) => {
  const logger = recordingLogger();
  const memo = new RepresentationMemo(8 * 1024 * 1024);
  const upgrades = new Upgrades(memo, new DecisionLog(logger, new Messages({})));
  const entity = Buffer.from(page);
  const digest = md5(entity);
  const before = memo.size;
  t.true(upgrades.request(digest, entity, 'br', codingTable.br!.hot, entity.length));
  t.true(upgrades.request(digest, entity, 'br', codingTable.br!.hot, entity.length), 'asked twice: one upgrade');
  t.is(upgrades.pending, 1);
  await waitFor(t, () => upgrades.pending === 0, 'the upgrade');
  const bytes = memo.encoded(digest, 'br', 11);
  t.true(Buffer.isBuffer(bytes), 'kept in the memo');
  t.true(memo.size - before >= bytes!.length, `the memo grew by ${memo.size - before} B for ${bytes!.length} B`);
  const line = logger.lines.find((l) => upgraded.test(l.message))!.message;
  t.true(line.includes(`memo now ${memo.size} bytes`), line);
  const big = Buffer.alloc(upgradeMaxSize + 1, 'a');
  t.false(upgrades.request(md5(big), big, 'br', 11, 100), 'above the cap: the cold bytes stay');
  // A memo too small for the upgraded bytes does not keep them: they never exceed its budget.
  const tiny = new RepresentationMemo(1024);
  const tinyUpgrades = new Upgrades(tiny, new DecisionLog(logger, new Messages({})));
  t.true(tinyUpgrades.request(digest, entity, 'br', 11, entity.length));
  await waitFor(t, () => tinyUpgrades.pending === 0, 'the upgrade into a tiny memo');
  t.true(tiny.size <= 1024);
});
