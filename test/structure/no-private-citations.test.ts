/**
 * Comments, tests, benches, examples and the READMEs explain a reason in
 * place or point to docs/ (architecture.md, decisions/, contributing.md).
 * They must not cite documents a reader of this repository does not have:
 * the design contract ("SPEC 7"), the house style guide ("STYLE C4"), the
 * original documents koa-buffer was ported from ("the seed", "picture B")
 * or their file names. This test finds such citations; its first test
 * shows that the patterns catch them and leave alone the words that only
 * look alike (`<style>`, "specific", a fast-check `seed`).
 */
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import test from 'ava';

const root = fileURLToPath(new URL('../..', import.meta.url));
const self = relative(root, fileURLToPath(import.meta.url));

/** Each pattern is one way of citing a private document. */
const citations: ReadonlyArray<readonly [string, RegExp]> = [
  ['the design contract', /\bSPEC\b/],
  ['the style guide', /\bSTYLE\b/],
  ['a state diagram of the Perl original', /\bpictures? [A-C]\b/i],
  ['an original document', /\bthe seeds?\b/i],
  ['an original document', /\bseed(?:'s|’s)|\bseeds'\s/i],
  ['an original document', /\(seed(?:\)|, [a-z"`]|: (?!number\b|string\b)[a-z])/i],
  ['an original document', /lock-file\.txt|lua-resty-lock\.fr\.txt|mojolicious-plugin-buffer\.txt/],
];

/** The folders and files whose text is read by people working on the code. */
const scanned = [
  'src',
  'native',
  'test',
  'bench',
  'support',
  'examples',
  'scripts',
  'docs',
  '.ci',
  'README.md',
  'SECURITY.md',
  'binding.gyp',
  'CMakeLists.txt',
];
const skippedDirs = new Set(['node_modules', 'corpus', 'results']);
const textFile = /\.(ts|mts|mjs|cjs|js|cc|h|md|sh|gyp|txt|json|cmake)$|(^|\/)(run|CMakeLists\.txt)$/;

function* files(path: string): Generator<string> {
  const full = join(root, path);
  let stat;
  try {
    stat = statSync(full);
  } catch {
    return; // a folder another change removed
  }
  if (stat.isDirectory()) {
    for (const name of readdirSync(full).sort()) if (!skippedDirs.has(name)) yield* files(join(path, name));
  } else if (textFile.test(path)) yield path;
}

/** The citations in `text`, one line each: what is cited and the line. */
function findCitations(text: string): string[] {
  const found: string[] = [];
  for (const line of text.split('\n'))
    for (const [what, pattern] of citations)
      if (pattern.test(line)) {
        found.push(`${what}: ${line.trim().slice(0, 160)}`);
        break;
      }
  return found;
}

test('the patterns find citations of private documents and pass over look-alikes', (t) => {
  const cited = [
    '// Order of SPEC 4.',
    ' * (STYLE C9 rule 2)',
    'waiters say HIT (picture B arrow 6)',
    'in the seed’s pictures A and B',
    "the seed's register table",
    "keyed by the seeds' message keys",
    'has released the lock (seed, cache_lock release).',
    'is removed (seed: picture A arrow 9)',
    'read once, when buffer() runs (seed).',
    'the backend of lock-file.txt',
    'as the seed documents',
  ];
  const innocent = [
    '<style>  a  {  }  </style>',
    "test('style content is verbatim', …)",
    'const FIXED_STYLE = "body{}";',
    'a specific page, a speculative read; inspect it',
    '{ seed: 77, numRuns: 1000 }',
    '(property, fixed seed)',
    'function random(seed: number): () => number {',
    'seed = (Math.imul(seed, 1103515245) + 12345) >>> 0;',
    "const dir = join(build, 'seeds', target);",
    '<picture><source srcset="a.avif"></picture>',
    'the Perl original polls every 100 ms',
  ];
  for (const line of cited) t.is(findCitations(line).length, 1, `caught: ${line}`);
  for (const line of innocent) t.deepEqual(findCitations(line), [], `left alone: ${line}`);
});

test('no comment, test, bench, example or README cites a document outside the repository', (t) => {
  const problems: string[] = [];
  let read = 0;
  for (const path of scanned)
    for (const file of files(path)) {
      if (file === self) continue;
      read++;
      for (const found of findCitations(readFileSync(join(root, file), 'utf8'))) problems.push(`${file}: ${found}`);
    }
  t.true(read > 100, `the scan read the tree (${read} files)`);
  t.deepEqual(
    problems,
    [],
    'explain the reason in place or point to docs/architecture.md, docs/decisions/ or docs/contributing.md',
  );
});
