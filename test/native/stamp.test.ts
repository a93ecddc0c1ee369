/**
 * A prebuild is proven, never trusted
 * (docs/decisions/0006-native-cores-with-typescript-twins.md): the committed
 * linux-x64 prebuild and whatever addon the loader picked must both have been
 * built from the native sources in this tree.
 */
import test from 'ava';
import { existsSync, readdirSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { addon, packageRoot } from '../../src/native/binding.ts';
// @ts-expect-error -- a plain .mjs script without declarations
import { sourceStamp } from '../../scripts/source-stamp.mjs';

const require = createRequire(import.meta.url);
const platformDir = join(packageRoot, 'prebuilds', `${process.platform}-${process.arch}`);

test('the committed prebuild was built from the native sources in the tree', (t) => {
  if (process.platform !== 'linux' || process.arch !== 'x64') {
    t.pass('only linux-x64 has a committed prebuild');
    return;
  }
  t.true(existsSync(platformDir), `${platformDir} exists (run npm run build:prebuilds and commit it)`);
  const binaries = readdirSync(platformDir).filter((f) => f.endsWith('.node'));
  t.is(binaries.length, 1, 'exactly one prebuild for linux-x64');
  const prebuild = require(join(platformDir, binaries[0]!)) as { sourceStamp: string };
  t.is(
    prebuild.sourceStamp,
    sourceStamp() as string,
    'stale prebuild: run `npm run build:prebuilds` and commit prebuilds/',
  );
});

test('the loaded addon was built from the native sources in the tree', (t) => {
  if (!addon) {
    t.is(process.env.KOA_BUFFER_NATIVE, '0', 'the addon is missing only when disabled on purpose');
    return;
  }
  t.is(addon.sourceStamp, sourceStamp() as string, 'stale addon: rebuild with npm run build:native');
});
