/**
 * The package as an application receives it: `dist/` compiled from `src/`.
 * Tests that load koa-buffer by name (require, import, the type tests, npm
 * pack) call {@link builtPackage} first. It rebuilds `dist/` when a source is
 * newer than it, one process at a time: ava runs test files in parallel, and
 * two compilers writing one `dist/` would leave it half written.
 */
import { execFile } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, rmSync, statSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { promisify } from 'node:util';
import { packageRoot } from '../../src/native/binding.ts';

const lockDir = join(packageRoot, 'build', 'dist-build.lock');
/** A lock left behind by a killed run is taken over after this long (a build takes under two minutes). */
const staleLockMs = 10 * 60_000;

function newestMtime(dir: string): number {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const full = join(dir, entry.name);
    newest = Math.max(newest, entry.isDirectory() ? newestMtime(full) : statSync(full).mtimeMs);
  }
  return newest;
}

function isFresh(): boolean {
  let built: number;
  try {
    built = statSync(join(packageRoot, 'dist', 'index.d.ts')).mtimeMs;
  } catch {
    return false;
  }
  const inputs = ['package.json', 'tsconfig.json', 'tsconfig.build.json'].map(
    (file) => statSync(join(packageRoot, file)).mtimeMs,
  );
  return built >= Math.max(newestMtime(join(packageRoot, 'src')), ...inputs);
}

async function takeLock(): Promise<void> {
  mkdirSync(join(packageRoot, 'build'), { recursive: true });
  for (;;) {
    try {
      mkdirSync(lockDir);
      return;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    }
    try {
      if (Date.now() - statSync(lockDir).mtimeMs > staleLockMs) rmSync(lockDir, { recursive: true, force: true });
    } catch {
      // Released between the two calls: try again.
    }
    await sleep(200);
  }
}

/**
 * Makes sure `dist/` holds the current `src/`, building it (as `npm run
 * build` does: a clean `dist/`, then tsc) when it is missing or older.
 *
 * @returns the package root, with a trailing separator
 */
export async function builtPackage(): Promise<string> {
  if (isFresh()) return packageRoot;
  await takeLock();
  try {
    if (!isFresh()) {
      rmSync(join(packageRoot, 'dist'), { recursive: true, force: true });
      const tsc = join(packageRoot, 'node_modules', 'typescript', 'bin', 'tsc');
      await promisify(execFile)(process.execPath, [tsc, '-p', 'tsconfig.build.json'], {
        cwd: packageRoot,
        maxBuffer: 16 * 1024 * 1024,
      });
    }
  } finally {
    rmSync(lockDir, { recursive: true, force: true });
  }
  return packageRoot;
}

/**
 * npm's own entry script, to run with this node (so that a test's PATH needs
 * no `npm` in it); undefined when npm was not installed beside node.
 */
export function npmCli(): string | undefined {
  const candidates = [
    process.env.npm_execpath,
    join(dirname(process.execPath), '..', 'lib', 'node_modules', 'npm', 'bin', 'npm-cli.js'),
    join(dirname(process.execPath), 'node_modules', 'npm', 'bin', 'npm-cli.js'),
  ];
  return candidates.find((file) => file?.endsWith('npm-cli.js') && existsSync(file));
}
