#!/usr/bin/env node
// npm's `install` step for koa-buffer. node-gyp-build keeps a prebuild from
// prebuilds/ that loads on this machine, else builds the addon from source.
// When neither works (a platform without a prebuild and without Python, make
// or a C++ compiler), koa-buffer still works: the TypeScript twins serve md5
// and squashHtml, and only FileLock refuses. So a failed build must not fail
// the application's `npm install`: it costs one warning here (and one when
// the package loads) and the full build output goes to build/install.log.
// See docs/contributing.md, "Release and prebuilds".
import { spawnSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { delimiter, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
const nodeGypBuild = createRequire(import.meta.url).resolve('node-gyp-build/bin.js');
// node-gyp-build proves a prebuild loads by running its `node-gyp-build-test`
// from PATH, and builds from source when that command is missing: so the
// .bin folder beside node-gyp-build goes first, whoever runs this script.
const bins = join(dirname(dirname(nodeGypBuild)), '.bin');
const pathKey = Object.keys(process.env).find((key) => key.toUpperCase() === 'PATH') ?? 'PATH';

const result = spawnSync(process.execPath, [nodeGypBuild], {
  cwd: root,
  encoding: 'utf8',
  env: { ...process.env, [pathKey]: [bins, process.env[pathKey]].filter(Boolean).join(delimiter) },
  stdio: ['ignore', 'pipe', 'pipe'],
  windowsHide: true,
});
const output = `${result.stdout ?? ''}${result.stderr ?? ''}`;

if (result.status === 0) {
  process.stdout.write(output);
  process.exit(0);
}

/** What the build output says went wrong: a compiler error, else node-gyp's own error (which may span lines). */
function reasonOf(text) {
  const lines = text.split(/\r?\n/);
  const compiler = lines.find((line) => /(^|\s)(fatal )?error( C\d+)?:/.test(line) && !line.startsWith('gyp '));
  if (compiler) return compiler.trim();
  const start = lines.findIndex((line) => /^gyp ERR! stack \w*Error: /.test(line));
  if (start >= 0) {
    const message = [lines[start].replace(/^gyp ERR! stack \w*Error: /, '')];
    for (const line of lines.slice(start + 1)) {
      if (!line.startsWith('gyp ERR! stack ') || /^gyp ERR! stack\s+at /.test(line)) break;
      message.push(line.replace(/^gyp ERR! stack /, ''));
    }
    return message.join(' ').replace(/\s+/g, ' ').trim();
  }
  return result.error?.message ?? `node-gyp-build exited with status ${result.status}`;
}

const log = join(root, 'build', 'install.log');
let logNote = '';
try {
  mkdirSync(join(root, 'build'), { recursive: true });
  writeFileSync(log, output);
  logNote = ` Build log: ${log}`;
} catch {
  // An unwritable package folder loses only the log; the warning still says what to do.
}

process.stderr.write(
  `koa-buffer: warning: no prebuilt addon for ${process.platform}-${process.arch} loads here, and building it failed ` +
    `(${reasonOf(output)}). koa-buffer works without it (TypeScript fallbacks for md5 and squashHtml; ` +
    'FileLock unavailable). To build it, install Python 3, make and a C++ compiler (node-gyp also ' +
    `downloads the Node headers), then run \`npm rebuild koa-buffer\`.${logNote}\n`,
);
process.exit(0);
