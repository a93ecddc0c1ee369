#!/usr/bin/env node
// `npm run format`'s C++ part: clang-format (.clang-format) rewrites every
// tracked C++ file but the generated native/core/html_tables.h.
import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { have } from './have.mjs';

const root = fileURLToPath(new URL('..', import.meta.url));
if (!have('clang-format')) {
  console.log('C++ formatting skipped: install clang-format (Debian package clang-format)');
  process.exit(0);
}
const files = execFileSync('git', ['ls-files', '*.h', '*.cc'], { cwd: root, encoding: 'utf8' })
  .split('\n')
  .filter((file) => file !== '' && !file.endsWith('html_tables.h'));
execFileSync('clang-format', ['-i', ...files], { cwd: root, stdio: 'inherit' });
