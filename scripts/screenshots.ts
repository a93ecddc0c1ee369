/**
 * `npm run screenshots`: the README's two images, made again from the real
 * thing so they stay current.
 *
 * - docs/images/dashboard.png: the demo (started on a free port with a
 *   fresh data directory) opened in headless Chromium, its live panel filled
 *   in, the stampede button pressed and the counters read after it;
 * - docs/images/bench-chart.png: bench/results/latest.svg as Chromium draws
 *   it (redraw the SVG first with `npm run bench:chart` if latest.json changed).
 *
 * Needs Debian's chromium (or KB_CHROMIUM naming another binary).
 */
import { existsSync, mkdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { chromiumPath } from '../test/helpers/chromium.ts';
import { launchScriptedChromium, openDashboard, runStampede, startDemo } from '../test/helpers/dashboard.ts';
import { repoRoot } from '../test/helpers/examples.ts';

const imagesDir = join(repoRoot, 'docs', 'images');
const chartSvg = join(repoRoot, 'bench', 'results', 'latest.svg');

if (!existsSync(chromiumPath)) {
  console.error(`screenshots: no Chromium at ${chromiumPath}; install chromium (Debian package chromium)`);
  process.exit(1);
}
mkdirSync(imagesDir, { recursive: true });

const demo = await startDemo();
const browser = await launchScriptedChromium();
try {
  const page = await browser.newPage({ viewport: { width: 1100, height: 900 }, deviceScaleFactor: 1 });
  page.on('pageerror', (error) => console.error(`screenshots: the dashboard's script failed: ${error.message}`));
  await openDashboard(page, demo.base);
  await runStampede(page);
  // The counters are polled every second: wait for a reading begun after the stampede ended.
  const polls = Number(await page.locator('#dashboard-counters').getAttribute('data-polls'));
  await page.waitForSelector(`#dashboard-counters[data-polls="${polls + 2}"]`, { timeout: 10_000 });
  const verdict = await page.locator('[data-result="stampede"] .verdict').innerText();
  await page.locator('#dashboard').screenshot({ path: join(imagesDir, 'dashboard.png') });
  console.log(`Wrote docs/images/dashboard.png (${verdict.replace(/\s+/g, ' ').trim()})`);

  const svg = readFileSync(chartSvg, 'utf8');
  const size = /<svg[^>]* width="(\d+)" height="(\d+)"/.exec(svg);
  if (!size) throw new Error(`${chartSvg} has no width and height on its <svg>`);
  const chart = await browser.newPage({
    viewport: { width: Number(size[1]), height: Number(size[2]) },
    deviceScaleFactor: 1,
  });
  await chart.setContent(`<!doctype html><body style="margin:0">${svg}</body>`);
  await chart
    .locator('svg')
    .first()
    .screenshot({ path: join(imagesDir, 'bench-chart.png') });
  console.log('Wrote docs/images/bench-chart.png');
} finally {
  await browser.close();
  await demo.stop();
}
