/**
 * What `npm pack` puts in the tarball, which is what an application installs
 * (the README's Install section packs it from a clone): the licence text, the
 * built code with its declarations, the install step, the native sources it
 * builds from and the prebuilds of the tree, and nothing that names a file
 * left out, such as a source map pointing at the unshipped src/.
 */
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join, posix } from 'node:path';
import { promisify } from 'node:util';
import test from 'ava';
import { builtPackage, npmCli } from '../helpers/built-package.ts';

interface Packed {
  root: string;
  files: string[];
  size: number;
  unpackedSize: number;
}

const npm = npmCli();
let packed: Packed;

test.before(async (t) => {
  t.timeout(240_000, 'building dist/ when it is older than src/, then listing the tarball');
  if (!npm) return;
  const root = await builtPackage();
  const { stdout } = await promisify(execFile)(
    process.execPath,
    [npm, 'pack', '--dry-run', '--json', '--ignore-scripts'],
    { cwd: root, maxBuffer: 16 * 1024 * 1024 },
  );
  const [pack] = JSON.parse(stdout) as Array<{ files: Array<{ path: string }>; size: number; unpackedSize: number }>;
  packed = {
    root,
    files: pack!.files.map((file) => file.path).sort(),
    size: pack!.size,
    unpackedSize: pack!.unpackedSize,
  };
});

const withNpm = npm ? test : test.skip;

withNpm('the tarball holds the licence, the built code, the install step and the linux-x64 prebuild', (t) => {
  for (const file of [
    'LICENSE',
    'README.md',
    'package.json',
    'dist/index.js',
    'dist/index.d.ts',
    'dist/cli/koa-buffer-lock.js',
    'scripts/install.mjs',
    'scripts/source-stamp.mjs',
    'binding.gyp',
    'native/binding/addon.cc',
    // The README's Install section names this one prebuild, and only it.
    'prebuilds/linux-x64/koa-buffer.node',
  ])
    t.true(packed.files.includes(file), `${file} is packed`);
  t.deepEqual(
    packed.files.filter((file) => /^(src|test|bench|examples|support|build|node_modules)\//.test(file)),
    [],
    'no sources, tests, local builds or dependencies',
  );
  // 1.2 MB today: a stray build/ or copy of node_modules would be far more.
  t.true(packed.unpackedSize < 3_000_000, `unpacked size ${packed.unpackedSize} bytes`);
  t.log(`${packed.files.length} files, ${packed.size} bytes packed, ${packed.unpackedSize} unpacked`);
});

test("the README's Install section names the tarball npm pack writes for this version", (t) => {
  const { name, version } = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
    name: string;
    version: string;
  };
  const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
  const install = /^## Install\n([\s\S]*?)^## /m.exec(readme)?.[1] ?? '';
  const named = new Set(install.match(/koa-buffer-[\w.-]+\.tgz/g));
  t.deepEqual([...named], [`${name}-${version}.tgz`]);
});

withNpm('LICENSE is the GNU GPL version 2, as package.json licenses it (GPL-2.0-or-later)', (t) => {
  const licence = readFileSync(join(packed.root, 'LICENSE'), 'utf8');
  t.regex(licence, /^\s*GNU GENERAL PUBLIC LICENSE\s+Version 2, June 1991/);
  t.regex(licence, /either version 2 of the License, or\s+\(at your option\) any later version/);
  const manifest = JSON.parse(readFileSync(join(packed.root, 'package.json'), 'utf8')) as { license: string };
  t.is(manifest.license, 'GPL-2.0-or-later');
});

withNpm('no source map in the tarball names a file outside it', (t) => {
  const inTarball = new Set(packed.files);
  const dangling: string[] = [];
  for (const map of packed.files.filter((file) => file.endsWith('.map'))) {
    const { sources = [], sourceRoot = '' } = JSON.parse(readFileSync(join(packed.root, map), 'utf8')) as {
      sources?: string[];
      sourceRoot?: string;
    };
    for (const source of sources) {
      const path = posix.normalize(posix.join(posix.dirname(map), sourceRoot, source));
      if (!inTarball.has(path)) dangling.push(`${map} -> ${source}`);
    }
  }
  t.deepEqual(dangling, []);
});
