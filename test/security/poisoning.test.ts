/**
 * Cache poisoning attempts (issue 7) against a real server: an attacker
 * shapes a request so that the page built for it is stored under the key a
 * victim's ordinary request will read. The pages echo what an application
 * typically echoes (ctx.host, ctx.href, ctx.url), so a poisoned entry would
 * show in the victim's body.
 *
 * Host and X-Forwarded-Host, with and without `app.proxy`; the request
 * target (absolute form, fragment); X-Forwarded-Proto, whose scheme joins
 * the key with app.proxy. Classic collisions of a
 * joined key are in test/cache/key.test.ts; visitors' secrets under
 * concurrency in visitors.test.ts.
 */
import { connect } from 'node:net';
import test, { type ExecutionContext } from 'ava';
import Koa from 'koa';
import { buffer } from '../../src/buffer.ts';
import type { BufferOptions } from '../../src/config/options.ts';
import { koaMajor } from '../helpers/koa-version.ts';
import { serve, type Served } from '../helpers/serve.ts';

/** A site whose page echoes the host, origin and target it was built for. */
async function site(
  t: ExecutionContext,
  proxy: boolean,
  options: BufferOptions = {},
): Promise<{ server: Served; runs: () => number }> {
  const app = new Koa();
  app.proxy = proxy;
  let runs = 0;
  app.use(buffer({ cache: true, varyBy: [], ...options }));
  app.use(async (ctx) => {
    if (await ctx.bufferIsCached()) return;
    runs++;
    // A build takes a moment, so concurrent attackers and victims meet in one flight when their keys agree.
    await new Promise((resolve) => setTimeout(resolve, 30));
    ctx.type = 'html';
    ctx.body = `<link rel="canonical" href="${ctx.href}"><base href="${ctx.protocol}://${ctx.host}/"><p>host=${ctx.host} url=${ctx.url} proto=${ctx.protocol}</p>`;
  });
  return { server: await serve(t, app), runs: () => runs };
}

/** The headers an attacker sends (Host included), and how each is written on the wire. */
const attacks: Array<Record<string, string>> = [
  { host: 'evil.example' },
  { host: 'good.example', 'x-forwarded-host': 'evil.example' },
  { host: 'good.example', 'x-forwarded-host': 'evil.example, good.example' },
  { host: 'good.example', 'x-forwarded-host': 'evil.example:443' },
  { host: 'evil.example', 'x-forwarded-host': 'good.example, evil.example' },
  { host: 'good.example:80', 'x-forwarded-host': 'evil.example' },
  { host: 'GOOD.example', 'x-forwarded-host': '  evil.example' },
  { host: 'good.example.', 'x-forwarded-host': 'evil.example' },
  { host: 'good.example', 'x-forwarded-host': 'good.example/../evil.example' },
  { host: 'good.example', forwarded: 'host=evil.example' },
];

for (const proxy of [false, true]) {
  test(`app.proxy ${proxy}: Host and X-Forwarded-Host variations never put an attacker's page in front of a visitor of good.example, sent before or together with it`, async (t) => {
    const { server } = await site(t, proxy);
    // Behind a proxy the visitor's request carries the X-Forwarded-Host the proxy set.
    const victimHeaders: Record<string, string> = proxy
      ? { host: '10.0.0.1:8080', 'x-forwarded-host': 'good.example' }
      : { host: 'good.example' };
    const expected =
      '<link rel="canonical" href="http://good.example/page"><base href="http://good.example/"><p>host=good.example url=/page proto=http</p>';
    for (const attack of attacks) {
      // First the attacker alone (a poisoned entry would be stored), then attacker and victims at once (one flight).
      await server.request('/page', { headers: attack });
      const together = await Promise.all([
        server.request('/page', { headers: attack }),
        ...Array.from({ length: 3 }, () => server.request('/page', { headers: victimHeaders })),
      ]);
      for (const victim of together.slice(1)) {
        t.is(victim.status, 200);
        t.is(
          victim.body.toString(),
          expected,
          `after ${JSON.stringify(attack)} the visitor gets the page of good.example`,
        );
      }
    }
    const last = await server.request('/page', { headers: victimHeaders });
    t.is(last.body.toString(), expected);
    t.is(last.headers['x-cache'], 'HIT', 'and it is a cached page, so the cache was in play');
  });
}

/** A raw request line, since Node's client always sends origin form. */
function rawGet(port: number, target: string, host: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () =>
      socket.write(`GET ${target} HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`),
    );
    let out = '';
    socket.setEncoding('latin1').on('data', (chunk: string) => (out += chunk));
    socket.on('error', reject);
    socket.on('end', () => resolve(out));
  });
}

test('request targets that carry more than host, path and query (absolute form, a fragment, odd forms) never poison the plain page', async (t) => {
  const { server } = await site(t, false);
  const targets = [
    'http://evil.example/page',
    'https://evil.example/page',
    'http://good.example@evil.example/page',
    'HTTP://EVIL.example/page',
    '/page#x',
    '/page#"><script>alert(1)</script>',
    '/page?#',
    'page',
    '*',
  ];
  for (const target of targets) {
    const answer = await rawGet(server.port, target, 'good.example');
    t.notRegex(
      answer,
      /cache-status: koa-buffer; (hit|fwd=miss; stored)/i,
      `${target} neither stores nor reads an entry`,
    );
  }
  const victim = await server.request('/page', { headers: { host: 'good.example' } });
  t.is(
    victim.body.toString(),
    '<link rel="canonical" href="http://good.example/page"><base href="http://good.example/"><p>host=good.example url=/page proto=http</p>',
  );
  // And the other way round: the entry a visitor stored is not replayed to those forms either.
  for (const target of targets.slice(0, 6)) {
    t.notRegex(
      await rawGet(server.port, target, 'good.example'),
      /x-cache: HIT/i,
      `${target} is not answered from the stored page`,
    );
  }
});

test("a page that echoes a request header outside the key (Koa 3's ctx.origin is the Origin header; Koa 2's is the request's own) is shared, unless the response says Vary or varyBy names it", async (t) => {
  let runs = 0;
  const server = await serve(t, [
    buffer({ cache: true, varyBy: [] }),
    async (ctx) => {
      if (await ctx.bufferIsCached()) return;
      runs++;
      if (ctx.path === '/vary') ctx.vary('Origin');
      ctx.type = 'html';
      ctx.body = `<p>origin=${ctx.origin}</p>`;
    },
  ]);
  // Koa 2's ctx.origin is the request's own protocol and host, which the key holds: there it leaks nothing.
  const own = koaMajor === 2 ? `http://127.0.0.1:${server.port}` : undefined;
  await server.request('/plain', { headers: { origin: 'https://evil.example' } });
  const shared = await server.request('/plain');
  t.is(
    shared.body.toString(),
    `<p>origin=${own ?? 'https://evil.example'}</p>`,
    'the documented limit: what the key does not hold is shared (SECURITY.md)',
  );
  const attack = await server.request('/vary', { headers: { origin: 'https://evil.example' } });
  t.is(
    attack.headers['cache-status'],
    'koa-buffer; fwd=miss; stored',
    'a response varying on a header outside varyBy is stored as the variant of that header’s value',
  );
  t.is(
    (await server.request('/vary')).body.toString(),
    `<p>origin=${own ?? 'null'}</p>`,
    'so the next visitor gets its own page',
  );
  const again = await server.request('/vary', { headers: { origin: 'https://evil.example' } });
  t.is(again.headers['x-cache'], 'HIT', 'and only a request from that Origin gets the stored one');
  t.is(runs, 3);
});

test('X-Forwarded-Proto joins the key with app.proxy: a page built for one scheme is never served for the other', async (t) => {
  const proxied = await site(t, true);
  const plain = await proxied.server.request('/page', {
    headers: { host: 'good.example', 'x-forwarded-proto': 'http' },
  });
  const https = await proxied.server.request('/page', {
    headers: { host: 'good.example', 'x-forwarded-proto': 'https' },
  });
  t.regex(plain.body.toString(), /proto=http</);
  t.regex(https.body.toString(), /proto=https</, 'each scheme has its own entry');
  t.is(proxied.runs(), 2);
  const again = await proxied.server.request('/page', {
    headers: { host: 'good.example', 'x-forwarded-proto': 'https' },
  });
  t.regex(again.body.toString(), /proto=https</, 'and each is a hit for its own scheme');
  t.is(proxied.runs(), 2);
});
