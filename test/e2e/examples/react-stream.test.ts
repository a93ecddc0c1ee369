/**
 * examples/react-stream/server.ts in headless Chromium: the page React 19
 * streams (a shell at once, a Suspense boundary's content a second later)
 * paints its shell as early through koa-buffer's br and zstd as sent
 * uncompressed, and ends as the same document.
 *
 * Each coding is loaded LOADS times, alternating with the others load by
 * load so that a busy moment of this shared machine falls on all of them;
 * the medians of the first contentful paints are compared. Scripts run here
 * (unlike the render tests): React's inline script moves the reviews into
 * place, and the finished DOM is what is compared.
 */
import test from 'ava';
import { chromium, type Page } from 'playwright-core';
import { chromiumPath, chromiumSkipReason } from '../../helpers/chromium.ts';
import { startExample } from '../../helpers/examples.ts';

/** Loads of each coding. */
const LOADS = 7;

/** How much later than the uncompressed page's a compressed page's first paint may come (median against median). */
const PAINT_SLACK_MS = 50;

/** Navigation start to the first contentful paint, and the finished page. */
interface Load {
  paint: number;
  responseEnd: number;
  text: string;
  coding: string | undefined;
}

// The little of the DOM the page functions use, declared here because the project compiles for Node.
declare const document: { body: { innerText: string }; getElementById(id: string): unknown };
declare const performance: {
  getEntriesByName(name: string): Array<{ startTime: number }>;
  getEntriesByType(type: string): Array<{ responseEnd: number }>;
};

const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
};

async function load(page: Page, url: string): Promise<Load> {
  const response = await page.goto(url, { waitUntil: 'load', timeout: 30_000 });
  // React's inline script swaps the reviews in for the fallback once they arrive.
  await page.waitForFunction(() => document.getElementById('reviews') !== null && !document.getElementById('fallback'));
  await page.waitForFunction(() => performance.getEntriesByName('first-contentful-paint').length > 0);
  const measured = await page.evaluate(() => ({
    paint: performance.getEntriesByName('first-contentful-paint')[0]!.startTime,
    responseEnd: performance.getEntriesByType('navigation')[0]!.responseEnd,
    text: document.body.innerText,
  }));
  return { ...measured, coding: response?.headers()['content-encoding'] };
}

const title =
  'the React shell paints as early through koa-buffer (br, zstd) as uncompressed, and the page ends the same';
(chromiumSkipReason === undefined ? test : test.skip)(
  chromiumSkipReason === undefined ? title : `${title} (skipped: ${chromiumSkipReason})`,
  async (t) => {
    t.timeout(180_000);
    const app = await startExample(t, 'react-stream/server.ts');
    const browser = await chromium.launch({
      executablePath: chromiumPath,
      headless: true,
      args: ['--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-sync'],
      timeout: 60_000,
    });
    t.teardown(() => browser.close());
    // One page for every load: each navigation is a new document with its own paint timing, in a renderer
    // already running, so a load measures the response and its paint rather than a process starting.
    const page = await (await browser.newContext({ viewport: { width: 1024, height: 768 } })).newPage();
    const codings = ['identity', 'br', 'zstd'] as const;
    const loads: Record<(typeof codings)[number], Load[]> = { identity: [], br: [], zstd: [] };
    await load(page, `${app.base}/?coding=identity&warm`); // the first load starts the renderer and JITs the server
    for (let round = 0; round < LOADS; round++) {
      for (let i = 0; i < codings.length; i++) {
        const coding = codings[(round + i) % codings.length]!;
        loads[coding].push(await load(page, `${app.base}/?coding=${coding}&n=${round}`));
      }
    }
    const paints = Object.fromEntries(codings.map((c) => [c, loads[c].map((l) => Math.round(l.paint))]));
    t.log(`first contentful paint, ms after navigation start, ${LOADS} loads each: ${JSON.stringify(paints)}`);
    t.log(
      `response end: ${JSON.stringify(Object.fromEntries(codings.map((c) => [c, loads[c].map((l) => Math.round(l.responseEnd))])))}`,
    );

    for (const coding of codings) {
      for (const l of loads[coding]) {
        t.is(l.coding, coding === 'identity' ? undefined : coding, `?coding=${coding} is sent as such`);
        // The shell painted before the page's last bytes came (the reviews, a second after it): it was not held
        // back until the stream ended, as a compressor that is never flushed holds it.
        t.true(
          l.paint < l.responseEnd - 100,
          `${coding}: painted at ${l.paint} ms, the response ended at ${l.responseEnd} ms`,
        );
        t.is(l.text, loads.identity[0]!.text, `${coding}: the finished page reads the same`);
      }
    }
    t.regex(loads.identity[0]!.text, /Reader 12/, 'the reviews are in the finished page');
    const identity = median(paints.identity!);
    for (const coding of ['br', 'zstd'] as const) {
      const paint = median(paints[coding]!);
      t.true(
        paint <= identity + PAINT_SLACK_MS,
        `${coding}: median first paint ${paint} ms, uncompressed ${identity} ms (at most ${PAINT_SLACK_MS} ms later)`,
      );
    }
  },
);
