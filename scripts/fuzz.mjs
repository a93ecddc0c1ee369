#!/usr/bin/env node
// `npm run fuzz -- --time N`: builds the libFuzzer targets of test/fuzz with
// clang under ASan/UBSan in build/fuzz, runs each for N seconds (default 60)
// from the committed corpus, seeds generated from support/squash-corpus and
// the corpus kept from earlier runs, then replays everything that run kept
// with the twin oracle on every input. Prints executions per target and
// closes with `N passed, N failed, N skipped` (one per target), which
// .ci/run adds up.
//
//   node scripts/fuzz.mjs [--time N] [--only squash|md5] [--max-len BYTES]
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { have } from './have.mjs';

const root = fileURLToPath(new URL('..', import.meta.url));
const build = join(root, 'build', 'fuzz');
const targets = ['squash', 'md5'];
const INSTALL = 'install clang and libclang-rt-14-dev (Debian packages clang libclang-rt-14-dev) to fuzz';

function arg(name, fallback) {
  const at = process.argv.indexOf(name);
  if (at < 0) return fallback;
  const value = process.argv[at + 1];
  if (value === undefined || value.startsWith('--')) {
    console.error(`fuzz: ${name} needs a value`);
    process.exit(2);
  }
  return value;
}

const seconds = Number(arg('--time', '60'));
if (!Number.isFinite(seconds) || seconds <= 0) {
  console.error(`fuzz: --time must be a positive number of seconds (received ${arg('--time', '')})`);
  process.exit(2);
}
const only = arg('--only', undefined);
if (only !== undefined && !targets.includes(only)) {
  console.error(`fuzz: --only must be one of ${targets.join(', ')} (received ${only})`);
  process.exit(2);
}
const maxLen = Number(arg('--max-len', '4096'));
const chosen = only ? [only] : targets;
const totals = { passed: 0, failed: 0, skipped: 0 };

function finish() {
  console.log(`${totals.passed} passed, ${totals.failed} failed, ${totals.skipped} skipped`);
  process.exit(totals.failed === 0 ? 0 : 1);
}

/**
 * Runs a command; resolves to its exit code and its output, stderr after
 * stdout (libFuzzer writes its statistics to stderr and its recommended
 * dictionary to stdout: read together, their lines would interleave).
 */
function run(command, args, options = {}) {
  return new Promise((resolve) => {
    const child = spawn(command, args, { cwd: root, stdio: ['ignore', 'pipe', 'pipe'], ...options });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => {
      stdout += chunk;
    });
    child.stderr.on('data', (chunk) => {
      stderr += chunk;
    });
    child.on('close', (code, signal) => resolve({ code: code ?? (signal ? 128 : 1), out: `${stdout}\n${stderr}` }));
  });
}

function skipAll(why) {
  for (const t of chosen) console.log(`# ${t}_fuzz skipped: ${why}`);
  totals.skipped += chosen.length;
  finish();
}

// --- build -------------------------------------------------------------------
if (!have('clang++') || !have('cmake')) skipAll(INSTALL + (have('cmake') ? '' : ', and cmake'));

// A build directory configured with another compiler cannot be switched.
const cache = join(build, 'CMakeCache.txt');
if (existsSync(cache) && !/CMAKE_CXX_COMPILER:[A-Z]+=.*clang\+\+/.test(readFileSync(cache, 'utf8'))) {
  rmSync(build, { recursive: true, force: true });
}
console.log('# building the fuzz targets (clang, ASan + UBSan) in build/fuzz');
const configure = await run('cmake', [
  '-S',
  '.',
  '-B',
  build,
  '-DKB_FUZZERS=ON',
  '-DKB_TESTS=OFF',
  '-DCMAKE_CXX_COMPILER=clang++',
  '-DKB_SANITIZE=address,undefined',
  '-DCMAKE_BUILD_TYPE=RelWithDebInfo',
]);
if (configure.code !== 0) {
  process.stdout.write(configure.out);
  totals.failed += chosen.length;
  finish();
}
if (!/KB_HAVE_LIBFUZZER:INTERNAL=1/.test(readFileSync(cache, 'utf8')))
  skipAll(`clang++ cannot link -fsanitize=fuzzer: ${INSTALL}`);
const compile = await run('cmake', ['--build', build, '-j2', '--target', ...chosen.map((t) => `${t}_fuzz`)]);
if (compile.code !== 0) {
  process.stdout.write(compile.out);
  totals.failed += chosen.length;
  finish();
}

// --- seeds from the fixtures ---------------------------------------------------
const fixtures = join(root, 'support', 'squash-corpus');
const cases = JSON.parse(readFileSync(join(fixtures, 'cases.json'), 'utf8'));
const pages = readdirSync(fixtures)
  .filter((f) => f.endsWith('.html') && !f.endsWith('.expected.html'))
  .sort();

/** A page cut into pieces the fuzzer will accept whole (it truncates longer inputs). */
function slices(bytes, size) {
  const out = [];
  for (let at = 0; at < bytes.length || out.length === 0; at += size) out.push(bytes.subarray(at, at + size));
  return out;
}

/** Option byte and fields for squash_fuzz.cc: level 1, plus the case's link options when it has them. */
function squashPrefix(options = {}) {
  if (!options.rewriteLinks) return Buffer.from([0x01]);
  // level 1 | rewriteLinks | host from the input | path from the input
  const field = (s) => Buffer.concat([Buffer.from([Buffer.byteLength(s)]), Buffer.from(s)]);
  return Buffer.concat([
    Buffer.from([0x01 | 0x04 | (3 << 3) | (3 << 5)]),
    field(options.host ?? ''),
    field(options.path ?? ''),
  ]);
}

function writeSeeds(target, seeds) {
  const dir = join(build, 'seeds', target);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  seeds.forEach((bytes, i) => writeFileSync(join(dir, String(i).padStart(4, '0')), bytes));
  return dir;
}

const seedDirs = {
  squash: () => {
    const seeds = [];
    for (const page of pages) {
      const prefix = squashPrefix(cases[page]);
      for (const piece of slices(readFileSync(join(fixtures, page)), maxLen - 64))
        seeds.push(Buffer.concat([prefix, piece]));
    }
    return writeSeeds('squash', seeds);
  },
  md5: () => {
    const seeds = [];
    // Lengths around the 64-byte block and its 56-byte padding boundary, fed
    // whole and in pieces that straddle blocks.
    for (const n of [0, 1, 55, 56, 57, 63, 64, 65, 119, 120, 127, 128, 129, 1000]) {
      const data = Buffer.alloc(n, 0x61 + (n % 26));
      seeds.push(Buffer.concat([Buffer.from([0]), data]));
      seeds.push(Buffer.concat([Buffer.from([3, 1, 0, 63, 0, 0, 0]), data]));
    }
    for (const page of pages.slice(0, 6))
      seeds.push(
        Buffer.concat([Buffer.from([2, 100, 0, 64, 0]), readFileSync(join(fixtures, page)).subarray(0, 4096)]),
      );
    return writeSeeds('md5', seeds);
  },
};

// --- run -------------------------------------------------------------------------
const stat = (out, name) => Number((new RegExp(`stat::${name}:\\s+(\\d+)`).exec(out) ?? [])[1] ?? 0);

for (const target of chosen) {
  const binary = join(build, 'test', 'fuzz', `${target}_fuzz`);
  const corpus = join(build, 'corpus', target); // what runs keep; not committed
  const artifacts = join(build, 'artifacts', target);
  mkdirSync(corpus, { recursive: true });
  mkdirSync(artifacts, { recursive: true });
  const seeds = seedDirs[target]();
  const committed = join(root, 'test', 'fuzz', 'corpus', target);
  const dict = join(root, 'test', 'fuzz', 'html.dict');
  console.log(`\n# ${target}_fuzz: ${seconds} s`);
  const flags = [
    `-max_total_time=${seconds}`,
    `-max_len=${maxLen}`,
    '-print_final_stats=1',
    '-timeout=30',
    `-artifact_prefix=${artifacts}/`,
    '-print_pcs=0',
    '-reload=0',
    ...(target === 'squash' ? [`-dict=${dict}`] : []),
  ];
  const fuzz = await run(binary, [...flags, corpus, committed, seeds]);
  const lines = fuzz.out.split('\n');
  // The interesting part: the oracle's line, any failure with its context, the stats.
  const failedAt = lines.findIndex((l) =>
    /FUZZ CHECK FAILED|ERROR: (AddressSanitizer|libFuzzer|UndefinedBehaviorSanitizer)|runtime error:/.test(l),
  );
  for (const l of lines) if (/^twin oracle|^INFO: seed corpus|DONE|stat::/.test(l)) console.log(l);
  const executions = stat(fuzz.out, 'number_of_executed_units') || Number(/#(\d+)\s+DONE/.exec(fuzz.out)?.[1] ?? 0);
  console.log(
    `${target}: ${executions} executions in ${seconds} s (${stat(fuzz.out, 'average_exec_per_sec')}/s), ${stat(fuzz.out, 'new_units_added')} new inputs`,
  );
  if (fuzz.code !== 0 || failedAt >= 0) {
    console.log(lines.slice(Math.max(0, failedAt), failedAt + 40).join('\n'));
    const crash = /Test unit written to (\S+)/.exec(fuzz.out)?.[1];
    console.log(
      `not ok ${target}_fuzz: ${crash ? `failing input in ${crash}; keep it in test/fuzz/corpus/${target}/ once fixed` : `exit code ${fuzz.code}`}`,
    );
    totals.failed += 1;
    continue;
  }
  // Every input this and earlier runs kept (each found new coverage), checked against the twin.
  const replay = await run(binary, ['-runs=0', `-max_len=${maxLen}`, `-artifact_prefix=${artifacts}/`, corpus], {
    env: { ...process.env, KB_FUZZ_ORACLE_EVERY: '1' },
  });
  const kept = readdirSync(corpus).length;
  if (replay.code !== 0) {
    console.log(replay.out.split('\n').slice(-40).join('\n'));
    console.log(`not ok ${target}_fuzz: replaying the ${kept} kept inputs with the oracle on every one failed`);
    totals.failed += 1;
    continue;
  }
  console.log(`ok ${target}_fuzz: ${executions} executions, then ${kept} kept inputs replayed against the twin`);
  totals.passed += 1;
}
finish();
