/**
 * The squasher's rendering guarantee on its corpus: every page of
 * support/squash-corpus renders in headless Chromium with the same
 * `document.body.innerText`, title, rendering mode, element boxes (to the
 * pixel) and link targets before and after squashing (level 1, with the
 * per-page options of cases.json: link rewriting for the rewrite fixtures,
 * each page then served at its own host and path).
 */
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import test from 'ava';
import { core, twins } from '../../src/native/core.ts';
import type { SquashOptions } from '../../src/native/types.ts';
import { chromiumSkipReason, firstDifference, Renderer, type Rendering } from '../helpers/chromium.ts';
import { renderTest } from '../helpers/render-test.ts';

const dir = fileURLToPath(new URL('../../support/squash-corpus/', import.meta.url));
const cases = JSON.parse(readFileSync(`${dir}cases.json`, 'utf8')) as Record<string, SquashOptions>;
const names = readdirSync(dir)
  .filter((f) => f.endsWith('.html') && !f.endsWith('.expected.html'))
  .sort();

interface Pair {
  original: Rendering;
  squashed: Rendering;
  shrunk: number;
}

let renderer: Renderer | undefined;
let rendered: Promise<Map<string, Pair>> | undefined;

async function renderAll(): Promise<Map<string, Pair>> {
  renderer = await Renderer.launch();
  const pages = names.map((name) => {
    const options: SquashOptions = { level: 1, ...cases[name] };
    const url = options.host ? `http://${options.host}${options.path ?? '/'}` : `http://fixtures.test/${name}`;
    const original = readFileSync(dir + name);
    const squashed = core.squashHtml(original, options);
    if (!squashed.equals(twins.squashHtml(original, options)))
      throw new Error(`${name}: native and twin squash differently`);
    return { name, url, original, squashed };
  });
  const before = await renderer.render(pages.map((p) => ({ url: p.url, body: p.original })));
  const after = await renderer.render(pages.map((p) => ({ url: p.url, body: p.squashed })));
  return new Map(
    pages.map((p, i) => [
      p.name,
      { original: before[i]!, squashed: after[i]!, shrunk: p.original.length - p.squashed.length },
    ]),
  );
}

test.before(() => {
  if (chromiumSkipReason !== undefined) return;
  rendered = renderAll();
  rendered.catch(() => undefined); // reported by every test that awaits it
});

test.after.always(async () => {
  await rendered?.catch(() => undefined);
  await renderer?.close();
});

for (const name of names) {
  renderTest(`${name} renders the same text, boxes and links squashed as original`, async (t) => {
    const pair = (await rendered!).get(name)!;
    t.true(pair.original.elements.length > 0, 'the page rendered some elements');
    t.is(
      firstDifference(pair.original, pair.squashed),
      undefined,
      `${name}: the squashed page should render exactly as the original`,
    );
    t.log(`${pair.original.elements.length} elements, ${pair.shrunk} bytes saved`);
  });
}
