/**
 * Install everywhere: on a platform with neither a prebuild nor a compiler,
 * `npm install koa-buffer` still succeeds, with one warning, and the package
 * works: md5 and squashHtml through the TypeScript twins (one warning when it
 * loads), FileLock refusing with an error that says what to do.
 *
 * Played for real: the package is packed with `npm pack`, its prebuilds/ are
 * taken out of the tarball, and npm installs it into a fresh application
 * with a PATH holding only `node` and `sh`, so node-gyp finds no Python,
 * make or compiler. It stays offline: the dependencies are packed from this
 * tree's node_modules and named by the application, and the optional
 * zstd-napi is left out (it has its own install step and is optional at run
 * time too).
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readdirSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import test from 'ava';
import { twins } from '../../src/native/core.ts';
import { builtPackage } from '../helpers/built-package.ts';

const run = promisify(execFile);

/** npm's own entry script, run with this node so that the hidden PATH needs no `npm` in it. */
function npmCli(): string | undefined {
  const candidates = [
    process.env.npm_execpath,
    join(dirname(process.execPath), '..', 'lib', 'node_modules', 'npm', 'bin', 'npm-cli.js'),
    join(dirname(process.execPath), 'node_modules', 'npm', 'bin', 'npm-cli.js'),
  ];
  return candidates.find((file) => file?.endsWith('npm-cli.js') && existsSync(file));
}

const npm = npmCli();
const skip =
  process.platform === 'win32'
    ? 'hiding the compiler from PATH is done the POSIX way; the Windows release job installs without prebuilds instead'
    : !npm
      ? 'npm-cli.js was not found beside node: install npm with node'
      : !existsSync('/bin/sh')
        ? 'no /bin/sh for npm to run the install script with'
        : undefined;

if (skip) {
  test('install without a prebuild or a compiler', (t) => {
    t.log(`# fallback install test skipped: ${skip}`);
    t.pass();
  });
} else {
  test('install without a prebuild or a compiler: one warning, the twins serve, FileLock refuses', async (t) => {
    t.timeout(240_000, 'building dist/ when it is older than src/, packing and installing');
    const root = await builtPackage();
    const work = mkdtempSync(join(tmpdir(), 'kb-fallback-'));
    t.teardown(() => rmSync(work, { recursive: true, force: true }));

    // The package and its dependencies, packed as the registry would serve them.
    const deps = ['lru-cache', 'node-addon-api', 'node-gyp-build'];
    const { stdout: packed } = await run(
      process.execPath,
      [
        npm!,
        'pack',
        '--json',
        '--ignore-scripts',
        '--pack-destination',
        work,
        '.',
        ...deps.map((d) => `./node_modules/${d}`),
      ],
      { cwd: root, maxBuffer: 16 * 1024 * 1024 },
    );
    const tarballs = (JSON.parse(packed) as Array<{ name: string; filename: string }>).map(({ name, filename }) => ({
      name,
      file: join(work, filename.replace(/^@/, '').replace('/', '-')),
    }));
    const own = tarballs.find(({ name }) => name === 'koa-buffer')!;

    // Without prebuilds/: this platform has no prebuild.
    const unpacked = join(work, 'unpacked');
    mkdirSync(unpacked);
    await run('tar', ['-xzf', own.file, '-C', unpacked]);
    t.true(existsSync(join(unpacked, 'package', 'prebuilds')), 'the packed package carries prebuilds/');
    rmSync(join(unpacked, 'package', 'prebuilds'), { recursive: true });
    const stripped = join(work, 'koa-buffer-without-prebuilds.tgz');
    await run('tar', ['-czf', stripped, '-C', unpacked, 'package']);

    // A PATH with node and sh only: node-gyp can find no Python, make or compiler.
    const bin = join(work, 'bin');
    mkdirSync(bin);
    symlinkSync(process.execPath, join(bin, 'node'));
    symlinkSync('/bin/sh', join(bin, 'sh'));
    const env = {
      PATH: bin,
      HOME: join(work, 'home'),
      npm_config_cache: join(work, 'npm-cache'),
      npm_config_update_notifier: 'false',
    };
    const { stdout: found } = await run(
      '/bin/sh',
      ['-c', 'for p in python3 python make gmake cc c++ g++ clang; do command -v $p; done; true'],
      { env },
    );
    t.is(found.trim(), '', 'no build tool on the hidden PATH');

    const appDir = join(work, 'app');
    mkdirSync(appDir);
    const dependencies = Object.fromEntries(
      tarballs.map(({ name, file }) => [name, `file:${name === 'koa-buffer' ? stripped : file}`]),
    );
    writeFileSync(
      join(appDir, 'package.json'),
      JSON.stringify({ name: 'app', private: true, type: 'module', dependencies }),
    );

    const installed = await run(
      process.execPath,
      [
        npm!,
        'install',
        '--offline',
        '--no-audit',
        '--no-fund',
        '--omit=optional',
        '--legacy-peer-deps',
        '--foreground-scripts',
      ],
      { cwd: appDir, env, maxBuffer: 16 * 1024 * 1024 },
    ).catch((error: { code: number; stdout: string; stderr: string }) => error);
    const installOutput = `${installed.stdout}${installed.stderr}`;
    t.false('code' in installed && installed.code !== 0, `npm install failed:\n${installOutput}`);
    const warnings = installOutput.split('\n').filter((line) => line.startsWith('koa-buffer: warning:'));
    t.is(warnings.length, 1, `one warning from the install step:\n${installOutput}`);
    t.regex(warnings[0] ?? '', /Python/, 'it names what node-gyp missed');
    t.regex(warnings[0] ?? '', /npm rebuild koa-buffer/, 'and what to do');
    t.notRegex(installOutput, /gyp ERR!/, "node-gyp's own error lines go to the log, not the terminal");
    const installed_ = join(appDir, 'node_modules', 'koa-buffer');
    t.regex(readFileSync(join(installed_, 'build', 'install.log'), 'utf8'), /gyp ERR!/, 'the full build log is kept');
    t.false(existsSync(join(installed_, 'prebuilds')));
    t.false(
      existsSync(join(installed_, 'build', 'Release')) &&
        readdirSync(join(installed_, 'build', 'Release')).some((f) => f.endsWith('.node')),
    );

    // The application uses it.
    writeFileSync(
      join(appDir, 'use.js'),
      `
import { md5, Md5, squashHtml, FileLock } from 'koa-buffer';
const page = '<div>\\n   <p>  hello   world </p>\\n\\n   <pre>  kept  </pre>\\n</div>';
let lockError;
try { new FileLock({ dir: 'locks' }); } catch (error) { lockError = { code: error.code, message: error.message }; }
console.log(JSON.stringify({
  md5: md5('héllo'),
  streamed: new Md5().update('hé').update('llo').digest('hex'),
  squashed: squashHtml(page).toString('base64'),
  page,
  lockError,
}));
`,
    );
    const used = await run(process.execPath, ['use.js'], { cwd: appDir, env });
    const out = JSON.parse(used.stdout) as {
      md5: string;
      streamed: string;
      squashed: string;
      page: string;
      lockError?: { code: string; message: string };
    };
    const expectedMd5 = createHash('md5').update('héllo').digest('hex');
    t.is(out.md5, expectedMd5);
    t.is(out.streamed, expectedMd5);
    t.is(out.squashed, twins.squashHtml(out.page).toString('base64'), 'the twin squashes as in this process');
    t.is(out.lockError?.code, 'KB_NATIVE_UNAVAILABLE');
    t.regex(out.lockError?.message ?? '', /FileLock needs the native addon/);
    t.regex(out.lockError?.message ?? '', /npm rebuild koa-buffer/);
    t.regex(out.lockError?.message ?? '', /RedisLock .* or MemoryLock/);
    const loadWarnings = used.stderr.split('\n').filter((line) => line.includes('KB_NATIVE_UNAVAILABLE'));
    t.is(loadWarnings.length, 1, `one warning when the package loads:\n${used.stderr}`);
    t.regex(loadWarnings[0] ?? '', /TypeScript twins/);
  });
}
