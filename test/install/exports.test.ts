/**
 * `package.json` `exports` as applications meet them: a real `node` child
 * loads the built package by name, from a folder whose node_modules/koa-buffer
 * links to this tree, once through `require` (a CommonJS app, which needs
 * Node's require(esm): 20.19 or 22.12) and once through `import`. The
 * CommonJS app serves a page through buffer() over loopback, so the whole
 * middleware, not just the entry file, loads that way.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, mkdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import test from 'ava';
import { builtPackage } from '../helpers/built-package.ts';

const run = promisify(execFile);

/** The names the package exports, as the ESM entry lists them. */
const publicValues = [
  'BufferOptionError',
  'FileLock',
  'Lock',
  'Md5',
  'MemoryLock',
  'Messages',
  'RedisLock',
  'buffer',
  'bufferSection',
  'clusterMetrics',
  'clusterStats',
  'defaultMessages',
  'front',
  'md5',
  'prometheusContentType',
  'squashHtml',
];

let app: string;

test.before(async (t) => {
  t.timeout(240_000, 'building dist/ when it is older than src/');
  const root = await builtPackage();
  app = mkdtempSync(join(tmpdir(), 'kb-exports-'));
  mkdirSync(join(app, 'node_modules'));
  // A junction needs no privilege on Windows; elsewhere the type is ignored.
  symlinkSync(root, join(app, 'node_modules', 'koa-buffer'), 'junction');
  symlinkSync(join(root, 'node_modules', 'koa'), join(app, 'node_modules', 'koa'), 'junction');
  writeFileSync(join(app, 'package.json'), JSON.stringify({ name: 'app', private: true }));
});

test.after.always(() => {
  if (app) rmSync(app, { recursive: true, force: true });
});

async function node(file: string, source: string): Promise<{ out: Record<string, unknown>; stderr: string }> {
  writeFileSync(join(app, file), source);
  const { stdout, stderr } = await run(process.execPath, [file], { cwd: app, timeout: 30_000 });
  return { out: JSON.parse(stdout) as Record<string, unknown>, stderr };
}

test('a CommonJS app requires koa-buffer by name and serves through buffer()', async (t) => {
  const { out } = await node(
    'app.cjs',
    `
const { createHash } = require('node:crypto');
const Koa = require('koa');
const koaBuffer = require('koa-buffer');
const { buffer, md5 } = koaBuffer;
const app = new Koa();
app.use(buffer({ optimiseContent: 1 }));
app.use((ctx) => { ctx.type = 'html'; ctx.body = '<p>\\n   ' + 'hello world '.repeat(200) + '\\n</p>'; });
const server = app.listen(0, '127.0.0.1', async () => {
  const response = await fetch('http://127.0.0.1:' + server.address().port + '/', { headers: { 'accept-encoding': 'gzip' } });
  const body = await response.text();
  server.close();
  import('koa-buffer').then((esm) => {
    console.log(JSON.stringify({
      names: Object.keys(koaBuffer).sort(),
      md5: md5('hello') === createHash('md5').update('hello').digest('hex'),
      sameModule: esm.buffer === buffer,
      status: response.status,
      encoding: response.headers.get('content-encoding'),
      etag: response.headers.get('etag'),
      squashed: body.startsWith('<p>\\nhello world'),
    }));
  });
});
`,
  );
  t.deepEqual(out.names, publicValues);
  t.true(out.md5, 'md5 through require');
  t.true(out.sameModule, 'require and import give one module instance: no dual-package hazard');
  t.is(out.status, 200);
  t.is(out.encoding, 'gzip');
  t.regex(String(out.etag), /^"[0-9a-f]{32}/);
  t.true(out.squashed, 'the page was squashed');
});

test('an ES module app imports koa-buffer by name, named and namespace imports alike', async (t) => {
  const { out } = await node(
    'app.mjs',
    `
import { createHash } from 'node:crypto';
import * as koaBuffer from 'koa-buffer';
import { md5, Md5, squashHtml, BufferOptionError, bufferSection } from 'koa-buffer';
let optionError;
try { bufferSection({ cache: true }); } catch (error) { optionError = error; }
console.log(JSON.stringify({
  names: Object.keys(koaBuffer).sort(),
  md5: md5('hello') === createHash('md5').update('hello').digest('hex'),
  streamed: new Md5().update('hel').update('lo').digest('hex') === md5('hello'),
  squashed: squashHtml('<p>\\n   a   b\\n</p>').toString(),
  optionError: optionError instanceof BufferOptionError,
  hasDefault: 'default' in koaBuffer,
}));
`,
  );
  t.deepEqual(out.names, publicValues);
  t.true(out.md5);
  t.true(out.streamed);
  t.is(out.squashed, '<p>\na b\n</p>');
  t.true(out.optionError, 'bufferSection refuses an undeclarable key with BufferOptionError');
  t.false(out.hasDefault, 'named exports only, as the README shows');
});

test('only the entry point and package.json are exported', async (t) => {
  const { out } = await node(
    'deep.cjs',
    `
let code;
try { require('koa-buffer/dist/index.js'); } catch (error) { code = error.code; }
console.log(JSON.stringify({ code, version: require('koa-buffer/package.json').version }));
`,
  );
  t.is(out.code, 'ERR_PACKAGE_PATH_NOT_EXPORTED');
  t.regex(String(out.version), /^\d+\.\d+\.\d+/);
});
