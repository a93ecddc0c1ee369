/**
 * The cacheLockDir going wrong under a running server: removed (the next
 * miss makes it again, 0700), or made read-only. A lock that cannot be taken never stops a page
 * (docs/decisions/0010-locks.md): the request builds with a per-process flight, one log line says why,
 * concurrent misses in the process still build once, and when the
 * directory is usable again the locks work again without a restart.
 */
import { chmodSync, chownSync, mkdirSync, mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import test, { type ExecutionContext } from 'ava';
import { buffer } from '../../src/buffer.ts';
import { asNobody, nobody, nobodyCanRead, runningAsRoot } from '../helpers/as-nobody.ts';
import { fixture, spawnChild, type LineChild } from '../helpers/children.ts';
import { htmlPage, rawRequest, recordingLogger, serve, type RawResponse } from '../helpers/serve.ts';

const page = htmlPage(8 * 1024, 5);

function tempDir(t: ExecutionContext): string {
  const dir = mkdtempSync(join(tmpdir(), 'kb-fault-locks-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

test('the lock directory removed while running: a build holding a lock finishes and releases it cleanly, and the next miss makes the directory again (0700) and locks in it', async (t) => {
  const base = tempDir(t);
  const dir = join(base, 'locks');
  const log = recordingLogger();
  let runs = 0;
  const server = await serve(t, [
    buffer({ cache: true, cacheLockDir: dir, varyBy: [], logger: log }),
    async (ctx) => {
      if (await ctx.bufferIsCached()) return;
      runs++;
      await sleep(200);
      ctx.type = 'html';
      ctx.body = `${page}<!-- ${ctx.path} -->`;
    },
  ]);
  const burst = (path: string): Promise<RawResponse[]> =>
    Promise.all(Array.from({ length: 10 }, () => server.request(path)));

  t.is((await server.request('/a')).status, 200);
  t.is(readdirSync(dir).length, 0, 'the first build removed its lock file on release');

  // Removed while /b's builder holds its lock.
  const during = burst('/b');
  await sleep(80);
  rmSync(dir, { recursive: true });
  for (const response of await during) t.is(response.status, 200, 'the build under way answers everyone');
  t.is(runs, 2);
  t.deepEqual(
    log.lines.filter((l) => l.level !== 'debug'),
    [],
    'releasing a lock whose file is gone is not an error: the descriptor still held it',
  );

  // Gone: the next miss makes the directory again (0700) and takes its lock there, with nothing logged.
  const without = await burst('/c');
  for (const response of without) t.is(response.status, 200, 'every request gets the page');
  t.is(new Set(without.map((r) => r.body.toString())).size, 1);
  t.is(runs, 3, 'built once');
  t.deepEqual(
    log.lines.filter((l) => l.level === 'error'),
    [],
    'a removed lock directory is not an error',
  );
  t.is(statSync(dir).mode & 0o777, 0o700, 'the directory was made again, mode 0700');
  t.is((await server.request('/a')).headers['x-cache'], 'HIT', 'entries built before are still hits');

  // Removed again and put back by the operator: the next miss uses it, with nothing logged.
  rmSync(dir, { recursive: true });
  mkdirSync(dir, { mode: 0o700 });
  for (const response of await burst('/d')) t.is(response.status, 200);
  t.is(runs, 4);
  t.is(log.lines.filter((l) => l.level === 'error').length, 0, 'no error once the directory is back');
  t.is(readdirSync(dir).length, 0, 'the lock of /d was taken in the new directory, and removed');
});

/** The server's log lines at error level. */
function errors(child: LineChild): string[] {
  return child.lines.flatMap((l) => {
    try {
      const m = JSON.parse(l) as { log?: string; message?: string };
      return m.log === 'error' ? [m.message!] : [];
    } catch {
      return [];
    }
  });
}

test('the lock directory made read-only while running: new keys build once per process with a log line naming the error, hits go on, and writable again it works again', async (t) => {
  const base = tempDir(t);
  const dir = join(base, 'locks');
  const root = runningAsRoot();
  if (root) {
    // root writes to any directory whatever its mode: the server runs as nobody (65534), who owns its data directory.
    chownSync(base, nobody, nobody);
    if (!nobodyCanRead(fixture('fault-server.ts'))) {
      t.log(
        'skipped: running as root, and nobody (uid 65534) cannot read this checkout to run the server as a non-root user',
      );
      t.pass();
      return;
    }
  }
  const child = spawnChild(
    t,
    fixture('fault-server.ts'),
    [JSON.stringify({ cache: `sqlite:${join(base, 'cache.sqlite')}`, lockDir: dir })],
    root ? asNobody() : {},
  );
  const { port } = await child.waitForJson<{ port: number }>((m) => typeof m.port === 'number', 'the port');
  const get = (path: string): Promise<RawResponse> => rawRequest(port, path);
  const burst = (path: string): Promise<RawResponse[]> => Promise.all(Array.from({ length: 8 }, () => get(path)));
  const builds = (path: string): number =>
    child.lines.filter((l) => l.includes(`"building"`) && l.includes(`"${path}"`)).length;

  t.is((await get('/page/a?delay=0')).status, 200);
  t.is(readdirSync(dir).length, 0, 'lock files are removed on release');

  chmodSync(dir, 0o500);
  t.teardown(() => chmodSync(dir, 0o700));
  const readOnly = await burst('/page/b?delay=200');
  for (const response of readOnly) t.is(response.status, 200, 'every request gets the page');
  t.is(new Set(readOnly.map((r) => r.body.toString())).size, 1, 'one page for all');
  t.is(builds('/page/b'), 1, 'built once in the process');
  const failures = errors(child);
  t.is(failures.length, 1, `one log line: ${failures.join(' | ')}`);
  t.regex(
    failures[0] ?? '',
    /^lock for buffer:[0-9a-f]{32} failed, building with a per-process flight: cannot open .*\/locks\/[0-9a-f]{32}\.lock: Permission denied$/,
  );
  t.is(readdirSync(dir).length, 0, 'nothing was created in the read-only directory');

  // Pages built before are hits: a hit takes no lock.
  t.is((await get('/page/a?delay=0')).headers['x-cache'], 'HIT');
  t.is(errors(child).length, 1);

  chmodSync(dir, 0o700);
  for (const response of await burst('/page/c?delay=100')) t.is(response.status, 200);
  t.is(builds('/page/c'), 1);
  t.is(errors(child).length, 1, 'no new error once the directory is writable again');
  t.is(readdirSync(dir).length, 0, 'the lock of /page/c was created and removed');
});
