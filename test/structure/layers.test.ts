/**
 * The folders of src/ are layers, and imports only run down: a module may
 * import its own folder and the layers ranked below it, never a layer above
 * nor a neighbour of the same rank. Each layer can then be read, tested and
 * changed knowing only what lies beneath it (docs/architecture.md, "Layers").
 * The cycle test beside this one sees circles between files; this one sees
 * the arrows that run back up between folders, which no file-level circle
 * shows.
 */
import { readdirSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import test from 'ava';
import { importGraph, sourceFiles } from '../helpers/import-graph.ts';

const root = resolve(dirname(fileURLToPath(import.meta.url)), '../..');
const src = join(root, 'src');

/**
 * Each folder's rank, bottom first. `.` is the entry point (index.ts and
 * buffer.ts); locks and http sit beside each other, as do the entry point
 * and the command line. The front (a listener before Koa) sits on the
 * pipeline, below the entry point that links it to each middleware.
 */
export const ranks: Readonly<Record<string, number>> = {
  base: 1,
  native: 2,
  observe: 2,
  locks: 3,
  http: 3,
  config: 4,
  cache: 5,
  encoding: 6,
  pipeline: 7,
  front: 8,
  '.': 9,
  cli: 9,
};

/** The layer of a file under src/: its first folder, or `.` for a file at the top. */
export function layerOf(file: string): string {
  const path = relative(src, file);
  return path.includes('/') ? path.slice(0, path.indexOf('/')) : '.';
}

/** Every import that runs up or sideways between layers, as `from → to`, with src-relative paths. */
export function arrowsUp(graph: Map<string, string[]>): string[] {
  const wrong: string[] = [];
  for (const [file, targets] of graph) {
    const from = layerOf(file);
    for (const target of targets) {
      const to = layerOf(target);
      if (to === from) continue;
      const a = ranks[from];
      const b = ranks[to];
      if (a === undefined || b === undefined || b >= a) wrong.push(`${relative(src, file)} → ${relative(src, target)}`);
    }
  }
  return wrong.sort();
}

test('the rank check finds a planted import that runs up, one sideways and one into an unranked folder', (t) => {
  const at = (path: string): string => join(src, path);
  const graph = new Map([
    [at('base/messages.ts'), [at('config/options.ts')]], // up
    [at('http/etag.ts'), [at('locks/lock.ts'), at('base/describe.ts')]], // sideways, then down
    [at('cache/entry.ts'), [at('cache/key.ts'), at('native/slices.ts')]], // own folder, down
    [at('pipeline/stream.ts'), [at('mystery/thing.ts')]], // a folder with no rank
  ]);
  t.deepEqual(arrowsUp(graph), [
    'base/messages.ts → config/options.ts',
    'http/etag.ts → locks/lock.ts',
    'pipeline/stream.ts → mystery/thing.ts',
  ]);
});

test('every folder of src/ has a rank', (t) => {
  const folders = readdirSync(src, { withFileTypes: true })
    .filter((entry) => entry.isDirectory())
    .map((entry) => entry.name);
  t.deepEqual(
    folders.filter((folder) => ranks[folder] === undefined),
    [],
    'a new folder under src/ needs a rank here and a line in docs/architecture.md',
  );
});

test('imports under src/ only run down the layers', (t) => {
  const graph = importGraph(sourceFiles(src));
  t.true(
    (graph.get(join(src, 'buffer.ts')) ?? []).includes(join(src, 'config/options.ts')),
    'the import scan found no edges',
  );
  const wrong = arrowsUp(graph);
  t.deepEqual(wrong, [], `imports that run up or sideways:\n  ${wrong.join('\n  ')}`);
});
