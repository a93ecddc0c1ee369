/**
 * The documented exceptions to the squasher's rendering guarantee
 * (test/render/EXCEPTIONS.md): pages whose CSS makes white space significant
 * where the squasher assumes it is not. Each page in
 * test/fixtures/render/exceptions must render differently once squashed
 * (so the list says something true), and the list and the directory must
 * name the same pages. These pages are not part of the equality checks.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import test from 'ava';
import { core } from '../../src/native/core.ts';
import { firstDifference, Renderer, type Rendering } from '../helpers/chromium.ts';
import { renderTest } from '../helpers/render-test.ts';

const dir = fileURLToPath(new URL('../fixtures/render/exceptions/', import.meta.url));
const names = readdirSync(dir)
  .filter((f) => f.endsWith('.html'))
  .sort();
const listed = [
  ...readFileSync(fileURLToPath(new URL('EXCEPTIONS.md', import.meta.url)), 'utf8').matchAll(
    /^\| `([^`]+\.html)` +\|/gm, // Prettier pads the cells
  ),
]
  .map((m) => m[1]!)
  .sort();

test('EXCEPTIONS.md lists exactly the pages of test/fixtures/render/exceptions', (t) => {
  t.deepEqual(listed, names, 'every exception page is explained, and every explained page exists');
});

let renderer: Renderer | undefined;
let rendered: Promise<Map<string, [Rendering, Rendering]>> | undefined;

async function renderAll(): Promise<Map<string, [Rendering, Rendering]>> {
  renderer = await Renderer.launch();
  const pages = names.map((name) => ({
    name,
    url: `http://exceptions.test/${name}`,
    original: readFileSync(dir + name),
  }));
  const before = await renderer.render(pages.map((p) => ({ url: p.url, body: p.original })));
  const after = await renderer.render(
    pages.map((p) => ({ url: p.url, body: core.squashHtml(p.original, { level: 1 }) })),
  );
  return new Map(pages.map((p, i) => [p.name, [before[i]!, after[i]!]]));
}

test.after.always(async () => {
  await rendered?.catch(() => undefined);
  await renderer?.close();
});

for (const name of names) {
  renderTest(`${name} renders differently once squashed, as EXCEPTIONS.md says`, async (t) => {
    rendered ??= renderAll();
    const [before, after] = (await rendered).get(name)!;
    const difference = firstDifference(before, after);
    t.not(
      difference,
      undefined,
      `${name} should render differently squashed; if it no longer does, take it off the list`,
    );
    t.log(difference);
  });
}
