/** examples/lock-library.ts: FileLock and the waiting Lock in a script, three copies run as a user would. */
import test from 'ava';
import { spawnProgram, type LineChild } from '../../helpers/children.ts';
import { example, exampleEnv, repoRoot, tempDir } from '../../helpers/examples.ts';

test('one copy holds the lock; a copy that tries once gives up with 75; a waiting copy gets it when the holder is killed', async (t) => {
  const dir = tempDir(t, 'kb-lock-example-');
  const run = (env: NodeJS.ProcessEnv): LineChild =>
    spawnProgram(t, process.execPath, ['--import', 'tsx/esm', example('lock-library.ts')], {
      env: exampleEnv({ LOCK_DIR: dir, ...env }),
      cwd: repoRoot,
      lineTimeoutMs: 30_000,
    });
  const line = (child: LineChild, pattern: RegExp): Promise<string> =>
    child.waitForLine((l) => pattern.test(l), String(pattern));

  const holder = run({ JOB_SECONDS: '60' });
  await line(holder, /nobody holds nightly-report/);
  await line(holder, /locked after waiting 0\.000 s/);

  const waiter = run({ JOB_SECONDS: '0.2', WAIT_SECONDS: '20' });
  const quitter = run({ WAIT_SECONDS: '0' });
  t.deepEqual(
    await quitter.exited,
    { code: 75, signal: null },
    `timeout 0 tries once and exits 75; stderr: ${quitter.stderr}`,
  );
  t.regex(quitter.lines.join('\n'), /another copy holds nightly-report[\s\S]*gave up: timeout/);

  await line(waiter, /another copy holds nightly-report/);
  const killedAt = Date.now();
  holder.process.kill('SIGKILL'); // a job that dies: flock frees its lock with the process
  const locked = await line(waiter, /locked after waiting/);
  const [, waited, at] = /locked after waiting ([\d.]+) s at (\d+)/.exec(locked)!;
  t.true(Number(waited) > 0, `the waiter waited (${waited} s of sleeps)`);
  t.true(Number(at) >= killedAt, 'it got the lock only once the holder was gone');
  t.true(
    Number(at) - killedAt < 2000,
    `promptly after (${Number(at) - killedAt} ms; sleeps are capped at maxStep 0.25 s)`,
  );
  t.deepEqual(await waiter.exited, { code: 0, signal: null });
  t.regex(waiter.lines.at(-1)!, /released at \d+$/);
});
