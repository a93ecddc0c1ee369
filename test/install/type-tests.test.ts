/**
 * Runs the type tests (test/types/*.tst.ts and *.tst.cts) with tstyche, on
 * the built package: they import koa-buffer by name, as applications do, so
 * they check the declarations that ship in dist/ and the "types" condition of
 * package.json "exports", for ES module and CommonJS consumers alike.
 */
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import test from 'ava';
import { builtPackage } from '../helpers/built-package.ts';

test('the public types, the Koa context augmentation and CommonJS consumers (tstyche)', async (t) => {
  t.timeout(240_000);
  const root = await builtPackage();
  const tstyche = join(root, 'node_modules', 'tstyche', 'build', 'bin.js');
  const outcome = await promisify(execFile)(process.execPath, [tstyche, 'test/types'], {
    cwd: root,
    env: { ...process.env, NO_COLOR: '1' },
    maxBuffer: 16 * 1024 * 1024,
  }).then(
    ({ stdout }) => ({ failed: false, stdout }),
    (error: { stdout?: string; stderr?: string }) => ({
      failed: true,
      stdout: `${error.stdout ?? ''}${error.stderr ?? ''}`,
    }),
  );
  t.false(outcome.failed, `tstyche reported failures:\n${outcome.stdout.slice(-6000)}`);
  const files = /Test files:\s+(\d+) passed/.exec(outcome.stdout);
  t.true(Number(files?.[1]) >= 3, `all three type test files ran:\n${outcome.stdout}`);
  t.log(/Assertions:.*$/m.exec(outcome.stdout)?.[0] ?? '');
});
