/**
 * The demo's `/live` page (`npm start`): a page that changes every few
 * seconds, offered as a compression dictionary. Started as the real demo (a
 * cluster primary and two workers sharing a SQLite cache); a client that
 * names the version it holds gets the next versions as dcz from either
 * worker, each decoding to a whole page.
 */
import test from 'ava';
import { availableHeader, decodeDcz } from '../../helpers/dcz.ts';
import { startExample, tempDir } from '../../helpers/examples.ts';
import { decode } from '../../helpers/serve.ts';

const bannerLine = /^koa-buffer demo: http:\/\/127\.0\.0\.1:(\d+)\/ {2}\(2 workers: pid (\d+), (\d+)\)$/;

test('/live is offered as a dictionary, and the versions after it come as dcz from both workers', async (t) => {
  const demo = await startExample(t, 'demo/server.ts', {
    env: { KOA_BUFFER_DEMO_DIR: tempDir(t, 'kb-demo-live-') },
    urlLine: bannerLine,
  });
  const first = await demo.request('/live', { 'Accept-Encoding': 'zstd' });
  t.is(first.status, 200);
  t.is(first.headers['use-as-dictionary'], 'match="/live", ttl=3600');
  t.is(first.headers['cache-control'], 'max-age=30');
  t.is(first.headers.vary, 'Accept-Encoding, Available-Dictionary');
  const dictionary = decode(first);
  t.true(dictionary.toString().includes('<h1>Live figures</h1>'));
  // The dictionary reaches the shared store off the request's path.
  await new Promise((resolve) => setTimeout(resolve, 500));

  const workers = new Set<string>();
  for (let i = 0; i < 6; i++) {
    const next = await demo.request('/live', {
      'Accept-Encoding': 'dcz, zstd',
      'Available-Dictionary': availableHeader(dictionary),
    });
    workers.add(next.headers['x-worker'] ?? '');
    t.is(next.headers['content-encoding'], 'dcz', `request ${i} (worker ${next.headers['x-worker']})`);
    const page = decodeDcz(next.body, dictionary).toString();
    t.regex(page, /<h1>Live figures<\/h1>[\s\S]*<\/html>/);
    t.true(next.body.length * 5 < first.body.length, `dcz ${next.body.length} bytes, zstd ${first.body.length}`);
  }
  t.is(workers.size, 2, 'both workers answered with the dictionary one of them offered');
});
