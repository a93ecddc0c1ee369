/**
 * The import graph of a tree of TypeScript modules, read as text: every
 * relative import counts, `import type` and `export … from` included, and
 * the walks the structure tests make over it.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';

/** Every .ts file under `dir`, as absolute paths. */
export function sourceFiles(dir: string): string[] {
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
