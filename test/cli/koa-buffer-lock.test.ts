import test, { type ExecutionContext } from 'ava';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { RedisLock } from '../../src/locks/redis-lock.ts';
import { freePort, redisTest, useRedis } from '../helpers/redis.ts';
import { spawnProgram, type LineChild } from '../helpers/children.ts';

const cli = fileURLToPath(new URL('../../src/cli/koa-buffer-lock.ts', import.meta.url));

// Every case starts one to three Node processes, each costing a third of a CPU second to
// load TypeScript; run concurrently they would starve every other test file on the
// machine. One test at a time keeps this file around ten seconds and its neighbours honest.
const serial = test.serial;

/** The command as a user runs it (through tsx here; the package runs dist/cli/koa-buffer-lock.js). */
function koaBufferLock(t: ExecutionContext, args: string[]): LineChild {
  return spawnProgram(t, process.execPath, ['--import', 'tsx/esm', cli, ...args], { group: true });
}

function tempDir(t: ExecutionContext): string {
  const dir = mkdtempSync(join(tmpdir(), 'kb-cli-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/**
 * A holder: koa-buffer-lock running a shell that says "holding" and then sleeps. Outside a terminal the
 * command leads a process group of its own, so teardown kills that group too.
 */
async function holder(t: ExecutionContext, lockArgs: string[], seconds: number): Promise<LineChild> {
  const child = koaBufferLock(t, [...lockArgs, '--', 'sh', '-c', `echo "holding $$"; sleep ${seconds}`]);
  const line = await child.waitForLine((l) => l.startsWith('holding '), 'the holder to start');
  const pid = Number(line.slice('holding '.length));
  t.teardown(() => {
    try {
      process.kill(-pid, 'SIGKILL');
    } catch {
      // gone
    }
  });
  return child;
}

serial('--help prints the usage on stdout and exits 0', async (t) => {
  const child = koaBufferLock(t, ['--help']);
  t.deepEqual(await child.exited, { code: 0, signal: null });
  t.regex(child.lines.join('\n'), /^Usage: koa-buffer-lock \(--dir DIR \| --redis URL\) \[-n \| -w SECONDS\]/);
  t.regex(child.lines.join('\n'), /75 \(or -E\) when the\s+lock stayed busy/);
});

serial('bad usage exits 64 with the problem and the usage on stderr', async (t) => {
  const dir = tempDir(t);
  const cases: Array<[string[], RegExp]> = [
    [[], /put -- between KEY and COMMAND/],
    [['--dir', dir, 'key', 'true'], /put -- between KEY and COMMAND/],
    [['--dir', dir, '--', 'true'], /KEY is missing/],
    [['--dir', dir, 'a', 'b', '--', 'true'], /exactly one KEY/],
    [['--dir', dir, 'key', '--'], /COMMAND is missing/],
    [['key', '--', 'true'], /exactly one of --dir and --redis/],
    [['--dir', dir, '--redis', 'redis://x', 'key', '--', 'true'], /exactly one of --dir and --redis/],
    [['--dir', dir, '--wait', 'soon', 'key', '--', 'true'], /--wait needs a number of seconds, not 'soon'/],
    [['--dir', dir, '--ttl', '5', 'key', '--', 'true'], /--ttl applies to --redis only/],
    [['--redis', 'redis://127.0.0.1:1', '--ttl', '0', 'key', '--', 'true'], /--ttl must be at least 1 s, not '0'/],
    [['--redis', 'http://x', 'key', '--', 'true'], /redis must be an ioredis client, a redis:\/\/ URL/],
    [['--dir', dir, '--frobnicate', 'key', '--', 'true'], /Unknown option '--frobnicate'/],
  ];
  // Three at a time: quick, without flooding a two-core machine.
  for (let i = 0; i < cases.length; i += 3) {
    await Promise.all(
      cases.slice(i, i + 3).map(async ([args, problem]) => {
        const child = koaBufferLock(t, args);
        const exit = await child.exited;
        t.is(exit.code, 64, `${args.join(' ')} exits 64`);
        t.regex(child.stderr, problem, `${args.join(' ')} says what is wrong`);
        t.regex(child.stderr, /\nUsage: koa-buffer-lock/, 'and shows the usage');
      }),
    );
  }
});

serial('the command’s status and output pass through', async (t) => {
  const dir = tempDir(t);
  const failing = koaBufferLock(t, [
    '--dir',
    dir,
    'job',
    '--',
    'sh',
    '-c',
    'echo "out: $0 $1"; exit 3',
    'first arg',
    'two words',
  ]);
  t.is((await failing.exited).code, 3);
  t.deepEqual(failing.lines, ['out: first arg two words'], 'arguments reach the command unchanged, no shell between');
  t.is((await koaBufferLock(t, ['--dir', dir, 'job', '--', 'true']).exited).code, 0);
});

serial('a busy lock exits 75 at once, with one line on stderr under --verbose', async (t) => {
  const dir = tempDir(t);
  await holder(t, ['--dir', dir, 'nightly'], 30);
  const started = Date.now();
  const second = koaBufferLock(t, ['--dir', dir, '--verbose', 'nightly', '--', 'sh', '-c', 'echo ran']);
  t.is((await second.exited).code, 75);
  t.deepEqual(second.lines, [], 'the command did not run');
  t.is(second.stderr, "koa-buffer-lock: 'nightly' is locked by another process\n");
  t.true(Date.now() - started < 5000, 'without waiting');
  t.is((await koaBufferLock(t, ['--dir', dir, 'other', '--', 'true']).exited).code, 0, 'another key is free');
});

serial('--wait runs the command once the holder finishes in time', async (t) => {
  const dir = tempDir(t);
  // The commands write their own order: the lock is free once the first command ends, so the second may
  // finish before this process has seen the first koa-buffer-lock exit.
  const log = join(dir, 'order.log');
  const first = koaBufferLock(t, [
    '--dir',
    dir,
    'deploy',
    '--',
    'sh',
    '-c',
    `echo holding; sleep 0.6; echo first >> ${log}`,
  ]);
  await first.waitForLine((line) => line === 'holding', 'the holder to start');
  const second = koaBufferLock(t, [
    '--dir',
    dir,
    '--wait',
    '10',
    'deploy',
    '--',
    'sh',
    '-c',
    `echo second ran; echo second >> ${log}`,
  ]);
  t.is((await second.exited).code, 0);
  t.deepEqual(second.lines, ['second ran']);
  t.is((await first.exited).code, 0);
  t.is(readFileSync(log, 'utf8'), 'first\nsecond\n', 'the second ran after the first was done');
});

/**
 * Milliseconds from the holder's command's last instruction to the waiter's command's first, the waiter
 * having been waiting a while: the lock passes through both wrappers in between.
 */
async function handOver(t: ExecutionContext, lockArgs: string[]): Promise<number> {
  const dir = tempDir(t);
  const [go, ended, started] = [join(dir, 'go'), join(dir, 'ended'), join(dir, 'started')];
  const first = koaBufferLock(t, [
    ...lockArgs,
    '--',
    'sh',
    '-c',
    `echo holding; while [ ! -e ${go} ]; do sleep 0.01; done; date +%s%N > ${ended}`,
  ]);
  await first.waitForLine((line) => line === 'holding', 'the holder to start');
  const second = koaBufferLock(t, [
    '--wait',
    '20',
    '--verbose',
    ...lockArgs,
    '--',
    'sh',
    '-c',
    `date +%s%N > ${started}`,
  ]);
  // Starting Node and TypeScript takes a while on a busy machine: let the holder go only once the waiter waits.
  while (!second.stderr.includes('waiting up to')) await sleep(20);
  await sleep(300);
  writeFileSync(go, '');
  t.is((await second.exited).code, 0);
  t.is((await first.exited).code, 0);
  const latency = (Number(readFileSync(started, 'utf8')) - Number(readFileSync(ended, 'utf8'))) / 1e6;
  t.log(`holder's last instruction → waiter's first: ${latency.toFixed(1)} ms`);
  t.true(latency >= 0, 'the second ran after the first');
  return latency;
}

/**
 * From the holder's last instruction to the waiter's first, through two exits, a release, a wake-up and a
 * spawn of sh: a busy machine (two CPU hogs beside the suite) took 151 ms. The complaint was a wait up to
 * half a second late; that the release itself wakes the waiter, not a poll, is held by the locks' own tests
 * (test/locks/file-lock-wait.test.ts, redis-lock-wait.test.ts), which measure it against polling.
 */
const handedOverWithinMs = 400;

serial('--wait starts the command promptly after the holder’s end, not half a second late', async (t) => {
  const latency = await handOver(t, ['--dir', tempDir(t), 'deploy']);
  t.true(latency < handedOverWithinMs, `within ${latency.toFixed(1)} ms`);
});

redisTest('--redis --wait starts the command promptly after the holder’s end too', async (t) => {
  const redis = await useRedis(t);
  const latency = await handOver(t, ['--redis', redis.url, `${redis.namespace}deploy`]);
  t.true(latency < handedOverWithinMs, `within ${latency.toFixed(1)} ms`);
});

serial('--wait that gives up leaves no descriptor or process on the lock file', async (t) => {
  const dir = tempDir(t);
  const holding = await holder(t, ['--dir', dir, 'deploy'], 30);
  const second = koaBufferLock(t, ['--dir', dir, '--wait', '0.3', 'deploy', '--', 'true']);
  t.is((await second.exited).code, 75);
  // The holder's command leads a process group of its own and holds the lock through fd 3: end it all.
  const pid = Number(holding.lines.find((line) => line.startsWith('holding '))!.slice('holding '.length));
  process.kill(-pid, 'SIGKILL');
  await holding.kill('SIGKILL');
  await sleep(100);
  const again = koaBufferLock(t, ['--dir', dir, 'deploy', '--', 'true']);
  t.is((await again.exited).code, 0, 'the lock is free: nothing the waiter started took it');
});

serial('--wait gives up with 75 when the holder keeps the lock', async (t) => {
  const dir = tempDir(t);
  await holder(t, ['--dir', dir, 'deploy'], 30);
  const started = performance.now();
  const second = koaBufferLock(t, ['--dir', dir, '--wait', '0.3', '--verbose', 'deploy', '--', 'true']);
  t.is((await second.exited).code, 75);
  t.true(performance.now() - started >= 300, 'it waited');
  t.is(
    second.stderr,
    "koa-buffer-lock: 'deploy' is locked by another process; waiting up to 0.3 s\n" +
      "koa-buffer-lock: 'deploy' is still locked by another process after waiting 0.3 s\n",
  );
});

for (const signal of ['SIGTERM', 'SIGINT', 'SIGHUP'] as const) {
  serial(`${signal} sent to koa-buffer-lock reaches the command, and its status comes back`, async (t) => {
    const dir = tempDir(t);
    const name = signal.slice(3);
    const script = `trap 'echo got ${name}; exit 7' ${name}; echo ready; while :; do sleep 0.05; done`;
    const child = koaBufferLock(t, ['--dir', dir, 'k', '--', 'sh', '-c', script]);
    await child.waitForLine((line) => line === 'ready', 'the command to start');
    child.process.kill(signal);
    t.deepEqual(await child.exited, { code: 7, signal: null }, 'the command’s own status');
    t.true(child.lines.includes(`got ${name}`), `the command saw ${signal}`);
  });
}

serial('a command killed by a signal gives 128 + the signal number, as a shell does', async (t) => {
  const dir = tempDir(t);
  const child = koaBufferLock(t, ['--dir', dir, 'k', '--', 'sh', '-c', 'echo ready; exec sleep 30']);
  await child.waitForLine((line) => line === 'ready', 'the command to start');
  child.process.kill('SIGTERM');
  t.is((await child.exited).code, 128 + 15);
});

serial('a command that cannot be found exits 127, one that cannot be run 126, and the lock is freed', async (t) => {
  const dir = tempDir(t);
  const missing = koaBufferLock(t, ['--dir', dir, 'k', '--', join(dir, 'no-such-program')]);
  t.is((await missing.exited).code, 127);
  t.regex(missing.stderr, /^koa-buffer-lock: cannot run .*no-such-program: .*ENOENT\n$/);
  const file = join(dir, 'not-executable');
  writeFileSync(file, 'echo hi\n', { mode: 0o644 });
  const notExecutable = koaBufferLock(t, ['--dir', dir, 'k', '--', file]);
  t.is((await notExecutable.exited).code, 126);
  t.is((await koaBufferLock(t, ['--dir', dir, 'k', '--', 'true']).exited).code, 0, 'the lock was released');
});

serial('a lock directory that cannot be made exits 69 with one line', async (t) => {
  const dir = tempDir(t);
  const file = join(dir, 'file');
  writeFileSync(file, '');
  const child = koaBufferLock(t, ['--dir', join(file, 'locks'), 'k', '--', 'true']);
  t.is((await child.exited).code, 69);
  t.regex(
    child.stderr,
    /^koa-buffer-lock: cannot take the lock k: cannot create cacheLockDir '.*': Not a directory\n$/,
  );
});

redisTest('--redis holds the lock in Redis while the command runs, renews it, and deletes it after', async (t) => {
  const redis = await useRedis(t);
  const raw = new Redis(redis.url);
  t.teardown(() => raw.disconnect());
  const key = `${redis.namespace}job`;
  // A 1 s ttl over a 3.5 s command: only the renewals every 0.33 s keep it.
  const first = await holder(t, ['--redis', redis.url, '--ttl', '1', key], 3.5);
  const pttl = await raw.pttl(`koa-buffer:${key}`);
  t.true(pttl > 0 && pttl <= 1000, `the lock is in Redis with its ttl (PTTL ${pttl})`);
  await new Promise((resolve) => setTimeout(resolve, 2200));
  const later = await raw.pttl(`koa-buffer:${key}`);
  t.true(later > 0 && later <= 1000, `still there after twice its ttl, renewed (PTTL ${later})`);
  const other = new RedisLock({ redis: redis.url });
  t.teardown(() => other.close());
  t.deepEqual(await other.acquire(key), [null, undefined], 'and busy for others');
  t.is((await first.exited).code, 0);
  t.is(await raw.exists(`koa-buffer:${key}`), 0, 'released when the command ended');
});

serial('an unreachable Redis exits 69 with one line', async (t) => {
  const port = await freePort();
  const child = koaBufferLock(t, ['--redis', `redis://127.0.0.1:${port}`, 'k', '--', 'true']);
  t.is((await child.exited).code, 69);
  t.regex(child.stderr, /^koa-buffer-lock: cannot take the lock k: Redis lock koa-buffer:k failed: .*\n$/);
});
