#!/usr/bin/env node
// The C++ side of `npm run format` and (with --check) of `npm run lint`:
// every tracked C++ file as clang-format (.clang-format) writes it, except
// the generated native/core/html_tables.h, which `npm run generate` keeps as
// its generator writes it. Skips with a message when clang-format is absent.
import { execFileSync, spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { have } from './have.mjs';

const root = fileURLToPath(new URL('..', import.meta.url));
const check = process.argv.includes('--check');
if (!have('clang-format')) {
  console.log(
    `C++ ${check ? 'format check' : 'formatting'} skipped: install clang-format (Debian package clang-format)`,
  );
  process.exit(0);
}
const files = execFileSync('git', ['ls-files', '*.h', '*.cc'], { cwd: root, encoding: 'utf8' })
  .split('\n')
  .filter((file) => file !== '' && !file.endsWith('html_tables.h'));
const args = check ? ['--dry-run', '--Werror', ...files] : ['-i', ...files];
const { status } = spawnSync('clang-format', args, { cwd: root, stdio: 'inherit' });
if (status === 0 && check) console.log(`C++ format: ${files.length} files as clang-format writes them`);
process.exit(status ?? 1);
