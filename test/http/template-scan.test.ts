/**
 * The template scan behind Last-Modified and the cache's staleness rule
 * (`templatePaths`) on hostile trees: directory symlink cycles are followed
 * no more than once (by device and inode), and a tree deeper or larger than
 * the scan's bounds is scanned as far as the bounds, with one log line.
 * Each server runs in a child process: a scan that never ends would block
 * the test's own event loop.
 */
import { mkdirSync, mkdtempSync, rmSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import test, { type ExecutionContext } from 'ava';
import { mtimeTrustMs, scanBounds } from '../../src/http/last-modified.ts';
import { fixture, spawnChild, type LineChild } from '../helpers/children.ts';
import { logOnFailure } from '../helpers/log-on-failure.ts';
import { rawRequest, type RawResponse } from '../helpers/serve.ts';

function tree(t: ExecutionContext): string {
  const dir = mkdtempSync(join(tmpdir(), 'kb-templates-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** A file with a known mtime (seconds since the epoch). */
function file(path: string, seconds: number): void {
  writeFileSync(path, '<p>template</p>');
  utimesSync(path, seconds, seconds);
}

interface Server {
  child: LineChild;
  port: number;
  logs: () => Array<{ level: string; message: string }>;
}

async function start(t: ExecutionContext, templatePaths: string[]): Promise<Server> {
  // A child that compiles its TypeScript on start may take longer than 15 s beside other test runs.
  const child = spawnChild(t, fixture('last-modified-server.ts'), [JSON.stringify(templatePaths)], {
    lineTimeoutMs: 60_000,
  });
  const { port } = await child.waitForJson<{ port?: number }>((m) => m.port !== undefined, 'the server listening');
  const logs = (): Array<{ level: string; message: string }> =>
    child.lines.filter((l) => l.startsWith('{"log"')).map((l) => JSON.parse(l) as { level: string; message: string });
  logOnFailure(
    t,
    () =>
      `${child.stderr}\n${logs()
        .map((l) => `${l.level} ${l.message}`)
        .join('\n')}`,
  );
  return { child, port: port!, logs };
}

/** The page, or a rejection when the server has not answered within `ms` (generous: the scan is milliseconds). */
function page(port: number, ms = 20_000): Promise<RawResponse> {
  return Promise.race([
    rawRequest(port, '/'),
    sleep(ms, undefined, { ref: false }).then(() => Promise.reject(new Error(`no answer within ${ms} ms`))),
  ]);
}

const date = (seconds: number): string => new Date(seconds * 1000).toUTCString();
const newest = Date.UTC(2031, 0, 1) / 1000;

test('two directory symlink cycles: the first request is answered, with the newest real mtime', async (t) => {
  const dir = tree(t);
  mkdirSync(join(dir, 'a'));
  mkdirSync(join(dir, 'b', 'deep'), { recursive: true });
  symlinkSync('..', join(dir, 'a', 'up')); // a/up -> dir
  symlinkSync('.', join(dir, 'a', 'self')); // a/self -> a
  symlinkSync(join(dir, 'a'), join(dir, 'b', 'back')); // b/back -> a
  file(join(dir, 'b', 'deep', 'page.html'), newest);
  // A directory reached only through a symlink is still scanned, once.
  const outside = tree(t);
  file(join(outside, 'partial.html'), newest + 86_400);
  symlinkSync(outside, join(dir, 'a', 'shared'));
  symlinkSync(outside, join(dir, 'b', 'shared-again'));
  const server = await start(t, [dir]);
  const answer = await page(server.port);
  t.is(answer.status, 200);
  t.is(answer.headers['last-modified'], date(newest + 86_400), 'the newest file, reached through a symlink');
  t.is(server.logs().filter((l) => /stopped/.test(l.message)).length, 0, 'within the bounds: nothing to say');
});

test(`a tree deeper than ${scanBounds.depth} levels is scanned to that depth, with one log line`, async (t) => {
  const dir = tree(t);
  let path = dir;
  for (let level = 1; level <= scanBounds.depth + 8; level++) {
    path = join(path, 'd');
    mkdirSync(path);
    // A file in the directory at level 31 is 32 levels below the template path: the deepest looked at.
    if (level === scanBounds.depth - 1) file(join(path, 'last-seen.html'), newest);
    if (level === scanBounds.depth) file(join(path, 'too-deep.html'), newest + 86_400);
  }
  file(join(path, 'deeper-still.html'), newest + 2 * 86_400);
  const server = await start(t, [dir]);
  const first = await page(server.port);
  t.is(first.headers['last-modified'], date(newest), 'what the scan saw');
  await sleep(mtimeTrustMs * 2); // the next request scans again
  t.is((await page(server.port)).headers['last-modified'], date(newest));
  const told = server.logs().filter((l) => /stopped/.test(l.message));
  t.is(told.length, 1, 'logged once, not on every scan');
  t.regex(told[0]!.message, new RegExp(`depth ${scanBounds.depth}`));
});

test(`a tree of more than ${scanBounds.entries} entries is scanned that far, with one log line`, async (t) => {
  const dir = tree(t);
  for (let i = 0; i < scanBounds.entries + 100; i++) writeFileSync(join(dir, `t${i}.html`), '');
  const server = await start(t, [dir]);
  t.is((await page(server.port)).status, 200);
  await sleep(mtimeTrustMs * 2);
  t.truthy((await page(server.port)).headers['last-modified']);
  const told = server.logs().filter((l) => /stopped/.test(l.message));
  t.is(told.length, 1, 'logged once, not on every scan');
  t.regex(told[0]!.message, new RegExp(`${scanBounds.entries} entries`));
});
