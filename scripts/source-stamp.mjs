#!/usr/bin/env node
// Prints a digest of the native sources an addon is built from. binding.gyp
// bakes it into the addon as `sourceStamp`; test/native/stamp.test.ts compares
// the committed prebuild's stamp with the tree, so a stale prebuild cannot land.
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));

function walk(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = join(dir, entry.name);
    if (entry.isDirectory()) return walk(full);
    return /\.(cc|h)$/.test(entry.name) ? [full] : [];
  });
}

/** The stamp: SHA-256 over each source's relative path and bytes, in sorted order. */
export function sourceStamp() {
  const files = [...walk(join(root, 'native')), join(root, 'binding.gyp')]
    .map((file) => relative(root, file).split('\\').join('/'))
    .sort();
  const hash = createHash('sha256');
  for (const file of files) {
    hash.update(file + '\0');
    // Line endings are normalised so a checkout with CRLF conversion stamps the same.
    hash.update(readFileSync(join(root, file), 'utf8').replace(/\r\n/g, '\n'));
    hash.update('\0');
  }
  return hash.digest('hex').slice(0, 32);
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  process.stdout.write(sourceStamp());
}
