#!/usr/bin/env node
// `npm test`: the TypeScript suite (ava) and, when cmake is present, the C++
// suite (ctest), with one closing line `N passed, N failed, N skipped` that
// .ci/run adds up. Arguments are passed to ava (e.g. a file to run alone).
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { have } from './have.mjs';

const root = fileURLToPath(new URL('..', import.meta.url));
const totals = { passed: 0, failed: 0, skipped: 0 };

/** Runs a command, echoing its output, and returns what it printed. */
function run(command, args, env = {}) {
  return new Promise((resolve) => {
    const child = spawn(command, args, {
      cwd: root,
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (chunk) => {
      out += chunk;
      process.stdout.write(chunk);
    });
    child.stderr.on('data', (chunk) => {
      out += chunk;
      process.stderr.write(chunk);
    });
    child.on('close', (code, signal) => resolve({ out, code: code ?? (signal ? 128 : 1) }));
  });
}

function count(out, pattern) {
  const match = pattern.exec(out);
  return match ? Number(match[1]) : 0;
}

async function ava() {
  const avaBin = `${root}node_modules/ava/entrypoints/cli.mjs`;
  const { out, code } = await run(process.execPath, [avaBin, '--tap', ...process.argv.slice(2)]);
  const passed = count(out, /^# pass (\d+)$/m);
  const failed = count(out, /^# fail (\d+)$/m);
  const skipped = count(out, /^# skip (\d+)$/m) + count(out, /^# todo (\d+)$/m);
  totals.passed += passed;
  totals.skipped += skipped;
  // A crash or uncaught exception may leave ava with no failed test counted: still a failure.
  totals.failed += failed || (code !== 0 ? 1 : 0);
}

async function ctest(buildDir, extra = []) {
  const configure = await run('cmake', ['-S', '.', '-B', buildDir, '-DCMAKE_BUILD_TYPE=RelWithDebInfo', ...extra]);
  const build = configure.code === 0 ? await run('cmake', ['--build', buildDir, '-j2']) : configure;
  if (build.code !== 0) {
    totals.failed += 1;
    return;
  }
  const { out, code } = await run('ctest', ['--test-dir', buildDir, '--output-on-failure']);
  const match = /tests passed, (\d+) tests failed out of (\d+)/.exec(out);
  if (match) {
    const failed = Number(match[1]);
    totals.failed += failed;
    totals.passed += Number(match[2]) - failed;
  } else if (code !== 0) totals.failed += 1;
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
  await ctest('build/cmake');
  if (process.env.KB_SANITIZE) await ctest('build/cmake-sanitize', [`-DKB_SANITIZE=${process.env.KB_SANITIZE}`]);
}

console.log(`${totals.passed} passed, ${totals.failed} failed, ${totals.skipped} skipped`);
process.exit(totals.failed === 0 ? 0 : 1);
