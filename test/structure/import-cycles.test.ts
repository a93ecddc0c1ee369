/**
 * The modules under src/ import one another without a circle: each layer
 * (options, context, cache, response, locks, native) can be read, tested and
 * changed from the bottom up. Every relative import counts, `import type` and
 * `export … from` included, since a circle of types is still a circle a
 * reader must hold in mind at once.
 */
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import test from 'ava';
import { findCycles, importGraph, sourceFiles } from '../helpers/import-graph.ts';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const src = join(root, 'src');

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
