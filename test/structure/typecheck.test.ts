/**
 * The whole tree typechecks under the strict tsconfig: tests run through tsx,
 * which strips types without checking them, so this is where a type error in
 * src/, test/, bench/ or examples/ fails the suite.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import test from 'ava';
import { packageRoot } from '../../src/native/binding.ts';

test('tsc --noEmit reports no error', async (t) => {
  t.timeout(180_000);
  const tsc = `${packageRoot}node_modules/typescript/bin/tsc`;
  try {
    await promisify(execFile)(process.execPath, [tsc, '--noEmit', '-p', 'tsconfig.json'], {
      cwd: packageRoot,
      maxBuffer: 16 * 1024 * 1024,
    });
    t.pass();
  } catch (error) {
    const { stdout = '' } = error as { stdout?: string };
    t.fail(`type errors:\n${stdout.slice(0, 4000)}`);
  }
});
