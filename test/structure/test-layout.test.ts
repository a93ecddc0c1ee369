/**
 * test/ mirrors src/: a test of one layer sits in the folder of that layer
 * (test/cache/ for src/cache/), so whoever changes a layer finds its tests
 * beside each other, and a test that needs the whole middleware, a real
 * browser or many processes sits in a folder named for that kind. Any other
 * folder is a third way of sorting, and the tree drifts back to sorting by
 * several at once. And no two test files share a basename: a basename names
 * one file, in an editor's search, in a log line, in a docs mention.
 */
import { readdirSync } from 'node:fs';
import { basename, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import test from 'ava';

const root = fileURLToPath(new URL('../..', import.meta.url));
const testDir = join(root, 'test');
const src = join(root, 'src');

/** The folders of test/ that are not a layer of src/, and what each holds. */
const kinds: Readonly<Record<string, string>> = {
  e2e: 'the whole middleware over real HTTP: behaviour across layers, peer suites ported, the examples',
  faults: 'stores, locks, clients and Redis failing under a running server',
  security: 'attacks: poisoning, hostile options, visitors, lock files, dictionaries',
  load: 'a cluster under load',
  install: 'the package as installed: exports, the fallback install, the type tests',
  render: 'squashed pages rendered in Chromium against the originals',
  structure: 'the shape of the repository: layers, cycles, citations, this layout, the typecheck',
  bench: "the bench's own code",
  types: 'type tests run by tstyche (test/install/type-tests.test.ts)',
  helpers: 'code the tests share',
  fixtures: 'programs and pages the tests run or read',
  fuzz: 'the C++ fuzz targets and their corpus',
};

/** Every `*.test.ts` under `dir`, relative to it. */
function testFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true, recursive: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith('.test.ts'))
    .map((entry) => relative(dir, join(entry.parentPath, entry.name)))
    .sort();
}

/** Each basename two or more of `files` share, with the files, one line each. */
function repeatedBasenames(files: string[]): string[] {
  const byName = new Map<string, string[]>();
  for (const file of files) byName.set(basename(file), [...(byName.get(basename(file)) ?? []), file]);
  return [...byName]
    .filter(([, same]) => same.length > 1)
    .map(([name, same]) => `${name}: ${same.join(', ')}`)
    .sort();
}

/** The entries at the top of test/ that are neither a layer of src/ nor a named kind: stray folders and loose files. */
function strayEntries(entries: Array<{ name: string; folder: boolean }>, layers: string[]): string[] {
  return entries
    .filter(({ name, folder }) => !folder || (!layers.includes(name) && kinds[name] === undefined))
    .map(({ name, folder }) => (folder ? `${name}/` : name))
    .sort();
}

test('the checks find a planted repeated basename, a stray folder and a loose test file', (t) => {
  t.deepEqual(
    repeatedBasenames(['cache/stale.test.ts', 'e2e/examples/stale.test.ts', 'cache/key.test.ts', 'http/key-x.test.ts']),
    ['stale.test.ts: cache/stale.test.ts, e2e/examples/stale.test.ts'],
  );
  t.deepEqual(
    strayEntries(
      [
        { name: 'cache', folder: true },
        { name: 'e2e', folder: true },
        { name: 'middleware', folder: true },
        { name: 'duration.test.ts', folder: false },
      ],
      ['cache', 'base'],
    ),
    ['duration.test.ts', 'middleware/'],
  );
});

test('every folder of test/ is a layer of src/ or a named kind, and no test file sits at the top', (t) => {
  const layers = readdirSync(src, { withFileTypes: true })
    .filter((entry) => entry.isDirectory())
    .map((entry) => entry.name);
  t.true(layers.includes('cache') && layers.includes('base'), 'the layers of src/ were read');
  const entries = readdirSync(testDir, { withFileTypes: true }).map((entry) => ({
    name: entry.name,
    folder: entry.isDirectory(),
  }));
  const named = Object.entries(kinds).map(([kind, what]) => `${kind}: ${what}`);
  t.deepEqual(
    strayEntries(entries, layers),
    [],
    `put a test in the folder of the layer it tests (${layers.sort().join(', ')}) or of its kind:\n  ${named.join('\n  ')}`,
  );
});

test('no two test files share a basename', (t) => {
  const files = testFiles(testDir);
  t.true(files.length > 100, `the walk found the test files (${files.length})`);
  const repeated = repeatedBasenames(files);
  t.deepEqual(repeated, [], `rename one of each pair so its name says what it tests:\n  ${repeated.join('\n  ')}`);
});
