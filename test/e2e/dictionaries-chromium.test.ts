/**
 * Compression dictionaries in a real browser: Chromium loads a page offered
 * as a dictionary over http://127.0.0.1 (a secure context), the page
 * changes, Chromium loads it again; the second load names the first as its
 * Available-Dictionary, gets `Content-Encoding: dcz` (DevTools Protocol
 * Network events) and shows the new page.
 *
 * Debian's Chromium 156, headless, sends no `dcz` in Accept-Encoding unless
 * the features are switched on with
 * `--enable-features=CompressionDictionaryTransport,CompressionDictionaryTransportBackend`
 * (measured: without them Accept-Encoding is `gzip, deflate, br, zstd` on every
 * load). And Chromium uses a dictionary only while its response is fresh in
 * the HTTP cache, so the page is sent `Cache-Control: max-age=60` (never
 * `private`: a private response is never offered as a dictionary);
 * with `no-cache` it would take the rule's `ttl` and Chromium's
 * `CompressionDictionaryTTL` feature, tested below too.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test, { type ExecutionContext } from 'ava';
import { chromium } from 'playwright-core';
import { buffer } from '../../src/buffer.ts';
import type { DictionaryRuleOption } from '../../src/config/dictionaries.ts';
import { CHROMIUM_FLAGS, chromiumPath, chromiumSkipReason } from '../helpers/chromium.ts';
import { availableHeader } from '../helpers/dcz.ts';
import { serve } from '../helpers/serve.ts';

const flags = (features: string): string[] => [
  ...CHROMIUM_FLAGS.map((flag) =>
    flag.startsWith('--host-resolver-rules=') ? '--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1' : flag,
  ),
  `--enable-features=${features}`,
];

const page = (stamp: string): string =>
  `<!doctype html><html><head><title>stamp</title></head><body><p id="stamp">${stamp}</p>${'<p>The same paragraph of news on every version of the page.</p>'.repeat(300)}</body></html>`;

interface Seen {
  available: string | undefined;
  acceptEncoding: string | undefined;
  status: number;
  coding: string | undefined;
}

/** Two loads of a page that changes between them; what the server saw and what the browser reported. */
async function twoLoads(
  t: ExecutionContext,
  features: string,
  rule: DictionaryRuleOption,
  cacheControl: string,
): Promise<{ seen: Seen[]; encodings: Array<string | undefined>; texts: string[] }> {
  let stamp = 'first version';
  const seen: Seen[] = [];
  const server = await serve(t, [
    async (ctx, next) => {
      await next();
      if (ctx.path !== '/news') return;
      seen.push({
        available: ctx.get('available-dictionary') || undefined,
        acceptEncoding: ctx.get('accept-encoding') || undefined,
        status: ctx.status,
        coding: ctx.response.get('content-encoding') || undefined,
      });
    },
    buffer({ dictionaries: [rule], lastModified: false }),
    (ctx) => {
      ctx.type = 'html';
      ctx.set('Cache-Control', cacheControl);
      ctx.body = page(stamp);
    },
  ]);
  const profile = mkdtempSync(join(tmpdir(), 'kb-chromium-dict-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: chromiumPath,
    headless: true,
    args: flags(features),
    javaScriptEnabled: false,
    timeout: 60_000,
  });
  const encodings: Array<string | undefined> = [];
  const texts: string[] = [];
  try {
    const tab = await context.newPage();
    const cdp = await context.newCDPSession(tab);
    await cdp.send('Network.enable');
    cdp.on('Network.responseReceived', (event) => {
      if (!event.response.url.endsWith('/news')) return;
      const headers = event.response.headers as Record<string, string>;
      encodings.push(Object.entries(headers).find(([name]) => name.toLowerCase() === 'content-encoding')?.[1]);
    });
    const url = `http://127.0.0.1:${server.port}/news`;
    await tab.goto(url);
    texts.push((await tab.textContent('#stamp')) ?? '');
    // The dictionary is written to the browser's store after the response completes.
    await new Promise((resolve) => setTimeout(resolve, 1000));
    stamp = 'second version';
    await tab.reload();
    texts.push((await tab.textContent('#stamp')) ?? '');
  } finally {
    await context.close();
    rmSync(profile, { recursive: true, force: true });
  }
  return { seen, encodings, texts };
}

const browserTest = chromiumSkipReason === undefined ? test.serial : test.serial.skip;
if (chromiumSkipReason !== undefined) console.log(`dictionaries-chromium: skipped, ${chromiumSkipReason}`);

const transport = 'CompressionDictionaryTransport,CompressionDictionaryTransportBackend';

browserTest('Chromium names the first version as its dictionary and gets the second as dcz', async (t) => {
  const { seen, encodings, texts } = await twoLoads(t, transport, { match: '/news' }, 'max-age=60');
  t.deepEqual(texts, ['first version', 'second version']);
  t.is(seen.length, 2, JSON.stringify(seen));
  t.is(seen[0]!.available, undefined);
  t.is(seen[1]!.available, availableHeader(Buffer.from(page('first version'))));
  t.regex(seen[1]!.acceptEncoding ?? '', /\bdcz\b/);
  t.is(seen[1]!.status, 200);
  t.is(seen[1]!.coding, 'dcz');
  t.is(encodings.at(-1), 'dcz', 'DevTools reports the dcz coding');
});

browserTest(
  "a no-cache page is a dictionary through the rule's ttl (Chromium's CompressionDictionaryTTL)",
  async (t) => {
    const { seen, texts } = await twoLoads(
      t,
      `${transport},CompressionDictionaryTTL`,
      { match: '/news', ttl: '10 minutes' },
      'no-cache',
    );
    t.deepEqual(texts, ['first version', 'second version']);
    t.is(seen.at(-1)!.coding, 'dcz', JSON.stringify(seen));
  },
);

browserTest('control: without the ttl a no-cache page is never used as a dictionary', async (t) => {
  const { seen, texts } = await twoLoads(t, `${transport},CompressionDictionaryTTL`, { match: '/news' }, 'no-cache');
  t.deepEqual(texts, ['first version', 'second version']);
  t.is(seen.at(-1)!.available, undefined);
  t.not(seen.at(-1)!.coding, 'dcz');
});
