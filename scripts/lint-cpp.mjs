#!/usr/bin/env node
// `npm run lint`'s C++ part: every C++ file the tree tracks is as clang-format
// (.clang-format) writes it. The generated native/core/html_tables.h is left
// as its generator writes it (npm run generate keeps it current).
import { execFileSync, spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { have } from './have.mjs';

const root = fileURLToPath(new URL('..', import.meta.url));
if (!have('clang-format')) {
  console.log('C++ format check skipped: install clang-format (Debian package clang-format) to run it');
  process.exit(0);
}
const files = execFileSync('git', ['ls-files', '*.h', '*.cc'], { cwd: root, encoding: 'utf8' })
  .split('\n')
  .filter((file) => file !== '' && !file.endsWith('html_tables.h'));
const { status } = spawnSync('clang-format', ['--dry-run', '--Werror', ...files], { cwd: root, stdio: 'inherit' });
if (status === 0) console.log(`C++ format: ${files.length} files as clang-format writes them`);
process.exit(status ?? 1);
