/**
 * The squasher's rendering guarantee on 200 generated documents
 * (test/fixtures/render/page-generator.ts, fixed seeds): each renders in
 * headless Chromium with the same innerText, title, rendering mode, element
 * boxes and link targets before and after squashing at level 1; every other
 * page is squashed with link rewriting for the host and path it is served at.
 * Pages are rendered 25 to a navigation (one iframe each).
 */
import test from 'ava';
import { core } from '../../src/native/core.ts';
import { generatePage } from '../fixtures/render/page-generator.ts';
import { firstDifference, Renderer } from '../helpers/chromium.ts';
import { renderTest } from '../helpers/render-test.ts';

const PAGES = 200;
const BATCH = 25;

let renderer: Promise<Renderer> | undefined;

test.after.always(async () => {
  await (await renderer?.catch(() => undefined))?.close();
});

for (let from = 0; from < PAGES; from += BATCH) {
  const to = Math.min(PAGES, from + BATCH) - 1;
  renderTest(`generated pages ${from}-${to} render the same text, boxes and links squashed as original`, async (t) => {
    renderer ??= Renderer.launch();
    const browser = await renderer;
    const pages = [];
    for (let i = from; i <= to; i++) {
      const page = generatePage(i);
      const options = { level: 1, rewriteLinks: page.rewriteLinks, host: page.host, path: page.path };
      pages.push({ ...page, url: `http://${page.host}${page.path}`, squashed: core.squashHtml(page.html, options) });
    }
    // Each page has a host of its own, so one navigation renders all originals and one all squashed.
    const before = await browser.render(pages.map((p) => ({ url: p.url, body: p.html })));
    const after = await browser.render(pages.map((p) => ({ url: p.url, body: p.squashed })));
    let elements = 0;
    let saved = 0;
    pages.forEach((page, i) => {
      const difference = firstDifference(before[i]!, after[i]!);
      t.is(
        difference,
        undefined,
        `page ${page.index} (http://${page.host}${page.path}, rewriteLinks ${page.rewriteLinks}) should render the same squashed; ` +
          `see it with: node --import tsx test/fixtures/render/page-generator.ts ${page.index}`,
      );
      t.true(before[i]!.elements.length > 5, `page ${page.index} rendered its elements`);
      elements += before[i]!.elements.length;
      saved += page.html.length - page.squashed.length;
    });
    t.true(saved > 0, 'squashing changed the pages (else there was nothing to compare)');
    t.log(`${pages.length} pages, ${elements} elements compared, ${saved} bytes saved`);
  });
}
