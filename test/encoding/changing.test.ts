/**
 * An address whose body changes on every request skips the representation
 * memo once it is recognised (src/encoding/changing.ts): its responses are
 * compressed afresh at the cold level, never queue an upgrade, and carry an
 * ETag that is the MD5 of the bytes sent, which still answers 304 for those
 * bytes. When its bodies repeat again it is back on the memo's path within
 * two probes, hot bytes included. Real HTTP over loopback.
 */
import test from 'ava';
import { buffer } from '../../src/buffer.ts';
import { md5 } from '../../src/native/exports.ts';
import { ChangingBodies, changingAfter, probeEvery } from '../../src/encoding/changing.ts';
import { decode, htmlPage, recordingLogger, serve, untilLogged } from '../helpers/serve.ts';

const chrome = { 'accept-encoding': 'gzip, deflate, br, zstd' };
const page = htmlPage(50 * 1024, 42);

test('the record: changing after a streak of new bodies, probes, and cleared by a repeat', (t) => {
  const record = new ChangingBodies();
  for (let i = 0; i < changingAfter - 1; i++) record.observe('/a', false);
  t.false(record.isChanging('/a'));
  t.false(record.skipsMemo('/a'));
  record.observe('/a', false);
  t.true(record.isChanging('/a'));
  const skips = Array.from({ length: probeEvery * 2 }, () => record.skipsMemo('/a'));
  t.is(skips.filter((skip) => !skip).length, 2, 'one probe in every probeEvery responses');
  t.false(skips[probeEvery - 1], 'the probe comes last of its round');
  record.observe('/a', false);
  t.true(record.isChanging('/a'), 'a probe that finds a new body leaves the address changing');
  record.observe('/a', true);
  t.false(record.isChanging('/a'), 'one repeated body clears it');
  t.false(record.isChanging('/b'), 'addresses are apart');
});

test('a body that changes on every request: cold bytes, no memo, an ETag naming the bytes sent, 304 for them', async (t) => {
  const logger = recordingLogger();
  let counter = 0;
  let changing = true;
  const server = await serve(t, [
    buffer({ logger, optimiseContent: 1 }),
    (ctx) => {
      ctx.type = 'html';
      ctx.body = changing ? `${page}<p>request ${counter++}</p>` : page;
    },
  ]);
  const responses = [];
  for (let i = 0; i < changingAfter + probeEvery; i++) responses.push(await server.request('/', { headers: chrome }));
  for (const [i, response] of responses.entries()) {
    t.is(response.headers['content-encoding'], 'zstd', `response ${i}: the cold coding`);
    t.true(decode(response).toString().endsWith(`<p>request ${i}</p>`));
  }
  const skipped = responses.slice(changingAfter, changingAfter + probeEvery - 1);
  for (const response of skipped)
    t.is(response.headers.etag, `"${md5(response.body)}-zstd"`, 'the tag is the MD5 of the bytes sent');
  const early = responses[0]!;
  t.is(early.headers.etag, `"${md5(decode(early))}-zstd"`, 'before the streak: the MD5 of the entity');
  t.is(logger.count(/^queued the upgrade/), 0, 'nothing is ever upgraded');

  // The same bytes again (the counter stepped back): the tag sent for them still answers 304.
  const last = skipped.at(-1)!;
  counter = changingAfter + probeEvery - 2; // the body of `last`; this request is not a probe
  const again = await server.request('/', { headers: { ...chrome, 'if-none-match': last.headers.etag! } });
  t.is(again.status, 304);
  t.is(again.headers.etag, last.headers.etag);

  // The page stops changing: back on the memo's path within two probes, so
  // its upgrade is queued; once the upgrade has run (off the request path,
  // however long a loaded machine makes it), the page goes out hot.
  changing = false;
  const upgradeQueued = (): boolean => logger.count(/^queued the upgrade .* to br level 11/) > 0;
  for (let i = 0; i < 2 * probeEvery + 1 && !upgradeQueued(); i++) await server.request('/', { headers: chrome });
  t.true(upgradeQueued(), 'the repeated page is back on the memo path and its upgrade is queued');
  await untilLogged(logger, /^recompressed .* with br level 11/);
  const hot = await server.request('/', { headers: chrome });
  t.regex(hot.headers.etag ?? '', /^"[0-9a-f]{32}-br11"$/, 'a repeated page gets its hot bytes again');
  const entity = (await server.request('/')).body;
  t.is((await server.request('/', { headers: chrome })).headers.etag, `"${md5(entity)}-br11"`);
});
