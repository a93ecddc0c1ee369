/**
 * A file's stat is used again for at most a second, and only while the size
 * and mtime the response declares (koa-send's Content-Length and
 * Last-Modified) still match it: an edit that changes either is seen at
 * once, and the kept stats stay within their bytes.
 */
import { mkdtempSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import zlib from 'node:zlib';
import test from 'ava';
import serveStatic from 'koa-static';
import { buffer } from '../../src/buffer.ts';
import { keptStatsBytes, recentStat, statsBytesMax, statValidMs } from '../../src/pipeline/file-stats.ts';
import { serve } from '../helpers/serve.ts';

function scratch(t: import('ava').ExecutionContext): string {
  const dir = mkdtempSync(join(tmpdir(), 'kb-file-stats-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** What koa-send declares of a file: its size and its mtime as Last-Modified. */
function declaredOf(path: string): { size: number; lastModified: string } {
  const stats = statSync(path);
  return { size: stats.size, lastModified: stats.mtime.toUTCString() };
}

test.serial('the same file declared the same within the second: the kept stat, not a new one', async (t) => {
  const path = join(scratch(t), 'a.css');
  writeFileSync(path, 'a { color: red }');
  const now = Date.now();
  const first = await recentStat(path, declaredOf(path), now);
  t.is(await recentStat(path, declaredOf(path), now + statValidMs - 1), first);
});

test.serial('a kept stat is not used past its second, nor without a declared size', async (t) => {
  const path = join(scratch(t), 'a.css');
  writeFileSync(path, 'a { color: red }');
  const now = Date.now();
  const first = await recentStat(path, declaredOf(path), now);
  t.not(await recentStat(path, declaredOf(path), now + statValidMs), first, 'past the second');
  const kept = await recentStat(path, declaredOf(path), now + statValidMs);
  t.not(await recentStat(path, { size: undefined, lastModified: undefined }, now + statValidMs), kept, 'no size');
});

test.serial('an edit that changes the size or the second of the mtime is a new stat at once', async (t) => {
  const path = join(scratch(t), 'a.css');
  writeFileSync(path, 'a { color: red }');
  const now = Date.now();
  await recentStat(path, declaredOf(path), now);
  writeFileSync(path, 'a { color: blue }');
  const resized = await recentStat(path, declaredOf(path), now + 1);
  t.is(resized.size, 17, 'the new size');
  writeFileSync(path, 'a { color: navy }');
  utimesSync(path, new Date(), new Date(resized.mtimeMs + 3000));
  const touched = await recentStat(path, declaredOf(path), now + 2);
  t.is(touched.mtime.toUTCString(), new Date(resized.mtimeMs + 3000).toUTCString(), 'the new mtime');
});

test.serial('the kept stats stay within their bytes, however many long paths are read', async (t) => {
  const dir = scratch(t);
  const now = Date.now();
  for (let i = 0; i < 1500; i++) {
    const path = join(dir, `${String(i).padStart(4, '0')}${'x'.repeat(200)}.css`);
    writeFileSync(path, String(i));
    await recentStat(path, declaredOf(path), now);
    t.true(keptStatsBytes() <= statsBytesMax);
  }
  t.true(keptStatsBytes() > statsBytesMax / 2, 'the table was filled, not emptied');
});

test.serial('through koa-static, a file edited right after it was kept is sent new', async (t) => {
  const dir = scratch(t);
  const path = join(dir, 'site.css');
  const rules = (color: string, n: number): string => `.c { color: ${color} }\n`.repeat(n);
  writeFileSync(path, rules('red', 400));
  const server = await serve(t, [buffer(), serveStatic(dir)]);
  const headers = { 'accept-encoding': 'br' };
  for (let i = 0; i < 2; i++) {
    const response = await server.request('/site.css', { headers });
    t.true(zlib.brotliDecompressSync(response.body).equals(readFileSync(path)));
  }
  writeFileSync(path, rules('green', 400)); // a new size, within the second
  const edited = await server.request('/site.css', { headers });
  t.is(zlib.brotliDecompressSync(edited.body).toString(), rules('green', 400));
});
