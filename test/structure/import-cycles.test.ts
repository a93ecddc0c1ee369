/**
 * The modules under src/ import one another without a circle: each layer
 * (options, context, cache, response, locks, native) can be read, tested and
 * changed from the bottom up. Every relative import counts, `import type` and
 * `export … from` included, since a circle of types is still a circle a
 * reader must hold in mind at once.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import test from 'ava';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const src = join(root, 'src');

/** Every .ts file under `dir`, as absolute paths. */
function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(path);
    return entry.isFile() && entry.name.endsWith('.ts') ? [path] : [];
  });
}

/** The relative specifiers a module imports or re-exports, static or dynamic. */
const specifierPattern = /(?:\bfrom\s*|\bimport\s*\(\s*|^\s*import\s+)['"](\.{1,2}\/[^'"]+)['"]/gm;

/** The graph of relative imports between the files of `files`, by absolute path. */
export function importGraph(files: string[]): Map<string, string[]> {
  const known = new Set(files);
  const graph = new Map<string, string[]>();
  for (const file of files) {
    const text = readFileSync(file, 'utf8');
    const targets: string[] = [];
    for (const match of text.matchAll(specifierPattern)) {
      const target = resolve(dirname(file), match[1]!);
      if (known.has(target)) targets.push(target);
    }
    graph.set(file, targets);
  }
  return graph;
}

/** Every elementary circle found by a depth-first walk, each as the list of its files, the first repeated at the end. */
export function findCycles(graph: Map<string, string[]>): string[][] {
  const cycles: string[][] = [];
  const done = new Set<string>();
  const path: string[] = [];
  const onPath = new Map<string, number>();
  const visit = (node: string): void => {
    onPath.set(node, path.length);
    path.push(node);
    for (const next of graph.get(node) ?? []) {
      const at = onPath.get(next);
      if (at !== undefined) cycles.push([...path.slice(at), next]);
      else if (!done.has(next)) visit(next);
    }
    path.pop();
    onPath.delete(node);
    done.add(node);
  };
  for (const node of [...graph.keys()].sort()) if (!done.has(node)) visit(node);
  return cycles;
}

test('the graph walk sees a circle when there is one', (t) => {
  const graph = new Map([
    ['a', ['b']],
    ['b', ['c']],
    ['c', ['a']],
    ['d', ['a']],
  ]);
  t.deepEqual(findCycles(graph), [['a', 'b', 'c', 'a']]);
  t.deepEqual(
    findCycles(
      new Map([
        ['a', ['b']],
        ['b', []],
      ]),
    ),
    [],
  );
});

test('no circle among the imports of src/', (t) => {
  const files = sourceFiles(src);
  const graph = importGraph(files);
  // The walk must see the imports at all: the middleware reaches the cache and the options.
  const bufferImports = graph.get(join(src, 'buffer.ts')) ?? [];
  t.true(bufferImports.includes(join(src, 'config/options.ts')), 'the import scan found no edges');
  const cycles = findCycles(graph).map((cycle) => cycle.map((file) => relative(src, file)).join(' → '));
  if (cycles.length > 0) t.log(`import circles under src/:\n  ${cycles.join('\n  ')}`);
  t.deepEqual(cycles, [], `import circles under src/:\n  ${cycles.join('\n  ')}`);
});
