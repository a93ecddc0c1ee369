/** examples/cron-lock.sh: koa-buffer-lock in a crontab-style script, overlapping runs started as cron would. */
import test from 'ava';
import { spawnProgram } from '../../helpers/children.ts';
import { example, exampleEnv, tempDir } from '../../helpers/examples.ts';

test('an overlapping run is skipped (exit 0), a waiting run follows the first, a later run runs', async (t) => {
  const dir = tempDir(t, 'kb-cron-example-');
  const cwd = tempDir(t, 'kb-cron-cwd-'); // cron starts jobs elsewhere than the repository
  const run = (env: NodeJS.ProcessEnv) =>
    spawnProgram(t, example('cron-lock.sh'), [], {
      env: exampleEnv({ LOCK_DIR: dir, ...env }),
      cwd,
      group: true,
      lineTimeoutMs: 30_000,
    });

  const first = run({ JOB_SECONDS: '3' });
  await first.waitForLine((line) => line.startsWith('report: started'), 'the first run to start');
  const overlapping = run({ JOB_SECONDS: '1' });
  const waiting = run({ JOB_SECONDS: '0.1', WAIT_SECONDS: '20' });

  t.deepEqual(
    await overlapping.exited,
    { code: 0, signal: null },
    `a skipped run is not an error for cron; stderr: ${overlapping.stderr}`,
  );
  t.deepEqual(
    overlapping.lines,
    ['report: skipped, the previous run still holds the lock'],
    'the overlapping run did not start the job',
  );
  t.is(overlapping.stderr, '', 'koa-buffer-lock itself says nothing: cron mails any output');

  t.deepEqual(await first.exited, { code: 0, signal: null });
  t.is(first.lines.length, 2);
  t.regex(first.lines[1]!, /^report: done/);
  t.deepEqual(await waiting.exited, { code: 0, signal: null }, `stderr: ${waiting.stderr}`);
  t.is(waiting.lines.length, 2, `the waiting run ran the job: ${waiting.lines.join(' | ')}`);

  const later = run({ JOB_SECONDS: '0' });
  t.deepEqual(await later.exited, { code: 0, signal: null });
  t.regex(later.lines.join('\n'), /^report: started \(pid \d+\)\nreport: done/, 'with the lock free, the job runs');
});
