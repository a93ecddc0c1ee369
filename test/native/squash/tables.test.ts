/**
 * The squasher's tag-name tables have one source, native/html-elements.json;
 * scripts/generate-html-tables.mjs writes native/core/html_tables.h and the
 * twin's src/native/twins/squash/html-tables.ts from it. These tests fail when
 * either committed file is stale, and show that the check notices an edit.
 */
import test from 'ava';
import { execFile } from 'node:child_process';
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { packageRoot } from '../../../src/native/binding.ts';
import { RAW_NAMES, TAGS } from '../../../src/native/twins/squash/html-tables.ts';
// @ts-expect-error -- a plain .mjs script without declarations
import { headerPath, modulePath, sourcePath, staleFiles } from '../../../scripts/generate-html-tables.mjs';

const run = promisify(execFile);
const script = join(packageRoot, 'scripts', 'generate-html-tables.mjs');

test('both generated tables are fresh (else run npm run generate and commit them)', async (t) => {
  t.deepEqual(await staleFiles(), []);
  const { stdout, stderr } = await run(process.execPath, [script, '--check'], { cwd: packageRoot });
  t.is(stdout + stderr, '', 'the --check run is silent when fresh');
});

test('the check names both files once the source changes, and --check exits 1', async (t) => {
  const root = mkdtempSync(join(tmpdir(), 'kb-tables-'));
  t.teardown(() => rmSync(root, { recursive: true, force: true }));
  for (const path of [sourcePath, headerPath, modulePath] as string[]) {
    cpSync(join(packageRoot, path), join(root, path), { recursive: true });
  }
  t.deepEqual(await staleFiles(root), [], 'a faithful copy is fresh');
  const source = JSON.parse(readFileSync(join(root, sourcePath as string), 'utf8')) as {
    elements: Record<string, string[]>;
  };
  source.elements.search = ['block'];
  writeFileSync(join(root, sourcePath as string), JSON.stringify(source, null, 2));
  t.deepEqual(await staleFiles(root), [headerPath, modulePath], 'an added element makes both stale');
  const error = await run(process.execPath, [script, '--check', '--root', root]).then(
    () => undefined,
    (e: unknown) => e as { code: number; stderr: string },
  );
  t.is(error?.code, 1, '--check exits 1');
  t.regex(
    error?.stderr ?? '',
    /stale, run npm run generate: native\/core\/html_tables\.h, src\/native\/twins\/squash\/html-tables\.ts/,
  );
  // Generating in that tree makes it fresh again, and the header now lists the new name.
  await run(process.execPath, [script, '--root', root]);
  t.deepEqual(await staleFiles(root), []);
  t.regex(readFileSync(join(root, headerPath as string), 'utf8'), /\{"search", kBlock\}/);
});

test('the twin table lists what the source lists, with raw-text names in index order', (t) => {
  const source = JSON.parse(readFileSync(join(packageRoot, sourcePath as string), 'utf8')) as {
    elements: Record<string, string[]>;
  };
  t.deepEqual(
    TAGS.map(([name]) => name),
    Object.keys(source.elements),
  );
  const raw = Object.entries(source.elements)
    .filter(([, flags]) => flags.includes('raw'))
    .map(([name]) => name);
  t.deepEqual(RAW_NAMES.slice(1), raw);
});
