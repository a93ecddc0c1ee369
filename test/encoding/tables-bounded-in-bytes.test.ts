/**
 * The response pipeline's tables that grow with what requests send are
 * bounded in bytes, long keys kept as digests: the changing-body record
 * (src/encoding/changing.ts), the memo's seen-once table
 * (src/encoding/memo.ts), the dictionary versions
 * (src/encoding/dictionaries/keeper.ts) and the key tables
 * (src/cache/key.ts). Each is flooded with unique 12 KB URLs, many times
 * its budget, and still does its job for a long URL afterwards.
 */
import { createHash } from 'node:crypto';
import test from 'ava';
import { buffer } from '../../src/buffer.ts';
import { keyTableBytesMax, keyTablesBytes } from '../../src/cache/key.ts';
import { builtinMessages } from '../../src/base/messages.ts';
import { changingAfter, ChangingBodies, streakOverhead, streaksBytesMax } from '../../src/encoding/changing.ts';
import { DecisionLog } from '../../src/base/decision-log.ts';
import { DictionaryKeeper, versionsBytesMax, versionsOverhead } from '../../src/encoding/dictionaries/keeper.ts';
import { resolveDictionaries } from '../../src/config/dictionaries.ts';
import { RepresentationMemo, sightingOverhead, sightingsBytesMax } from '../../src/encoding/memo.ts';
import { serve } from '../helpers/serve.ts';

const long = 'x'.repeat(12 * 1024);
const md5 = (bytes: Buffer | string): string => createHash('md5').update(bytes).digest('hex');
const quiet = { debug() {}, info() {}, warn() {}, error() {} };

test('the changing-body record: unique 12 KB URLs stay within its byte budget, and a long URL is still recognised', (t) => {
  const record = new ChangingBodies();
  const urls = Math.ceil((3 * streaksBytesMax) / (33 + streakOverhead));
  for (let i = 0; i < urls; i++) record.observe(`/${long}/${i}`, false);
  t.true(record.bytes > streaksBytesMax / 2, `kept (${record.bytes} bytes)`);
  t.true(record.bytes <= streaksBytesMax, `${record.bytes} bytes <= ${streaksBytesMax}`);
  for (let i = 0; i < changingAfter; i++) record.observe(`/${long}/changing`, false);
  t.true(record.isChanging(`/${long}/changing`));
  t.false(record.isChanging(`/${long}/other`), 'a digest stands for its URL only');
  record.observe(`/${long}/changing`, true);
  t.false(record.isChanging(`/${long}/changing`));
});

test("the memo's seen-once table: unique bodies at 12 KB paths stay within its byte budget, and a second sighting is kept", (t) => {
  const memo = new RepresentationMemo(64 * 1024 * 1024);
  const bodies = Math.ceil((3 * sightingsBytesMax) / (33 + sightingOverhead));
  // With link rewriting the variant holds the host and path.
  for (let i = 0; i < bodies; i++) {
    const body = Buffer.from(`<p>${i}</p>`);
    t.false(memo.learn(body, `o1\0site.example\0/${long}/${i}\0http`, body, md5(body)));
  }
  t.true(memo.sightingsBytes > sightingsBytesMax / 2, `kept (${memo.sightingsBytes} bytes)`);
  t.true(memo.sightingsBytes <= sightingsBytesMax, `${memo.sightingsBytes} bytes <= ${sightingsBytesMax}`);
  const body = Buffer.from('<p>again</p>');
  const variant = `o1\0site.example\0/${long}/again\0http`;
  t.false(memo.learn(body, variant, body, md5(body)), 'first sighting');
  t.true(memo.learn(body, variant, body, md5(body)), 'the second is kept');
});

test('the dictionary versions: unique 12 KB paths stay within their byte budget, and a repeated page keeps its hash', (t) => {
  const memo = new RepresentationMemo(64 * 1024 * 1024);
  const keeper = new DictionaryKeeper({
    memo,
    store: () => undefined,
    storeTimeoutMs: 1000,
    log: new DecisionLog(quiet, builtinMessages),
  });
  const [rule] = resolveDictionaries([{ match: '/*', types: ['text/html'] }]);
  const paths = Math.ceil((3 * versionsBytesMax) / (33 + versionsOverhead + 64 * rule!.keep));
  for (let i = 0; i < paths; i++) keeper.offer(rule!, `/${long}/${i}`, Buffer.from(`<p>${i}</p>`), 0);
  t.true(keeper.versionsBytes > versionsBytesMax / 2, `kept (${keeper.versionsBytes} bytes)`);
  t.true(keeper.versionsBytes <= versionsBytesMax, `${keeper.versionsBytes} bytes <= ${versionsBytesMax}`);
  const page = Buffer.from('<p>page</p>');
  const first = keeper.offer(rule!, `/${long}/page`, page, 0);
  t.is(keeper.offer(rule!, `/${long}/page`, page, 0), first);
  t.is(keeper.find(rule!, first), memo.dictionary(`${rule!.tag}:${first}`));
  t.truthy(keeper.find(rule!, first));
});

test('the key tables: unique long URLs over HTTP stay within their byte budgets', async (t) => {
  const server = await serve(t, [
    buffer({ cache: true, logger: quiet }),
    async (ctx) => {
      if (await ctx.bufferIsCached()) return;
      ctx.body = 'page';
    },
  ]);
  // Under the length past which a key is not remembered (512): each request adds to both tables.
  const path = (i: number): string => `/${'y'.repeat(400)}/${i}`;
  const requests = Math.ceil((2 * keyTableBytesMax) / 800) + 100;
  for (let i = 0; i < requests; i++) t.is((await server.request(path(i))).status, 200);
  const { recent, signatures } = keyTablesBytes();
  t.true(recent <= keyTableBytesMax && recent > 0, `${recent} bytes`);
  t.true(signatures <= keyTableBytesMax && signatures > 0, `${signatures} bytes`);
});
