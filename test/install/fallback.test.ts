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
 * time too). The same install with the prebuild left in is the control: no
 * warning, and the addon loads with FileLock working.
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
import { join } from 'node:path';
import { promisify } from 'node:util';
import test from 'ava';
import { twins } from '../../src/native/core.ts';
import { builtPackage, npmCli } from '../helpers/built-package.ts';

const run = promisify(execFile);

/**
 * The package's dependencies and theirs, as installed in its node_modules
 * (optional ones left out, as the install below omits them).
 */
function runtimeDependencies(root: string): string[] {
  const found = new Set<string>();
  const visit = (dir: string): void => {
    const manifest = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as {
      dependencies?: Record<string, string>;
    };
    for (const name of Object.keys(manifest.dependencies ?? {})) {
      if (found.has(name)) continue;
      found.add(name);
      visit(join(root, 'node_modules', name));
    }
  };
  visit(root);
  return [...found].sort();
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
  /** What every install below shares: the packed tarballs, a hidden PATH, an npm cache of its own. */
  interface Setup {
    work: string;
    /** Application dependencies: each package name and its tarball. */
    tarballs: Map<string, string>;
    /** koa-buffer's tarball with prebuilds/ taken out. */
    stripped: string;
    env: NodeJS.ProcessEnv;
  }
  let setup: Setup;

  test.before(async (t) => {
    t.timeout(240_000, 'building dist/ when it is older than src/, then packing');
    const root = await builtPackage();
    const work = mkdtempSync(join(tmpdir(), 'kb-fallback-'));

    // The package and its dependencies, packed as the registry would serve them.
    const deps = runtimeDependencies(root);
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
    const tarballs = new Map(
      (JSON.parse(packed) as Array<{ name: string; filename: string }>).map(({ name, filename }) => [
        name,
        join(work, filename.replace(/^@/, '').replace('/', '-')),
      ]),
    );

    // The same package without prebuilds/, as on a platform it has no prebuild for.
    const unpacked = join(work, 'unpacked');
    mkdirSync(unpacked);
    await run('tar', ['-xzf', tarballs.get('koa-buffer')!, '-C', unpacked]);
    if (!existsSync(join(unpacked, 'package', 'prebuilds')))
      throw new Error('the packed package carries no prebuilds/');
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
    setup = { work, tarballs, stripped, env };
  });

  test.after.always(() => {
    if (setup) rmSync(setup.work, { recursive: true, force: true });
  });

  /** Installs koa-buffer from `tarball` into a new application, offline, showing install scripts' output. */
  async function install(name: string, tarball: string): Promise<{ appDir: string; failed: boolean; output: string }> {
    const appDir = join(setup.work, name);
    mkdirSync(appDir);
    const dependencies = Object.fromEntries(
      [...setup.tarballs].map(([dep, file]) => [dep, `file:${dep === 'koa-buffer' ? tarball : file}`]),
    );
    writeFileSync(join(appDir, 'package.json'), JSON.stringify({ name, private: true, type: 'module', dependencies }));
    const args = [
      'install',
      '--offline',
      '--no-audit',
      '--no-fund',
      '--omit=optional',
      '--legacy-peer-deps',
      '--foreground-scripts',
    ];
    return run(process.execPath, [npm!, ...args], { cwd: appDir, env: setup.env, maxBuffer: 16 * 1024 * 1024 }).then(
      ({ stdout, stderr }) => ({ appDir, failed: false, output: `${stdout}${stderr}` }),
      (error: { stdout?: string; stderr?: string }) => ({
        appDir,
        failed: true,
        output: `${error.stdout ?? ''}${error.stderr ?? ''}`,
      }),
    );
  }

  test('the hidden PATH has no build tool', async (t) => {
    const { stdout } = await run(
      '/bin/sh',
      ['-c', 'for p in python3 python make gmake cc c++ g++ clang; do command -v $p; done; true'],
      { env: setup.env },
    );
    t.is(stdout.trim(), '');
  });

  test('with the prebuild: installs silently and loads the addon, FileLock included', async (t) => {
    const { appDir, failed, output } = await install('app-prebuild', setup.tarballs.get('koa-buffer')!);
    t.false(failed, `npm install failed:\n${output}`);
    t.notRegex(output, /koa-buffer: warning/);
    writeFileSync(
      join(appDir, 'use.js'),
      `
import { FileLock } from 'koa-buffer';
const locks = new FileLock({ dir: 'locks' });
const [guard, error] = locks.acquire('key');
console.log(JSON.stringify({ taken: guard !== null, error: error ?? null, released: locks.release(guard)[0] }));
`,
    );
    const used = await run(process.execPath, ['use.js'], { cwd: appDir, env: setup.env });
    t.deepEqual(JSON.parse(used.stdout), { taken: true, error: null, released: true });
    t.notRegex(used.stderr, /KB_NATIVE_UNAVAILABLE/);
  });

  test('without a prebuild or a compiler: one warning, the twins serve, FileLock refuses', async (t) => {
    const { appDir, failed, output: installOutput } = await install('app-fallback', setup.stripped);
    t.false(failed, `npm install failed:\n${installOutput}`);
    const warnings = installOutput.split('\n').filter((line) => line.startsWith('koa-buffer: warning:'));
    t.is(warnings.length, 1, `one warning from the install step:\n${installOutput}`);
    t.regex(warnings[0] ?? '', /Python/, 'it names what node-gyp missed');
    t.regex(warnings[0] ?? '', /npm rebuild koa-buffer/, 'and what to do');
    t.notRegex(installOutput, /gyp ERR!/, "node-gyp's own error lines go to the log, not the terminal");
    const installed = join(appDir, 'node_modules', 'koa-buffer');
    t.regex(readFileSync(join(installed, 'build', 'install.log'), 'utf8'), /gyp ERR!/, 'the full build log is kept');
    t.false(existsSync(join(installed, 'prebuilds')));
    const release = join(installed, 'build', 'Release');
    t.false(existsSync(release) && readdirSync(release).some((f) => f.endsWith('.node')), 'nothing was built');

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
    const used = await run(process.execPath, ['use.js'], { cwd: appDir, env: setup.env });
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
