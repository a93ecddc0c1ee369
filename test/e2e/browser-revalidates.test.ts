/**
 * What the heuristic-freshness guard changes in a real browser: Chromium
 * loads a page dated thirty days back twice. Without a Cache-Control the
 * second load is taken from its HTTP cache without asking the server (RFC
 * 9111 4.2.2 heuristic freshness); with koa-buffer's default
 * `Cache-Control: no-cache` the second load reaches the server, which
 * answers 304.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { chromium } from 'playwright-core';
import { buffer } from '../../src/buffer.ts';
import type { BufferOptions } from '../../src/config/options.ts';
import { CHROMIUM_FLAGS, chromiumPath, chromiumSkipReason } from '../helpers/chromium.ts';
import { serve } from '../helpers/serve.ts';

/** The render tests' flags, with loopback let through the resolver that resolves nothing else. */
const flags = CHROMIUM_FLAGS.map((flag) =>
  flag.startsWith('--host-resolver-rules=') ? '--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1' : flag,
);

const thirtyDaysAgo = Math.floor(Date.now() / 1000) - 30 * 24 * 3600;

/** Loads the page twice (about:blank between, so the second is a plain navigation, not a reload); the requests the server saw. */
async function twoLoads(t: Parameters<typeof serve>[0], options: BufferOptions): Promise<Array<{ status: number }>> {
  const seen: Array<{ status: number }> = [];
  const server = await serve(t, [
    async (ctx, next) => {
      await next();
      if (ctx.path === '/report') seen.push({ status: ctx.status }); // the favicon request is not the page
    },
    buffer({ lastModified: thirtyDaysAgo, ...options }),
    (ctx) => {
      ctx.body = '<!doctype html><title>report</title><p>figures of the day</p>';
    },
  ]);
  const profile = mkdtempSync(join(tmpdir(), 'kb-chromium-cache-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: chromiumPath,
    headless: true,
    args: flags,
    javaScriptEnabled: false,
    timeout: 60_000,
  });
  try {
    const page = await context.newPage();
    const url = `http://127.0.0.1:${server.port}/report`;
    t.is((await page.goto(url))?.status(), 200);
    await page.goto('about:blank');
    await page.goto(url);
    t.is(await page.textContent('p'), 'figures of the day');
  } finally {
    await context.close();
    rmSync(profile, { recursive: true, force: true });
  }
  return seen;
}

const browserTest = chromiumSkipReason === undefined ? test.serial : test.serial.skip;
if (chromiumSkipReason !== undefined) console.log(`browser-revalidates: skipped, ${chromiumSkipReason}`);

browserTest('with the default Cache-Control: no-cache the second load asks the server, and gets a 304', async (t) => {
  const seen = await twoLoads(t, {});
  t.deepEqual(seen, [{ status: 200 }, { status: 304 }]);
});

browserTest('control: with the guard off the browser holds the page fresh and never asks again', async (t) => {
  const seen = await twoLoads(t, { defaultCacheControl: false });
  t.deepEqual(seen, [{ status: 200 }]);
});
