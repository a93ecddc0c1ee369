/**
 * Pages styled the way real sites style menus, buttons, form rows, galleries
 * and stat cells: `li`, `a`, `button`, `label`, `input`, `select`, `img`,
 * `span`, `figure`, `form`, `dt` and `dd` displayed `inline-block`,
 * `inline-flex`, `inline-grid` or `inline`, with the white space between
 * them that then renders. Each page of test/fixtures/render/inline-display
 * is served through `buffer({ optimiseContent })` over loopback at every
 * level docs/compression.md says keeps rendering (1 squashes, 2 also minifies inline
 * CSS and JavaScript) and must render in headless Chromium with the same
 * text, boxes, links and screenshot as the page served with optimisation off.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import test from 'ava';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import Koa from 'koa';
import { buffer } from '../../src/buffer.ts';
import { core, twins } from '../../src/native/core.ts';
import { chromiumSkipReason, firstDifference, Renderer, type Rendering } from '../helpers/chromium.ts';
import { renderTest } from '../helpers/render-test.ts';
import { rawRequest } from '../helpers/serve.ts';

const dir = fileURLToPath(new URL('../fixtures/render/inline-display/', import.meta.url));
const names = readdirSync(dir)
  .filter((f) => f.endsWith('.html'))
  .sort();
/** optimiseContent 0 is the reference rendering; the others must match it. */
const LEVELS = [0, 1, 2] as const;
type Level = (typeof LEVELS)[number];

/** What the middleware sent for each page at each level. */
const served = new Map<string, Map<Level, Buffer>>();
let renderer: Renderer | undefined;
let rendered: Promise<Map<string, Map<Level, Rendering>>> | undefined;

test.before('serve every page through buffer() at each level', async () => {
  const middleware = new Map(LEVELS.map((level) => [level, buffer({ optimiseContent: level })]));
  const route: Koa.Middleware = (ctx, next) => {
    const m = /^\/([0-2])\/([a-z-]+\.html)$/.exec(ctx.path);
    if (!m) return next();
    ctx.state.page = m[2];
    return middleware.get(Number(m[1]) as Level)!(ctx, next);
  };
  const page: Koa.Middleware = (ctx) => {
    ctx.type = 'html';
    ctx.body = readFileSync(dir + String(ctx.state.page));
  };
  const app = new Koa();
  app.silent = true;
  app.use(route).use(page);
  const server = http.createServer(app.callback() as http.RequestListener);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  for (const name of names) {
    const bodies = new Map<Level, Buffer>();
    for (const level of LEVELS) {
      const response = await rawRequest(port, `/${level}/${name}`);
      if (response.status !== 200) throw new Error(`${name} at level ${level}: status ${response.status}`);
      bodies.set(level, response.body);
    }
    served.set(name, bodies);
  }
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
  if (chromiumSkipReason !== undefined) return;
  rendered = renderAll();
  rendered.catch(() => undefined); // reported by every test that awaits it
});

async function renderAll(): Promise<Map<string, Map<Level, Rendering>>> {
  renderer = await Renderer.launch();
  const result = new Map(names.map((name) => [name, new Map<Level, Rendering>()]));
  for (const level of LEVELS) {
    const pages = names.map((name) => ({
      url: `http://inline-display.test/${name}`,
      body: served.get(name)!.get(level)!,
    }));
    const renderings = await renderer.render(pages);
    for (const [i, page] of pages.entries()) renderings[i]!.screenshot = await renderer.screenshot(page);
    names.forEach((name, i) => result.get(name)!.set(level, renderings[i]!));
  }
  return result;
}

test.after.always(async () => {
  await rendered?.catch(() => undefined);
  await renderer?.close();
});

for (const name of names) {
  test(`${name}: optimiseContent 1 sends the squasher's bytes (native and twin agree), and they are smaller`, (t) => {
    const bodies = served.get(name)!;
    const original = readFileSync(dir + name);
    t.true(bodies.get(0)!.equals(original), 'optimisation off sends the page as it is');
    const squashed = core.squashHtml(original, { level: 1 });
    t.true(squashed.equals(twins.squashHtml(original, { level: 1 })), 'native and twin squash alike');
    t.true(bodies.get(1)!.equals(squashed), 'level 1 sends exactly the squashed page');
    t.true(squashed.length < original.length, 'squashing removed something, so the comparison says something');
  });

  for (const level of LEVELS.filter((l) => l !== 0)) {
    renderTest(`${name} renders the same text, boxes, links and screenshot at optimiseContent ${level}`, async (t) => {
      const renderings = (await rendered!).get(name)!;
      const original = renderings.get(0)!;
      t.true(original.elements.length > 5, 'the page rendered its elements');
      t.true((original.screenshot?.length ?? 0) > 0, 'a screenshot was taken');
      t.is(
        firstDifference(original, renderings.get(level)!),
        undefined,
        `${name} at optimiseContent ${level} should render exactly as with optimisation off`,
      );
    });
  }
}

renderTest('a navigation of inline-block list items still reads "Home Docs Blog" squashed', async (t) => {
  const text = (await rendered!).get('nav-inline-block.html')!.get(1)!.text ?? '';
  t.true(text.startsWith('Home Docs Blog\n'), JSON.stringify(text.slice(0, 40)));
});
