/**
 * The demo panel's stale-while-revalidate button in a real browser (Debian's
 * chromium through playwright-core): once /stale is past its fresh seconds,
 * the ten requests the button sends are all answered stale, counted and
 * drawn as STALE, and the build log, the truth the panel reads, grows by one
 * build for all of them.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import test from 'ava';
import type { Browser, Page } from 'playwright-core';
import { staleFreshSeconds } from '../../../examples/demo/pages/stale.ts';
import { chromiumSkipReason } from '../../helpers/chromium.ts';
import { type DemoSite, launchScriptedChromium, openDashboard, startDemo } from '../../helpers/dashboard.ts';
import { rawRequest } from '../../helpers/serve.ts';

/** An element in the page, as evaluated: the tests read attributes only (React's types leave Element empty without the DOM lib). */
type Attributed = { getAttribute(name: string): string | null };

const serial = chromiumSkipReason === undefined ? test.serial : test.skip;
const skipped = chromiumSkipReason === undefined ? '' : ` (skipped: ${chromiumSkipReason})`;

let demo: DemoSite | undefined;
let browser: Browser | undefined;
let page: Page;
const pageErrors: string[] = [];

test.before(async () => {
  if (chromiumSkipReason !== undefined) return;
  demo = await startDemo();
  browser = await launchScriptedChromium();
  page = await browser.newPage({ viewport: { width: 1100, height: 900 } });
  page.on('pageerror', (error) => pageErrors.push(error.message));
});

test.after.always(async () => {
  await browser?.close();
  await demo?.stop();
});

const staleBuilds = (): string[] =>
  readFileSync(join(demo!.dataDir, 'report-builds.log'), 'utf8')
    .split('\n')
    .filter((line) => line.endsWith(' /stale'));

serial(
  `the stale button's ten requests at an expired page are all answered stale, for one build${skipped}`,
  async (t) => {
    await openDashboard(page, demo!.base);
    const port = Number(new URL(demo!.base).port);
    await rawRequest(port, '/stale'); // builds it
    t.is(staleBuilds().length, 1);
    await sleep(staleFreshSeconds * 1000 + 200);
    await page.click('button[data-action="stale"]');
    await page.waitForSelector('[data-result="stale"][data-state="done"]', { timeout: 60_000 });
    t.deepEqual(pageErrors, [], 'the script ran without an error');
    const rows = await page.$$eval('[data-result="stale"] tbody tr', (trs) =>
      trs.map((tr) => ({ ...(tr as unknown as { dataset: Record<string, string> }).dataset })),
    );
    t.is(rows.length, 10);
    t.true(
      rows.every((r) => r.status === '200' && r.xcache === 'STALE'),
      `every request answered stale: ${rows.map((r) => r.xcache).join(' ')}`,
    );
    const verdict = page.locator('[data-result="stale"] .verdict');
    t.is(await verdict.getAttribute('data-requests'), '10');
    // STALE is a verdict of its own: not counted as HIT, not drawn as a response without X-Cache.
    t.deepEqual(
      [
        await verdict.getAttribute('data-stale'),
        await verdict.getAttribute('data-hit'),
        await verdict.getAttribute('data-miss'),
      ],
      ['10', '0', '0'],
    );
    t.regex(await verdict.innerText(), /X-Cache: 10 STALE\./);
    const dots = page.locator('[data-result="stale"] svg circle');
    const fills = await dots.evaluateAll((circles) => circles.map((c) => (c as Attributed).getAttribute('fill')));
    t.is(fills.length, 10);
    const legend = await page.locator('[data-result="stale"] .legend').innerHTML();
    const staleColour = /<span style="background:(#[0-9a-f]{6})"><\/span>STALE/.exec(legend)?.[1];
    t.truthy(staleColour, `the legend names STALE: ${legend}`);
    t.true(
      fills.every((fill) => fill === staleColour),
      `every dot in the STALE colour ${staleColour}: ${fills.join(' ')}`,
    );
    await sleep(1500); // the background refresh builds for a second
    t.is(staleBuilds().length, 2, 'one more build for all ten');
  },
);
