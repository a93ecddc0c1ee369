/**
 * The package as users run it: the HTTP benches' servers import koa-buffer
 * from `dist/` (what `npm run build` and `npm install` make), not from the
 * TypeScript sources through tsx, whose transform adds work of its own to
 * every closure made per request (esbuild's keepNames `__name` calls).
 * `ensureBuilt()` rebuilds dist when a source is newer, so a bench never
 * measures stale code.
 */
import { spawnSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../..', import.meta.url));

function newestMtime(dir: string): number {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (entry.isFile() && entry.name.endsWith('.ts'))
      newest = Math.max(newest, statSync(join(entry.parentPath, entry.name)).mtimeMs);
  }
  return newest;
}

/** Builds dist/ with tsc when it is missing or older than a source file; throws when the build fails. */
export function ensureBuilt(): void {
  let built = 0;
  try {
    built = statSync(join(root, 'dist', 'index.js')).mtimeMs;
  } catch {
    // no build yet
  }
  if (built > newestMtime(join(root, 'src'))) return;
  const tsc = spawnSync(
    process.execPath,
    [join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', join(root, 'tsconfig.build.json')],
    { stdio: 'inherit' },
  );
  if (tsc.status !== 0) throw new Error('npm run build failed: the benches measure dist/');
}

/** The built package (dist/index.js), as `import 'koa-buffer'` gives it. */
export function builtPackage(): Promise<typeof import('../../src/index.ts')> {
  return import(join(root, 'dist', 'index.js')) as Promise<typeof import('../../src/index.ts')>;
}
