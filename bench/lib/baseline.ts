/**
 * A baseline for regression rows: `--baseline <git-ref>` builds the package
 * as it was at that commit (its own `dist/`, its own committed prebuild) in a
 * temporary folder, so a bench can serve the old and the new code side by
 * side in one run. Figures from two runs on a shared machine differ by more
 * than the regressions worth catching; a row measured beside its baseline
 * does not.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../..', import.meta.url));

/** The ref given with `--baseline`, if any. */
export const baselineRef: string | undefined = (() => {
  const at = process.argv.indexOf('--baseline');
  return at === -1 ? undefined : process.argv[at + 1];
})();

/**
 * Extracts and builds `ref` once (kept by commit hash, so a second run reuses
 * it); the folder whose `dist/index.js` is that commit's package.
 *
 * @throws Error naming the ref when git cannot resolve it or its build fails
 */
export function buildBaseline(ref: string): string {
  let commit: string;
  try {
    commit = execFileSync('git', ['rev-parse', '--verify', `${ref}^{commit}`], { cwd: root, encoding: 'utf8' }).trim();
  } catch {
    throw new Error(`--baseline ${ref}: not a commit git knows here`);
  }
  const dir = join(tmpdir(), `koa-buffer-baseline-${commit.slice(0, 12)}`);
  if (existsSync(join(dir, 'dist', 'index.js'))) return dir;
  mkdirSync(dir, { recursive: true });
  execFileSync('sh', ['-c', `git archive ${commit} | tar -x -C '${dir}'`], { cwd: root });
  // The old code runs against today's dependencies: a baseline measures our code, not a dependency bump.
  if (!existsSync(join(dir, 'node_modules'))) symlinkSync(join(root, 'node_modules'), join(dir, 'node_modules'), 'dir');
  const tsc = spawnSync(
    process.execPath,
    [join(root, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', join(dir, 'tsconfig.build.json')],
    { stdio: 'inherit' },
  );
  if (tsc.status !== 0) throw new Error(`--baseline ${ref}: its build failed`);
  return dir;
}

/** In a bench's server process: the package built by {@link buildBaseline}, whose folder the driver passes in KB_BENCH_BASELINE_DIR. */
export function baselinePackage(): Promise<typeof import('../../src/index.ts')> {
  const dir = process.env.KB_BENCH_BASELINE_DIR;
  if (dir === undefined) throw new Error('KB_BENCH_BASELINE_DIR is not set: the driver builds the baseline first');
  return import(join(dir, 'dist', 'index.js')) as Promise<typeof import('../../src/index.ts')>;
}
