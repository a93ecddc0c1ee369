/**
 * The options reference has one source, the schema rows of
 * src/config/schema.ts: scripts/generate-options-docs.ts writes
 * docs/options.md and the README's options table from them. These tests
 * fail when either is stale, show that the check notices an edit, and hold
 * the two things the generated text relies on: an editor shows each row's
 * TSDoc on the option, and a default the TSDoc writes as a value is the
 * default `buffer()` uses.
 */
import test from 'ava';
import { execFile } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import ts from 'typescript';
import { resolveOptions } from '../../src/config/options.ts';
import { TypeMatcher } from '../../src/http/media-types.ts';
import { packageRoot } from '../../src/native/binding.ts';
import { begin, end, optionDocs, readmePath, referencePath, staleFiles } from '../../scripts/generate-options-docs.ts';

const run = promisify(execFile);
const script = join(packageRoot, 'scripts', 'generate-options-docs.ts');
const generator = (...args: string[]) =>
  run(process.execPath, ['--import', 'tsx', script, ...args], { cwd: packageRoot });

test('docs/options.md and the README options table are fresh (else run npm run generate:options)', async (t) => {
  t.timeout(120_000);
  t.deepEqual(await staleFiles(), []);
  const { stdout, stderr } = await generator('--check');
  t.is(stdout + stderr, '', 'the --check run is silent when fresh');
});

test('every option the README table names exists, and the README points to the reference for the rest', async (t) => {
  const { readmeOptions } = await import('../../scripts/generate-options-docs.ts');
  const names = new Set(optionDocs().map((doc) => doc.name));
  for (const name of readmeOptions) t.true(names.has(name), `${name} is an option`);
  const readme = readFileSync(join(packageRoot, readmePath), 'utf8');
  t.regex(readme, new RegExp(`The ${names.size - readmeOptions.size} others .*\\(docs/options\\.md\\)`));
});

test('the check names what is stale and exits 1; generating leaves the README outside its region alone', async (t) => {
  t.timeout(120_000);
  const root = mkdtempSync(join(tmpdir(), 'kb-options-docs-'));
  t.teardown(() => rmSync(root, { recursive: true, force: true }));
  mkdirSync(join(root, 'docs'));
  const readme = readFileSync(join(packageRoot, readmePath), 'utf8');
  const reference = readFileSync(join(packageRoot, referencePath), 'utf8');
  writeFileSync(join(root, readmePath), readme);
  writeFileSync(join(root, referencePath), reference);
  t.deepEqual(await staleFiles(root), [], 'a faithful copy is fresh');

  // A row edited by hand in the README, and a reference that lost a section.
  const edited = readme.replace(/^\| \[`cacheDuration`\].*$/m, '| `cacheDuration` | `60` | edited by hand |');
  t.not(edited, readme);
  writeFileSync(join(root, readmePath), `${edited}\nA line after the region stays.\n`);
  writeFileSync(join(root, referencePath), reference.replace(/^## `cacheDuration`$[\s\S]*?(?=^## )/m, ''));
  t.deepEqual(await staleFiles(root), [referencePath, `${readmePath} (options table)`]);
  const error = await generator('--check', '--root', root).then(
    () => undefined,
    (e: unknown) => e as { code: number; stderr: string },
  );
  t.is(error?.code, 1, '--check exits 1');
  t.regex(error?.stderr ?? '', /stale, run npm run generate:options: docs\/options\.md, README\.md \(options table\)/);

  await generator('--root', root);
  t.deepEqual(await staleFiles(root), []);
  t.is(readFileSync(join(root, readmePath), 'utf8'), `${readme}\nA line after the region stays.\n`);
  t.is(readFileSync(join(root, referencePath), 'utf8'), reference);

  // Without its markers the README cannot be written, and the check says it is stale.
  writeFileSync(join(root, readmePath), readme.replace(begin, '').replace(end, ''));
  t.deepEqual(await staleFiles(root), [`${readmePath} (options table)`]);
  await t.throwsAsync(generator('--root', root));
});

test('an editor shows each option its TSDoc, in buffer() and in bufferSection()', (t) => {
  t.timeout(120_000);
  const docs = optionDocs();
  const file = join(packageRoot, 'test', 'config', 'hover.virtual.ts');
  const sectionNames = docs.filter((doc) => doc.scope === 'section').map((doc) => doc.name);
  const text = [
    "import { buffer } from '../../src/buffer.ts';",
    "import { bufferSection } from '../../src/config/section.ts';",
    `buffer({ ${docs.map((doc) => `${doc.name}: undefined`).join(', ')} });`,
    `bufferSection({ ${sectionNames.map((name) => `${name}: undefined`).join(', ')} });`,
  ].join('\n');
  const config = ts.getParsedCommandLineOfConfigFile(
    join(packageRoot, 'tsconfig.json'),
    {},
    {
      ...ts.sys,
      onUnRecoverableConfigFileDiagnostic: (diagnostic) => t.fail(String(diagnostic.messageText)),
    },
  );
  const service = ts.createLanguageService({
    getScriptFileNames: () => [file],
    getScriptVersion: () => '1',
    getScriptSnapshot: (path) =>
      path === file
        ? ts.ScriptSnapshot.fromString(text)
        : ts.sys.fileExists(path)
          ? ts.ScriptSnapshot.fromString(ts.sys.readFile(path)!)
          : undefined,
    getCurrentDirectory: () => packageRoot,
    getCompilationSettings: () => ({ ...config!.options, noEmit: true }),
    getDefaultLibFileName: ts.getDefaultLibFilePath,
    fileExists: (path) => path === file || ts.sys.fileExists(path),
    readFile: (path) => (path === file ? text : ts.sys.readFile(path)),
    readDirectory: ts.sys.readDirectory,
    directoryExists: ts.sys.directoryExists,
    getDirectories: ts.sys.getDirectories,
  });
  const shown = (at: number): string => {
    const info = service.getQuickInfoAtPosition(file, at);
    return ts
      .displayPartsToString(info?.documentation)
      .replace(/\s+/g, ' ')
      .replace(/\*\\\//g, '*/');
  };
  const sectionCall = text.indexOf('bufferSection({');
  for (const doc of docs) {
    t.is(shown(text.indexOf(`${doc.name}: undefined`) + 1), doc.description, `buffer({ ${doc.name}`);
    if (doc.scope === 'section')
      t.is(
        shown(text.indexOf(`${doc.name}: undefined`, sectionCall) + 1),
        doc.description,
        `bufferSection({ ${doc.name}`,
      );
  }
});

/** A default as the TSDoc writes it, read as a value; undefined when it is words rather than a value. */
function documentedValue(text: string): { value: unknown } | undefined {
  const mebibytes = /^(\d+) MiB$/.exec(text);
  if (mebibytes) return { value: Number(mebibytes[1]) * 1024 * 1024 };
  if (!/^(?:true|false|-?\d+(?:\.\d+)?|'[^']*'|\[.*\]|\{.*\})$/.test(text)) return undefined;
  const json = text.replace(/'/g, '"').replace(/([{,]\s*)([A-Za-z_$][\w$]*)\s*:/g, '$1"$2":');
  return { value: JSON.parse(json) as unknown };
}

test('a default the TSDoc writes as a value is the default buffer() uses', (t) => {
  const quiet = { debug() {}, info() {}, warn() {}, error() {} };
  const defaults = resolveOptions({ logger: quiet }) as unknown as Record<string, unknown>;
  let compared = 0;
  for (const doc of optionDocs()) {
    const documented = doc.defaultText === undefined ? undefined : documentedValue(doc.defaultText);
    if (documented === undefined || doc.name === 'logger') continue;
    compared++;
    const given = resolveOptions({ logger: quiet, [doc.name]: documented.value }) as unknown as Record<string, unknown>;
    const [a, b] = [given[doc.name], defaults[doc.name]];
    // Type lists compile to matchers, which compare by what they match, not by identity.
    if (a instanceof TypeMatcher && b instanceof TypeMatcher) {
      for (const type of ['text/event-stream', 'text/html', 'image/png'])
        t.is(a.matches(type), b.matches(type), doc.name);
    } else t.deepEqual(a, b, `${doc.name}: @defaultValue ${doc.defaultText}`);
  }
  t.true(compared >= 30, `${compared} defaults compared`);
});
