/**
 * examples/proxy/: koa-buffer caching in front of an origin in another
 * process. The origin's max-age=1 page is a miss, then a hit the origin never
 * sees; once expired, the rebuild asks the origin with the stored ETag, and
 * its 304 renews the entry; a POST goes through and purges it.
 */
import test from 'ava';
import { buffer } from '../../../src/buffer.ts';
import { proxyTo } from '../../../examples/proxy/proxy.ts';
import { fixture, spawnChild } from '../../helpers/children.ts';
import { decode, rawRequest, serve } from '../../helpers/serve.ts';

interface Seen {
  method: string;
  url: string;
  headers: Record<string, string | undefined>;
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

test('miss, hit, a 304 from the origin renewing the expired entry, and a POST that passes through and purges', async (t) => {
  const origin = spawnChild(t, fixture('origin-server.ts'));
  const { port: originPort } = await origin.waitForJson<{ port: number }>((m) => typeof m.port === 'number');
  const seenUpstream = async (): Promise<Seen[]> =>
    JSON.parse((await rawRequest(originPort, '/__seen')).body.toString()) as Seen[];
  const proxy = await serve(t, [buffer({ cache: true }), proxyTo(`http://127.0.0.1:${originPort}`)]);

  const miss = await proxy.request('/page', {
    headers: { 'accept-encoding': 'br', connection: 'x-hop', 'x-hop': 'one link only', 'x-end': 'all the way' },
  });
  t.is(miss.status, 200);
  t.is(miss.headers['x-cache'], 'MISS');
  t.is(miss.headers['content-encoding'], 'br', 'compressed by koa-buffer');
  const page = decode(miss).toString();
  t.regex(page, /version 1 of the page/);
  let seen = await seenUpstream();
  t.is(seen.length, 1);
  const first = seen[0]!.headers;
  t.is(first['if-none-match'], undefined, 'the first request goes upstream unconditionally');
  t.is(first['accept-encoding'], 'identity', 'the origin is asked for the plain entity');
  t.is(first.host, `127.0.0.1:${originPort}`);
  t.is(first['x-hop'], undefined, 'a header Connection names stays on its link');
  t.is(first['x-end'], 'all the way');
  t.not(first.connection, 'x-hop');

  const hit = await proxy.request('/page', { headers: { 'accept-encoding': 'identity' } });
  t.is(hit.headers['x-cache'], 'HIT');
  t.is(hit.body.toString(), page);
  t.is((await seenUpstream()).length, 1, 'a hit is not seen upstream');

  await sleep(1100); // max-age=1
  const renewed = await proxy.request('/page', { headers: { 'accept-encoding': 'identity' } });
  seen = await seenUpstream();
  t.is(seen.length, 2);
  t.is(seen[1]!.headers['if-none-match'], '"v1"', 'the rebuild is a conditional request upstream');
  t.is(renewed.status, 200);
  t.is(renewed.body.toString(), page, 'the whole stored page, though the origin sent no body');
  t.regex(renewed.headers['cache-status']!, /fwd-status=304/);
  t.is(renewed.headers['x-cache'], 'REVALIDATED');
  t.is((await proxy.request('/page')).headers['x-cache'], 'HIT', 'renewed for another second');

  const post = await proxy.request('/page', { method: 'POST', headers: { 'content-type': 'text/plain' } });
  t.is(post.status, 204);
  seen = await seenUpstream();
  t.is(seen.length, 3);
  t.is(seen[2]!.method, 'POST', 'passed through');
  const after = await proxy.request('/page', { headers: { 'accept-encoding': 'identity' } });
  seen = await seenUpstream();
  t.is(seen.length, 4, 'the POST purged the entry: the next GET goes upstream');
  t.is(seen[3]!.headers['if-none-match'], undefined, 'purged, not kept for revalidation');
  t.is(after.headers['x-cache'], 'MISS');
  t.regex(after.body.toString(), /version 2 of the page/);
});

test('a HEAD miss is asked upstream as a GET, so the page it stores serves the next GET; an origin that is down is a 502', async (t) => {
  const origin = spawnChild(t, fixture('origin-server.ts'));
  const { port: originPort } = await origin.waitForJson<{ port: number }>((m) => typeof m.port === 'number');
  const proxy = await serve(t, [buffer({ cache: true }), proxyTo(`http://127.0.0.1:${originPort}`)]);
  const head = await proxy.request('/page', { method: 'HEAD' });
  t.is(head.status, 200);
  t.is(head.body.length, 0);
  const seen = JSON.parse((await rawRequest(originPort, '/__seen')).body.toString()) as Seen[];
  t.deepEqual(
    seen.map((s) => s.method),
    ['GET'],
  );
  const get = await proxy.request('/page', { headers: { 'accept-encoding': 'identity' } });
  t.is(get.headers['x-cache'], 'HIT');
  t.regex(get.body.toString(), /version 1 of the page/, 'the whole page was stored');

  await origin.kill('SIGKILL');
  const down = await proxy.request('/elsewhere');
  t.is(down.status, 502);
});
