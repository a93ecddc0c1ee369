/**
 * koa-buffer-lock keeps flock(1)'s promises: the command holds the lock for
 * as long as it runs even when the wrapper is killed with SIGKILL (as the
 * OOM killer does), a signal sent to the process group reaches the command
 * once, a skipped run is silent, and the short options work. Real child
 * processes, real signals, a real redis-server for --redis.
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import test, { type ExecutionContext, type Implementation } from 'ava';
import { FileLock } from '../../src/locks/file-lock.ts';
import { redisTest, useRedis } from '../helpers/redis.ts';
import { spawnProgram, type LineChild } from '../helpers/children.ts';

const cli = fileURLToPath(new URL('../../src/cli/koa-buffer-lock.ts', import.meta.url));
const { version } = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
  version: string;
};

// Each case starts Node processes that load TypeScript: one at a time keeps the machine usable.
const serial = test.serial;

/** koa-buffer-lock in a process group of its own (as a job started by a shell without a terminal). */
function koaBufferLock(t: ExecutionContext, args: string[]): LineChild {
  return spawnProgram(t, process.execPath, ['--import', 'tsx/esm', cli, ...args], { group: true });
}

function tempDir(t: ExecutionContext): string {
  const dir = mkdtempSync(join(tmpdir(), 'kb-cli-flock-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** True while `pid` runs (a zombie, killed and not yet reaped, does not run). */
function running(pid: number): boolean {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return false;
  }
}

/** True while any process of the process group `pgid` runs. */
function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Kills what a command left, in teardown: it may run in a session of its own, outside the wrapper's group. */
function reap(t: ExecutionContext, pid: number): void {
  t.teardown(() => {
    for (const target of [-pid, pid]) {
      try {
        process.kill(target, 'SIGKILL');
      } catch {
        // gone
      }
    }
  });
}

/** Starts a holder whose command says "holding PID" and then sleeps; resolves with the wrapper and the command's pid. */
async function holder(t: ExecutionContext, lockArgs: string[]): Promise<{ wrapper: LineChild; pid: number }> {
  const wrapper = koaBufferLock(t, [...lockArgs, '--', 'sh', '-c', 'echo "holding $$"; exec sleep 60']);
  const line = await wrapper.waitForLine((l) => l.startsWith('holding '), 'the holder to start');
  const pid = Number(line.slice('holding '.length));
  reap(t, pid);
  return { wrapper, pid };
}

{
  serial(
    `--dir: after kill -9 of the wrapper (the OOM killer's SIGKILL), the command keeps the lock while it runs`,
    async (t) => {
      const dir = tempDir(t);
      const { wrapper, pid } = await holder(t, ['--dir', dir, 'nightly']);
      t.deepEqual(await wrapper.kill('SIGKILL'), { code: null, signal: 'SIGKILL' });
      t.true(running(pid), 'the command still runs');

      const second = koaBufferLock(t, ['--dir', dir, 'nightly', '--', 'sh', '-c', 'echo second ran']);
      t.is((await second.exited).code, 75, 'a second copy is refused while the first command runs');
      t.deepEqual(second.lines, []);

      process.kill(pid, 'SIGKILL');
      const third = koaBufferLock(t, ['--dir', dir, '--wait', '10', 'nightly', '--', 'sh', '-c', 'echo third ran']);
      t.is((await third.exited).code, 0, 'once the command is gone the lock is free');
      t.deepEqual(third.lines, ['third ran']);
    },
  );
}

redisTest(
  '--redis: after kill -9 of the wrapper, the command dies with it, before anyone else can take the lock',
  async (t) => {
    const redis = await useRedis(t);
    const key = `${redis.namespace}nightly`;
    const { wrapper, pid } = await holder(t, ['--redis', redis.url, '--ttl', '1', key]);
    t.deepEqual(await wrapper.kill('SIGKILL'), { code: null, signal: 'SIGKILL' });
    // Nobody renews the lock now: it lapses within its ttl, and a waiter takes it. At that moment the first
    // command must be gone, or two copies would run.
    const second = koaBufferLock(t, [
      '--redis',
      redis.url,
      '--ttl',
      '1',
      '--wait',
      '20',
      key,
      '--',
      'sh',
      '-c',
      `if [ -e /proc/${pid} ] && [ "$(cut -d' ' -f3 /proc/${pid}/stat)" != Z ]; then echo "first still runs"; else echo "first is gone"; fi`,
    ]);
    t.is((await second.exited).code, 0);
    t.deepEqual(second.lines, ['first is gone']);
    t.false(running(pid));
  },
);

/** The processes whose parent is `pid`. */
function childrenOf(pid: number): number[] {
  const found: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      if (Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]) === pid) found.push(Number(entry));
    } catch {
      // gone meanwhile
    }
  }
  return found;
}

const hasSetpriv = spawnSync('setpriv', ['--version'], { stdio: 'ignore' }).status === 0;

(hasSetpriv
  ? redisTest
  : (title: string, run: Implementation<[]>) => test.skip(`${title} (skipped: install util-linux for setpriv)`, run))(
  '--redis: the kernel kills the command with its wrapper, even when the watchdog cannot run',
  async (t) => {
    const redis = await useRedis(t);
    const { wrapper, pid } = await holder(t, ['--redis', redis.url, '--ttl', '30', `${redis.namespace}stopped`]);
    // The watchdog is the command's child (the shim became the command by exec): stopped, it can kill nothing,
    // as when a loaded machine does not schedule it before the ttl runs out.
    const watchdogs = childrenOf(pid);
    t.true(watchdogs.length > 0, 'the watchdog was found');
    for (const watchdog of watchdogs) process.kill(watchdog, 'SIGSTOP');
    t.teardown(() => {
      for (const watchdog of watchdogs) {
        try {
          process.kill(watchdog, 'SIGKILL');
        } catch {
          // gone
        }
      }
    });
    t.deepEqual(await wrapper.kill('SIGKILL'), { code: null, signal: 'SIGKILL' });
    for (let waited = 0; waited < 2000 && running(pid); waited += 20) await sleep(20);
    t.false(running(pid), 'the command died with its wrapper');
  },
);

redisTest(
  '--redis: a command that ends by itself is not killed by the watchdog, and its status comes back',
  async (t) => {
    const redis = await useRedis(t);
    const child = koaBufferLock(t, ['--redis', redis.url, `${redis.namespace}job`, '-c', 'echo "pid $$"; exit 4']);
    t.is((await child.exited).code, 4);
    t.is(child.stderr, '');
    const pid = Number(child.lines[0]!.slice(4));
    t.false(running(pid));
    // The watchdog read its line and left: nothing of the command's process group stays behind.
    const deadline = Date.now() + 10_000;
    while (groupAlive(pid) && Date.now() < deadline) await sleep(10);
    t.false(groupAlive(pid), 'the watchdog is gone');
  },
);

/** A command (plain Node, quick to start) that counts the SIGINTs it gets and writes the count on SIGTERM. */
function countingCommand(file: string, show: 'pid' | 'ppid' = 'pid'): string[] {
  const script = `
    let n = 0;
    process.on('SIGINT', () => n++);
    process.on('SIGTERM', () => { require('fs').writeFileSync(${JSON.stringify(file)}, String(n)); process.exit(0); });
    console.log('ready ' + process.${show});
    setInterval(() => {}, 1000);
  `;
  return [process.execPath, '-e', script];
}

serial('a SIGINT sent to the whole process group (Ctrl-C) reaches the command once, not twice', async (t) => {
  const dir = tempDir(t);
  const count = join(dir, 'count');
  const wrapper = koaBufferLock(t, ['--dir', dir, 'job', '--', ...countingCommand(count)]);
  const ready = await wrapper.waitForLine((l) => l.startsWith('ready '), 'the command to start');
  reap(t, Number(ready.slice(6)));
  process.kill(-wrapper.pid, 'SIGINT');
  // SIGTERM to the wrapper alone comes after any SIGINT it would pass on, and ends the command.
  await sleep(100);
  wrapper.process.kill('SIGTERM');
  t.is((await wrapper.exited).code, 0);
  t.is(readFileSync(count, 'utf8'), '1');
});

serial(
  'in a terminal, Ctrl-C reaches the command once: the terminal sent it to the group, the wrapper does not repeat it',
  async (t) => {
    const dir = tempDir(t);
    const count = join(dir, 'count');
    const command = countingCommand(count, 'ppid');
    const quoted = (arg: string): string => `'${arg.replaceAll("'", "'\\''")}'`;
    const line = ['exec', process.execPath, '--import', 'tsx/esm', cli, '--dir', dir, 'job', '--', ...command]
      .map(quoted)
      .join(' ');
    // script(1) runs the line on a pseudo-terminal of its own, in the foreground; what it reads from its stdin
    // is typed on that terminal, so a ^C byte is a real Ctrl-C: SIGINT to the terminal's foreground group.
    const terminal = spawnProgram(t, '/usr/bin/script', ['-qfec', line, '/dev/null'], { group: true });
    const ready = await terminal.waitForLine((l) => l.includes('ready '), 'the command to start');
    const wrapper = Number(/ready (\d+)/.exec(ready)![1]);
    reap(t, wrapper); // the leader of the terminal's session, and of its foreground group
    terminal.process.stdin!.write('\x03');
    await sleep(100);
    process.kill(wrapper, 'SIGTERM');
    t.is((await terminal.exited).code, 0);
    t.is(readFileSync(count, 'utf8'), '1');
  },
);

serial('a SIGINT sent to the wrapper alone is passed on, once', async (t) => {
  const dir = tempDir(t);
  const count = join(dir, 'count');
  const wrapper = koaBufferLock(t, ['--dir', dir, 'job', '--', ...countingCommand(count)]);
  const ready = await wrapper.waitForLine((l) => l.startsWith('ready '), 'the command to start');
  reap(t, Number(ready.slice(6)));
  wrapper.process.kill('SIGINT');
  await sleep(100);
  wrapper.process.kill('SIGTERM');
  t.is((await wrapper.exited).code, 0);
  t.is(readFileSync(count, 'utf8'), '1');
});

serial('a skipped run prints nothing (cron mails any output) unless --verbose; -E sets its status', async (t) => {
  const dir = tempDir(t);
  await holder(t, ['--dir', dir, 'nightly']);
  const quiet = koaBufferLock(t, ['--dir', dir, 'nightly', '--', 'sh', '-c', 'echo ran']);
  t.is((await quiet.exited).code, 75);
  t.deepEqual([quiet.lines, quiet.stderr], [[], ''], 'silent by default');
  const q = koaBufferLock(t, ['--dir', dir, '-q', '-n', '-E', '3', 'nightly', '-c', 'echo ran']);
  t.is((await q.exited).code, 3, '-E CODE is the busy status');
  t.deepEqual([q.lines, q.stderr], [[], '']);
  const verbose = koaBufferLock(t, ['--dir', dir, '--verbose', '-w', '0.2', 'nightly', '-c', 'echo ran']);
  t.is((await verbose.exited).code, 75);
  t.is(
    verbose.stderr,
    "koa-buffer-lock: 'nightly' is locked by another process; waiting up to 0.2 s\n" +
      "koa-buffer-lock: 'nightly' is still locked by another process after waiting 0.2 s\n",
  );
});

serial('-c runs its command line through sh -c, and --version prints the version', async (t) => {
  const dir = tempDir(t);
  const child = koaBufferLock(t, ['--dir', dir, 'job', '-c', 'echo "a b" | tr a-z A-Z; exit 5']);
  t.is((await child.exited).code, 5);
  t.deepEqual(child.lines, ['A B']);
  for (const flag of ['--version', '-V']) {
    const v = koaBufferLock(t, [flag]);
    t.is((await v.exited).code, 0);
    t.deepEqual(v.lines, [`koa-buffer-lock ${version}`]);
  }
});

serial('a missing --dir is an error (exit 66), not created', async (t) => {
  const dir = join(tempDir(t), 'no-such-dir');
  const child = koaBufferLock(t, ['--dir', dir, 'job', '--', 'true']);
  t.is((await child.exited).code, 66);
  t.is(child.stderr, `koa-buffer-lock: lock directory '${dir}' does not exist: create it first (mkdir -m 700)\n`);
  t.throws(() => readFileSync(dir), { code: 'ENOENT' }, 'nothing was created');
});

serial('an unsafe --dir is refused with the path and the reason', async (t) => {
  const dir = join(tempDir(t), 'shared');
  mkdirSync(dir);
  chmodSync(dir, 0o777);
  const child = koaBufferLock(t, ['--dir', dir, 'job', '--', 'true']);
  t.is((await child.exited).code, 69);
  t.regex(child.stderr, new RegExp(`'${dir}' \\(mode 0777\\) is writable by everyone without the sticky bit`));
});

serial('bad arguments exit 64 with a message naming the argument', async (t) => {
  const dir = tempDir(t);
  const cases: Array<[string[], string]> = [
    [
      ['--redis', 'redis://127.0.0.1:1', '--ttl', '0.001', 'k', '--', 'true'],
      "--ttl must be at least 1 s, not '0.001'",
    ],
    [['--dir', dir, '-E', '300', 'k', '--', 'true'], "-E needs an exit status from 0 to 255, not '300'"],
    [['--dir', dir, '-E', 'busy', 'k', '--', 'true'], "-E needs an exit status from 0 to 255, not 'busy'"],
    [['--dir', dir, '-w', 'soon', 'k', '--', 'true'], "-w/--wait needs a number of seconds, not 'soon'"],
    [['--dir', dir, '-n', '-w', '5', 'k', '--', 'true'], '-n (no wait) and -w SECONDS cannot be combined'],
    [['--dir', dir, '-c', 'true', 'k', '--', 'true'], 'give the command either with -c or after --, not both'],
    [['--dir', dir, '-q', '--verbose', 'k', '-c', 'true'], '-q and --verbose cannot be combined'],
  ];
  for (let i = 0; i < cases.length; i += 3) {
    await Promise.all(
      cases.slice(i, i + 3).map(async ([args, problem]) => {
        const child = koaBufferLock(t, args);
        t.is((await child.exited).code, 64, args.join(' '));
        t.true(child.stderr.startsWith(`koa-buffer-lock: ${problem}\n`), `${args.join(' ')}: ${child.stderr}`);
      }),
    );
  }
});

serial('a waiter takes the lock promptly once the holder lets it go, not at its next half-second poll', async (t) => {
  const dir = tempDir(t);
  const mine = new FileLock({ dir });
  // Five rounds: in each, the lock is free for 250 ms only, after the waiter has waited long enough to poll
  // at its slowest. A waiter that polls every 50 ms takes it in every round; one that polls every 500 ms
  // misses each round half the time.
  for (let round = 0; round < 5; round++) {
    const [held] = mine.acquire('deploy');
    t.truthy(held);
    const waiter = koaBufferLock(t, [
      '--dir',
      dir,
      '--verbose',
      '-w',
      '60',
      'deploy',
      '-c',
      'echo "ran $$"; exec sleep 60',
    ]);
    while (!waiter.stderr.includes('waiting up to')) {
      if (!waiter.running) break;
      await sleep(10);
    }
    await sleep(700);
    mine.release(held);
    await sleep(250);
    const [again] = mine.acquire('deploy');
    t.is(again, null, `round ${round}: the waiter took the lock within 250 ms of its release`);
    mine.release(again);
    const ran = await waiter.waitForLine((l) => l.startsWith('ran '), 'the waiter to run');
    process.kill(Number(ran.slice(4)), 'SIGKILL');
    reap(t, Number(ran.slice(4)));
    t.is((await waiter.exited).code, 128 + 9);
  }
});
