/**
 * Found by test/security/poisoning.test.ts: the cache key holds the host,
 * path and query of a request, but the request target can carry more that
 * the action sees through ctx.url, ctx.originalUrl and ctx.href: an
 * absolute-form target (`GET http://evil.example/page`, RFC 9112 3.2.2,
 * with Host: good.example) or a fragment (`GET /page#"><script>…`, which
 * clients never send but an attacker can). An action echoing ctx.href (a
 * canonical link) built such a page under the key of the plain `GET /page`,
 * and every later visitor of /page was served it. Such requests now bypass
 * the cache (Cache-Status detail=REQUEST-TARGET): the action runs for them,
 * and nothing is stored or replayed.
 */
import { connect } from 'node:net';
import test from 'ava';
import { buffer } from '../../src/buffer.ts';
import { serve } from '../helpers/serve.ts';

/** A raw request line, since Node's client always sends origin form. */
function rawGet(port: number, target: string, host: string): Promise<{ head: string; body: string }> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1', () =>
      socket.write(`GET ${target} HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`),
    );
    let out = '';
    socket.setEncoding('latin1').on('data', (chunk: string) => (out += chunk));
    socket.on('error', reject);
    socket.on('end', () => {
      const at = out.indexOf('\r\n\r\n');
      resolve({ head: out.slice(0, at), body: out.slice(at + 4) });
    });
  });
}

const cacheStatus = (head: string): string | undefined => /^cache-status: (.*)$/im.exec(head)?.[1];

for (const target of ['http://evil.example/page', '/page#"><script>alert(1)</script>', 'HTTP://evil.example/page?']) {
  test(`a request for ${JSON.stringify(target)} bypasses the cache, and the plain /page never gets its page`, async (t) => {
    let runs = 0;
    const server = await serve(t, [
      buffer({ cache: true, varyBy: [] }),
      async (ctx) => {
        if (await ctx.bufferIsCached()) return;
        runs++;
        ctx.type = 'html';
        ctx.body = `<link rel="canonical" href="${ctx.href}"><p>${ctx.url}</p>`;
      },
    ]);
    const attack = await rawGet(server.port, target, 'good.example');
    t.is(cacheStatus(attack.head), 'koa-buffer; fwd=bypass; detail=REQUEST-TARGET');
    const victim = await rawGet(server.port, '/page', 'good.example');
    t.is(
      victim.body,
      '<link rel="canonical" href="http://good.example/page"><p>/page</p>',
      'the victim gets the page of its own request',
    );
    t.is(cacheStatus(victim.head), 'koa-buffer; fwd=miss; stored');
    const again = await rawGet(server.port, target, 'good.example');
    t.is(
      cacheStatus(again.head),
      'koa-buffer; fwd=bypass; detail=REQUEST-TARGET',
      'nor does the attacker get the stored page back under the other form',
    );
    t.is(runs, 3);
  });
}
