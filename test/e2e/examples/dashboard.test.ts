/**
 * The demo index's live panel in a real browser (Debian's chromium through
 * playwright-core): the demo runs as `npm start` runs it, the page's own
 * script fetches every listed URL, and what the panel shows is checked
 * against what the browser sent, what the server sends to the same request
 * over plain HTTP, and the report's build log; its counters of both workers
 * against /api/stats and the requests the test makes.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import test from 'ava';
import type { Browser, Page } from 'playwright-core';
import { liveRequests } from '../../../examples/demo/pages/dashboard.ts';
import { chromiumSkipReason } from '../../helpers/chromium.ts';
import {
  type DemoSite,
  launchScriptedChromium,
  openDashboard,
  runStampede,
  startDemo,
} from '../../helpers/dashboard.ts';
import { decode, rawRequest } from '../../helpers/serve.ts';

/** An element in the page, as evaluated: the tests read attributes only (React's types leave Element empty without the DOM lib). */
type Attributed = { getAttribute(name: string): string | null };

const serial = chromiumSkipReason === undefined ? test.serial : test.skip;
const skipped = chromiumSkipReason === undefined ? '' : ` (skipped: ${chromiumSkipReason})`;

/** The codings koa-buffer makes; which one it picks depends on the body's temperature (adaptive compression). */
const codings = ['br', 'zstd', 'gzip', 'deflate'];

let demo: DemoSite | undefined;
let browser: Browser | undefined;
let page: Page;
/** The Accept-Encoding of each request the browser made, by URL. */
const acceptEncoding = new Map<string, string>();
const pageErrors: string[] = [];

test.before(async () => {
  if (chromiumSkipReason !== undefined) return;
  demo = await startDemo();
  browser = await launchScriptedChromium();
  page = await browser.newPage({ viewport: { width: 1100, height: 900 } });
  page.on('pageerror', (error) => pageErrors.push(error.message));
  page.on('request', (request) => {
    // Accept-Encoding is added by the network stack: only allHeaders() sees it.
    void request.allHeaders().then(
      (headers) => acceptEncoding.set(request.url(), headers['accept-encoding'] ?? ''),
      () => undefined,
    );
  });
});

test.after.always(async () => {
  await browser?.close();
  await demo?.stop();
});

/** The rows of a result table, as the panel wrote them in data-* attributes. */
function rowsOf(selector: string): Promise<Array<Record<string, string>>> {
  return page.$$eval(`${selector} tbody tr`, (rows) =>
    rows.map((row) => ({ ...(row as unknown as { dataset: Record<string, string> }).dataset })),
  );
}

serial(
  `the panel fetches every listed page and shows its coding, sizes, cache verdict and worker${skipped}`,
  async (t) => {
    await openDashboard(page, demo!.base);
    t.deepEqual(pageErrors, [], 'the script ran without an error');
    const rows = await rowsOf('[data-result="refresh"]');
    t.deepEqual(
      rows.map((r) => r.path),
      liveRequests.map((r) => r.path),
      'one row per listed request, in order',
    );

    t.log(`Chromium sent Accept-Encoding: ${acceptEncoding.get(`${demo!.base}/article`)}`);
    for (const row of rows) {
      const url = `${demo!.base}${row.path}`;
      const sent = acceptEncoding.get(url);
      t.truthy(sent, `the browser's Accept-Encoding for ${row.path} was seen`);
      const offered = sent!.split(',').map((c) => c.trim().split(';')[0]);
      const leftAlone = row.path === '/article?buffer=off'; // /download is a stream: compressed as it is read
      const expected = leftAlone ? '' : codings.filter((c) => offered.includes(c)).join(' or ');
      t.is(row.status, '200', `${row.path} answered 200`);
      if (leftAlone) t.is(row.encoding, '', `${row.path}: no Content-Encoding`);
      else
        t.true(
          codings.includes(row.encoding!) && offered.includes(row.encoding!),
          `${row.path}: Content-Encoding ${row.encoding} is one of ${expected}, offered in "${sent}"`,
        );
      t.true(demo!.workers.map(String).includes(row.worker!), `${row.path}: answered by a demo worker (${row.worker})`);

      const wire = Number(row.wire);
      const size = Number(row.page);
      t.true(size > 0, `${row.path}: Resource Timing gave a decoded size (${row.page})`);
      if (expected === '') t.is(wire, size, `${row.path}: sent as it is, wire = page`);
      else t.true(wire < size * 0.7, `${row.path}: ${expected} saves more than 30% (${wire} of ${size} B)`);
    }

    // The sizes are the server's: the same request over plain HTTP gives the same bytes.
    for (const path of ['/article', '/api/products']) {
      const row = rows.find((r) => r.path === path)!;
      const direct = await rawRequest(Number(new URL(demo!.base).port), path, {
        headers: { 'Accept-Encoding': acceptEncoding.get(`${demo!.base}${path}`)! },
      });
      t.is(Number(row.wire), direct.body.length, `${path}: encodedBodySize is the body the server sends`);
      t.is(Number(row.page), decode(direct).length, `${path}: decodedBodySize is the page once decoded`);
    }

    const reports = rows.filter((r) => r.path === '/report');
    t.deepEqual(
      reports.map((r) => r.xcache),
      ['MISS', 'HIT'],
      'the report is built by the first request and is a hit for the second: the panel does not make koa-buffer bypass its cache',
    );
    t.true((await page.locator('#dashboard-bars .bar-row').count()) >= 7, 'a bar per distinct page with a body');
    t.true((await page.locator('#dashboard-strip circle').count()) === rows.length, 'a dot per request in the strip');
  },
);

serial(`the stampede button sends 20 requests at a cold report and shows exactly one build${skipped}`, async (t) => {
  await runStampede(page);
  t.deepEqual(pageErrors, [], 'the script ran without an error');
  const box = page.locator('[data-result="stampede"]');
  const verdict = box.locator('.verdict');
  t.is(await verdict.getAttribute('data-requests'), '20');
  t.is(await verdict.getAttribute('data-builds'), '1', await verdict.innerText());

  const rows = await rowsOf('[data-result="stampede"]');
  t.is(rows.length, 20);
  t.true(
    rows.every((r) => r.status === '200'),
    'every request was answered 200',
  );
  const paths = new Set(rows.map((r) => r.path));
  t.is(paths.size, 1, 'all twenty at one URL');
  const path = [...paths][0]!;
  t.regex(path, /^\/report\?stampede=[0-9a-z]+$/);
  const caches = rows.map((r) => r.xcache);
  t.is(caches.filter((c) => c === 'MISS').length, 1, `one request built it (X-Cache: ${caches.join(' ')})`);
  t.is(caches.filter((c) => c === 'HIT').length, 19, 'the nineteen others were answered from its build');

  // The build log is the truth the panel reports: one line for that URL.
  const log = readFileSync(join(demo!.dataDir, 'report-builds.log'), 'utf8').split('\n');
  const builds = log.filter((line) => line.endsWith(` ${path}`));
  t.is(builds.length, 1, `one build in the log: ${builds.join(' | ')}`);
  const builder = /pid=(\d+)/.exec(builds[0] ?? '')?.[1] ?? '(none)';
  t.is(await box.getAttribute('data-builder'), builder, 'the panel names the worker that built it');
  t.true(demo!.workers.map(String).includes(builder));
  t.is(await box.locator('svg circle').count(), 20, "a dot per request in the stampede's strip");
});

serial(`/api/builds lists the builds of one URL from the log, and refuses a missing url${skipped}`, async (t) => {
  const port = Number(new URL(demo!.base).port);
  const missing = await rawRequest(port, '/api/builds');
  t.is(missing.status, 400);
  t.regex(decode(missing).toString('utf8'), /url must be one path starting with \//);
  const absolute = await rawRequest(port, `/api/builds?url=${encodeURIComponent('http://example.com/report')}`);
  t.is(absolute.status, 400, 'a URL that is not a path is refused');

  const never = await rawRequest(port, `/api/builds?url=${encodeURIComponent('/report?never=asked')}`);
  t.deepEqual(JSON.parse(decode(never).toString('utf8')), { url: '/report?never=asked', builds: [] });
  const report = await rawRequest(port, `/api/builds?url=${encodeURIComponent('/report')}`);
  const { builds } = JSON.parse(decode(report).toString('utf8')) as { builds: Array<{ at: string; worker: number }> };
  t.is(builds.length, 1, 'the panel built /report once (its second request was a hit)');
  t.true(demo!.workers.includes(builds[0]!.worker));
  t.false(Number.isNaN(Date.parse(builds[0]!.at)));
  t.is(report.headers['cache-control'], 'no-store');
});

/** The number a counter of the panel shows, as its data-value says. */
async function shown(name: string): Promise<number> {
  return Number(await page.locator(`#dashboard-counters [data-counter="${name}"]`).getAttribute('data-value'));
}

/** Waits until the panel's poll shows `value` for the counter `name`; throws after 10 seconds. */
async function waitForCounter(name: string, value: number): Promise<void> {
  const deadline = Date.now() + 10_000;
  while ((await shown(name)) !== value) {
    if (Date.now() > deadline) throw new Error(`the panel still shows ${name} = ${await shown(name)}, not ${value}`);
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
}

serial(
  `the counters panel shows both workers' stats summed, and they visibly change after requests${skipped}`,
  async (t) => {
    const box = page.locator('#dashboard-counters');
    await page.waitForSelector('#dashboard-counters[data-state="live"]', { timeout: 10_000 });
    t.regex(await box.innerText(), /2 of 2 workers answered/);

    // What the panel shows is what /api/stats says (nothing else runs between the two reads).
    const port = Number(new URL(demo!.base).port);
    const api = JSON.parse(decode(await rawRequest(port, '/api/stats')).toString('utf8')) as {
      requests: Record<string, number>;
      builds: { started: number };
    };
    await waitForCounter('requests.total', api.requests.total!);
    const before = {
      hit: await shown('requests.hit'),
      miss: await shown('requests.miss'),
      total: await shown('requests.total'),
      builds: await shown('builds.started'),
    };
    t.deepEqual(before, {
      hit: api.requests.hit,
      miss: api.requests.miss,
      total: api.requests.total,
      builds: api.builds.started,
    });
    t.true(before.builds >= 2, `the panel's own report and stampede builds are counted (${before.builds})`);

    // A cold report: a miss that builds it, then a hit, on whichever workers.
    const path = `/report?counters=${Date.now()}`;
    t.is((await rawRequest(port, path)).headers['x-cache'], 'MISS');
    t.is((await rawRequest(port, path)).headers['x-cache'], 'HIT');
    // A poll made between the two requests may be drawn after them: wait for one that counts both.
    await waitForCounter('requests.total', before.total + 2);
    t.is(await shown('requests.hit'), before.hit + 1, 'one more hit');
    t.is(await shown('requests.miss'), before.miss + 1, 'one more miss');
    t.is(await shown('builds.started'), before.builds + 1, 'one more build');
    t.is(
      await box.locator('[data-counter="builds.started"]').innerText(),
      String(before.builds + 1),
      'the new count is on the screen',
    );
    const ratio = ((before.hit + 1) / (before.total + 2)) * 100;
    t.is(
      await box.locator('[data-counter="hitRatio"]').innerText(),
      `${ratio.toFixed(1)}%`,
      'hit ratio: fresh hits over every request through bufferIsCached()',
    );
    t.is(await shown('waiters.waited'), await shown('waiters.woken'), 'every waiter was woken by its build');
    t.is(await shown('waiters.refused'), 0);

    const saved = await box
      .locator('[data-counter$=".saved"]')
      .evaluateAll((cells) => cells.map((cell) => Number((cell as Attributed).getAttribute('data-value'))));
    t.true(
      saved.some((n) => n > 0),
      `some coding saved bytes: ${saved.join(', ')}`,
    );
    t.regex(
      await box.locator('[data-budget="memo"]').innerText(),
      /of 128\.0 MiB/,
      "the memory cache's budget, both workers' 64 MiB",
    );
  },
);
