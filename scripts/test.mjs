#!/usr/bin/env node
// `npm test`: the TypeScript suite (ava) and, when cmake is present, the C++
// suite (ctest). It prints one line per test file, then every failure in
// full as ava words it (assertion, diff, source excerpt, stack), then one
// closing line `N passed, N failed, N skipped` that .ci/run adds up.
// Arguments are passed to ava (e.g. a file to run alone).
//
// ava's own reporter is read rather than its TAP: the TAP reporter crashes
// when a test file calls process.exit() and loses the rest of the run,
// while the default one reports the crash and goes on.
import { spawn } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import { join, relative, resolve, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { have } from './have.mjs';

const root = fileURLToPath(new URL('..', import.meta.url));
const totals = { passed: 0, failed: 0, skipped: 0 };
/** Failures in full, printed after the per-file lines. */
const failures = [];

/** Runs a command quietly and returns what it printed. */
function run(command, args, env = {}) {
  return new Promise((resolve) => {
    const child = spawn(command, args, {
      cwd: root,
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (chunk) => (out += chunk));
    child.stderr.on('data', (chunk) => (err += chunk));
    child.on('error', (error) => (err += `${error.message}\n`));
    child.on('close', (code, signal) => resolve({ out, err, code: code ?? (signal ? 128 : 1) }));
  });
}

/** Test files as ava names them (`cache › lifetime`), longest first, with the id we print (`cache/lifetime`). */
function testFiles() {
  const found = [];
  const walk = (dir) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const path = join(dir, entry.name);
      if (entry.isDirectory()) {
        if (entry.name !== 'node_modules' && entry.name !== 'fixtures') walk(path);
      } else if (/\.test\.[cm]?[jt]s$/.test(entry.name)) {
        const id = relative(join(root, 'test'), path)
          .split(sep)
          .join('/')
          .replace(/\.test\.[cm]?[jt]s$/, '');
        found.push({ id, prefix: `${id.split('/').join(' › ')} › ` });
      }
    }
  };
  walk(join(root, 'test'));
  return found.sort((a, b) => b.prefix.length - a.prefix.length);
}

/** The file id of a test title (`cache › lifetime › …` is cache/lifetime). */
function fileOfTitle(files, title) {
  const file = files.find((f) => title.startsWith(f.prefix));
  if (file) return file.id;
  // ava leaves the file out of the titles when it runs a single file.
  if (soleFile !== undefined) return soleFile;
  // A title outside test/: all but its last part.
  const parts = title.split(' › ');
  return parts.length > 1 ? parts.slice(0, -1).join('/') : '(ava)';
}

/** The id of the one test file named on the command line, if exactly one is. */
const soleFile = (() => {
  const named = process.argv
    .slice(2)
    .filter((arg) => !arg.startsWith('-') && /\.test\.[cm]?[jt]s$/.test(arg) && existsSync(arg));
  if (named.length !== 1) return undefined;
  const id = fileOfLine(` ${relative(root, resolve(named[0])).split(sep).join('/')}`);
  return id === '(ava)' ? undefined : id;
})();

/** The file id of the test file a line of ava's names by path, or '(ava)'. */
function fileOfLine(line) {
  const path = /(?:^|\s)test\/(\S+?)\.test\.[cm]?[jt]s\b/.exec(line);
  return path ? path[1] : '(ava)';
}

/**
 * Reads ava's default report. Before its first `─` rule come one line per
 * test (`✔ title`, `✘ [fail]: title message`, `- [skip] title`, `- [todo]
 * title`) and, in between, what went wrong outside tests (an uncaught
 * exception, a process.exit(), a timeout); between the rules, each failed
 * test in full; after the last rule, ava's summary.
 */
function readReport(out, files) {
  const perFile = new Map();
  const tally = (id) => {
    let counts = perFile.get(id);
    if (counts === undefined) perFile.set(id, (counts = { passed: 0, failed: 0, skipped: 0, crashed: undefined }));
    return counts;
  };
  const lines = out.split('\n');
  const firstRule = lines.findIndex((line) => /^\s*─\s*$/.test(line));
  const head = firstRule < 0 ? lines : lines.slice(0, firstRule);
  let block; // the out-of-test report being read, if any
  let blockFiles; // the files it names, to charge it to
  const closeBlock = () => {
    if (block === undefined) return;
    failures.push(block.join('\n').replace(/\n+$/, ''));
    if (/^(✘ |Uncaught |Unhandled )/.test(block[0])) {
      // A timeout names the files whose tests were still pending; a crash its file; else ava itself.
      const named = [...blockFiles].filter((id) => id !== '(ava)');
      const how = block[0].startsWith('✘ Timed out') ? 'timed out' : 'crashed';
      for (const id of named.length > 0 ? named : ['(ava)']) tally(id).crashed ??= how;
    }
    block = undefined;
  };
  let lastFail; // the failed test whose t.log() lines may follow
  const logs = new Map();
  for (const line of head) {
    let match;
    // A failed test's line is followed by the rest of its message and its t.log() lines, up to the next
    // line ava starts itself.
    if (/^ {2}(✔ |✘ |- \[|Uncaught exception in |Unhandled rejection in )/.test(line)) lastFail = undefined;
    if ((match = /^ {2}✔ (?:\[expected fail\] )?(.*?)(?: \(\d+(?:\.\d+)?m?s\))?$/.exec(line))) {
      closeBlock();
      tally(fileOfTitle(files, match[1])).passed++;
    } else if ((match = /^ {2}✘ \[fail\]: (.*)$/.exec(line))) {
      closeBlock();
      tally(fileOfTitle(files, match[1])).failed++;
      lastFail = match[1];
      logs.set(lastFail, []);
    } else if (lastFail !== undefined) {
      // Its t.log() lines: ava prints them here, not with the failure below, so they are moved there.
      // The rest of a message of several lines is printed below too.
      if (/^ {4}ℹ /.test(line)) logs.get(lastFail).push(line.replace(/^ {4}/, ''));
    } else if ((match = /^ {2}- \[(?:skip|todo)\] (.*)$/.exec(line))) {
      closeBlock();
      tally(fileOfTitle(files, match[1])).skipped++;
    } else if (/^ {4}ℹ /.test(line) && block === undefined) {
      // t.log() of a test that passed: shown only when it fails, in the part below.
    } else if (/^ {2}(✘ |Uncaught exception in |Unhandled rejection in )/.test(line)) {
      closeBlock();
      block = [line.replace(/^ {2}/, '')];
      blockFiles = new Set([fileOfLine(line)]);
    } else if (line.trim() !== '' || block !== undefined) {
      // Whatever else ava says outside a test is shown rather than lost.
      if (block === undefined) [block, blockFiles] = [[], new Set()];
      block.push(line.replace(/^ {2}/, ''));
      if ((match = /pending in (test\/\S+)/.exec(line))) blockFiles.add(fileOfLine(` ${match[1]}`));
    }
  }
  closeBlock();
  // One rule only: no test failed, and what follows it is the summary.
  const lastRule = lines.findLastIndex((line) => /^\s*─\s*$/.test(line));
  if (lastRule > firstRule) {
    const details = lines
      .slice(firstRule + 1, lastRule)
      .map((line) => line.replace(/^ {2}/, ''))
      .join('\n')
      .trim();
    // One block per failed test, its title first; its t.log() lines go under the title.
    for (const test of details.split(/\n{3,}/)) {
      if (test.trim() === '') continue;
      const [title, ...rest] = test.split('\n');
      const key = [...logs.keys()]
        .filter((fail) => fail === title || fail.startsWith(`${title} `))
        .sort((a, b) => a.length - b.length)[0];
      const logged = key === undefined ? [] : logs.get(key);
      failures.push([title, ...logged, ...rest].join('\n'));
    }
  }
  return perFile;
}

function plural(n, what) {
  return `${n} ${what}`;
}

async function ava() {
  const avaBin = `${root}node_modules/ava/entrypoints/cli.mjs`;
  // No colour: the report is parsed, and its words are what a log keeps.
  const { out, err, code } = await run(process.execPath, [avaBin, ...process.argv.slice(2)], { FORCE_COLOR: '0' });
  const perFile = readReport(out, testFiles());
  const ids = [...perFile.keys()].sort();
  const width = Math.max(0, ...ids.map((id) => id.length));
  let failed = 0;
  for (const id of ids) {
    const c = perFile.get(id);
    const bad = c.failed > 0 || c.crashed;
    const parts = [];
    if (c.failed > 0) parts.push(plural(c.failed, 'failed'));
    if (c.crashed) parts.push(c.crashed);
    parts.push(plural(c.passed, 'passed'));
    if (c.skipped > 0) parts.push(plural(c.skipped, 'skipped'));
    console.log(`${bad ? '✘' : '✔'} ${id.padEnd(width)}  ${parts.join(', ')}`);
    totals.passed += c.passed;
    totals.skipped += c.skipped;
    // A file that crashed counts once more: its tests that never ran are not in its counts.
    failed += c.failed + (c.crashed ? 1 : 0);
  }
  // A crash ava could not pin on a file, or one it did not report at all, is still a failure.
  if (failed === 0 && code !== 0) {
    failed = 1;
    if (failures.length === 0) failures.push(`ava exited with status ${code}\n${out.trim()}`);
  }
  totals.failed += failed;
  // Tests' own console output goes to stderr: noise in a green run, a clue in a red one.
  if (failed > 0 && err.trim() !== '') {
    const tail = err.trimEnd().split('\n').slice(-40);
    failures.push(`ava's stderr (the test files' console output), last ${tail.length} lines:\n${tail.join('\n')}`);
  }
}

async function ctest(name, buildDir, extra = []) {
  const configure = await run('cmake', ['-S', '.', '-B', buildDir, '-DCMAKE_BUILD_TYPE=RelWithDebInfo', ...extra]);
  const build = configure.code === 0 ? await run('cmake', ['--build', buildDir, '-j2']) : configure;
  if (build.code !== 0) {
    console.log(`✘ ${name}  build failed`);
    failures.push(`${name}: the build failed\n${(build.out + build.err).trim()}`);
    totals.failed += 1;
    return;
  }
  const { out, err, code } = await run('ctest', ['--test-dir', buildDir, '--output-on-failure']);
  const match = /tests passed, (\d+) tests failed out of (\d+)/.exec(out);
  let failed = 0;
  if (match) {
    failed = Number(match[1]);
    totals.passed += Number(match[2]) - failed;
    console.log(
      `${failed === 0 ? '✔' : '✘'} ${name}  ${failed > 0 ? `${failed} failed, ` : ''}${Number(match[2]) - failed} passed`,
    );
  } else if (code !== 0) {
    failed = 1;
    console.log(`✘ ${name}  ctest failed`);
  }
  totals.failed += failed;
  if (failed > 0) failures.push(`${name}:\n${(out + err).trim()}`);
}

await ava();
if (process.argv.length > 2) {
  // A file or pattern was named: that is a focused run, not the whole suite.
} else if (process.env.KB_CPP_TESTS === '0') {
  // .ci/run runs the C++ suite once, in its source-build stage.
} else if (!have('cmake') || !have('c++')) {
  console.log('# C++ suite skipped: install cmake and g++ (Debian packages cmake g++) to run it');
  totals.skipped += 1;
} else if (existsSync(`${root}/CMakeLists.txt`)) {
  await ctest('C++ (ctest)', 'build/cmake');
  if (process.env.KB_SANITIZE)
    await ctest(`C++ (ctest, ${process.env.KB_SANITIZE})`, 'build/cmake-sanitize', [
      `-DKB_SANITIZE=${process.env.KB_SANITIZE}`,
    ]);
}

for (const failure of failures) console.log(`\n${'─'.repeat(72)}\n${failure}`);
if (failures.length > 0) console.log(`${'─'.repeat(72)}\n`);
console.log(`${totals.passed} passed, ${totals.failed} failed, ${totals.skipped} skipped`);
process.exit(totals.failed === 0 ? 0 : 1);
