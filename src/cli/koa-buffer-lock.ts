#!/usr/bin/env node
/**
 * koa-buffer-lock: run a command while holding a koa-buffer lock, so that
 * only one copy of a cron job or deploy step runs at a time (docs/architecture.md, "The locks").
 *
 * Exit statuses follow sysexits(3) where the command's own cannot be used:
 * 64 bad usage, 69 the lock backend failed, 75 the lock stayed busy; and the
 * shell's 126/127 when the command cannot be run or found, 128+N when it
 * died of signal N.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { constants } from 'node:os';
import { parseArgs } from 'node:util';
import { parseDuration } from '../duration.ts';
import { BufferOptionError } from '../errors.ts';
import { builtinMessages, type MessageArgs, type MessageKey } from '../messages.ts';
import { Lock } from '../locks/lock.ts';
import type { LockBackend } from '../locks/protocol.ts';

const EX_USAGE = 64;
const EX_UNAVAILABLE = 69;
const EX_TEMPFAIL = 75;
const EX_NOEXEC = 126;
const EX_NOTFOUND = 127;

const usage = `Usage: koa-buffer-lock (--dir DIR | --redis URL) [--wait SECONDS] [--ttl SECONDS] KEY -- COMMAND [ARGS...]

Runs COMMAND (without a shell) while holding the lock KEY, so that only one
copy runs at a time, and exits with its status.

  --dir DIR        lock with a flock(2) file in DIR: processes of this host
  --redis URL      lock in Redis (redis:// or rediss://): processes of many hosts
  --wait SECONDS   wait up to SECONDS for a busy lock (default 0: give up at once);
                   also takes durations such as "5 minutes"
  --ttl SECONDS    with --redis, how long the lock outlives a holder that died
                   (default 60); renewed every ttl/3 while COMMAND runs
  -h, --help       print this help

SIGINT, SIGTERM and SIGHUP are passed on to COMMAND.

Exit status: COMMAND's; 128+N when it died of signal N; 75 when the lock stayed
busy; 64 on bad usage; 69 when the lock backend failed; 126 when COMMAND could
not be run, 127 when it was not found.
`;

/** What the command line asked for. */
interface Request {
  backend: { dir: string } | { redis: string };
  wait: number;
  ttl: number;
  key: string;
  command: string;
  args: string[];
}

class UsageError extends Error {}

function say(key: MessageKey, args: MessageArgs): void {
  process.stderr.write(`koa-buffer-lock: ${builtinMessages.text(key, args)}\n`);
}

function fail(key: MessageKey, args: MessageArgs, status: number): never {
  say(key, args);
  process.exit(status);
}

function parse(argv: string[]): Request | 'help' {
  let parsed;
  try {
    parsed = parseArgs({
      args: argv,
      options: {
        dir: { type: 'string' },
        redis: { type: 'string' },
        wait: { type: 'string' },
        ttl: { type: 'string' },
        help: { type: 'boolean', short: 'h' },
      },
      allowPositionals: true,
      strict: true,
      tokens: true,
    });
  } catch (error) {
    throw new UsageError(error instanceof Error ? error.message : String(error));
  }
  const { values, tokens } = parsed;
  if (values.help) return 'help';
  const terminator = tokens.find((token) => token.kind === 'option-terminator');
  if (terminator === undefined) throw new UsageError('put -- between KEY and COMMAND');
  const before = tokens.filter((token) => token.kind === 'positional' && token.index < terminator.index);
  const after = argv.slice(terminator.index + 1);
  if (before.length !== 1)
    throw new UsageError(before.length === 0 ? 'KEY is missing' : 'give exactly one KEY before --');
  if (after.length === 0) throw new UsageError('COMMAND is missing after --');
  if ((values.dir === undefined) === (values.redis === undefined))
    throw new UsageError('give exactly one of --dir and --redis');
  if (values.dir === '') throw new UsageError('--dir needs a directory');
  if (values.ttl !== undefined && values.redis === undefined) throw new UsageError('--ttl applies to --redis only');
  const wait = values.wait === undefined ? 0 : parseDuration(values.wait);
  if (wait === undefined) throw new UsageError(`--wait needs a number of seconds, not '${values.wait}'`);
  const ttl = values.ttl === undefined ? 60 : parseDuration(values.ttl);
  if (ttl === undefined || ttl <= 0)
    throw new UsageError(`--ttl needs a number of seconds above 0, not '${values.ttl}'`);
  return {
    backend: values.dir !== undefined ? { dir: values.dir } : { redis: values.redis! },
    wait,
    ttl,
    key: (before[0] as { value: string }).value,
    command: after[0]!,
    args: after.slice(1),
  };
}

/** The backend, imported on demand so --redis works without the native addon. */
async function makeBackend(request: Request): Promise<LockBackend & { close?(): Promise<void> }> {
  if ('dir' in request.backend) {
    const { FileLock } = await import('../locks/file-lock.ts');
    return new FileLock({ dir: request.backend.dir }) as LockBackend;
  }
  const { RedisLock } = await import('../locks/redis-lock.ts');
  return new RedisLock({ redis: request.backend.redis, ttl: request.ttl }) as LockBackend & { close(): Promise<void> };
}

/** Runs the command; resolves with the status this program should exit with. */
function run(request: Request): Promise<number> {
  return new Promise((resolve) => {
    // The child usually shares our terminal's process group and gets a Ctrl-C
    // itself; signals sent to this process alone (kill, systemd, cron) must
    // still reach it, so every one is passed on. The handlers go in before the
    // spawn: the command may start and be signalled before spawn() returns
    // here, and a signal in that gap would otherwise kill us and orphan it.
    let child: ChildProcess | undefined;
    const early: NodeJS.Signals[] = [];
    const forward = (signal: NodeJS.Signals): void => {
      if (child) child.kill(signal);
      else early.push(signal);
    };
    const signals: NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP'];
    for (const signal of signals) process.on(signal, forward);
    const done = (status: number): void => {
      for (const signal of signals) process.off(signal, forward);
      resolve(status);
    };
    try {
      child = spawn(request.command, request.args, { stdio: 'inherit' });
    } catch (error) {
      say('cli_command_failed', {
        command: request.command,
        error: error instanceof Error ? error.message : String(error),
      });
      done(EX_NOEXEC);
      return;
    }
    for (const signal of early) child.kill(signal);
    child.once('error', (error: NodeJS.ErrnoException) => {
      say('cli_command_failed', { command: request.command, error: error.message });
      done(error.code === 'ENOENT' ? EX_NOTFOUND : EX_NOEXEC);
    });
    child.once('exit', (code, signal) => {
      done(signal !== null ? 128 + (constants.signals[signal] ?? 0) : (code ?? 0));
    });
  });
}

async function main(argv: string[]): Promise<number> {
  let request: Request | 'help';
  try {
    request = parse(argv);
  } catch (error) {
    if (!(error instanceof UsageError)) throw error;
    process.stderr.write(`koa-buffer-lock: ${error.message}\n\n${usage}`);
    return EX_USAGE;
  }
  if (request === 'help') {
    process.stdout.write(usage);
    return 0;
  }

  let backend: LockBackend & { close?(): Promise<void> };
  try {
    backend = await makeBackend(request);
  } catch (error) {
    const message = error instanceof Error ? error.message.replace(/^koa-buffer: /, '') : String(error);
    if (error instanceof BufferOptionError && error.key === 'option_lock_redis') {
      process.stderr.write(`koa-buffer-lock: ${message}\n\n${usage}`);
      return EX_USAGE;
    }
    fail('cli_lock_unavailable', { key: request.key, error: message.split('\n')[0] }, EX_UNAVAILABLE);
  }

  try {
    // exptime is the Redis ttl of the lock; the waiting Lock wants it at least as long as the wait.
    const lock = new Lock(backend, { timeout: request.wait, exptime: Math.max(request.ttl, request.wait, 0.001) });
    const [elapsed, error] = await lock.lock(request.key);
    if (elapsed === null) {
      if (error === 'timeout') {
        if (request.wait > 0) fail('cli_lock_busy_waited', { key: request.key, wait: request.wait }, EX_TEMPFAIL);
        fail('cli_lock_busy', { key: request.key }, EX_TEMPFAIL);
      }
      fail('cli_lock_unavailable', { key: request.key, error }, EX_UNAVAILABLE);
    }

    const renew = 'redis' in request.backend ? keepAlive(lock, request) : undefined;
    const status = await run(request);
    if (renew) clearInterval(renew);
    const [released, releaseError] = await lock.unlock();
    if (!released) say('cli_unlock_failed', { key: request.key, error: releaseError });
    return status;
  } finally {
    await backend.close?.();
  }
}

/** Renews a Redis lock every ttl/3, so a long command keeps it and a dead one loses it within ttl. */
function keepAlive(lock: Lock, request: Request): NodeJS.Timeout {
  let failing = false;
  const timer = setInterval(
    () => {
      void lock.expire(request.ttl).then(([ok, error]) => {
        if (!ok && !failing) say('cli_expire_failed', { key: request.key, error });
        failing = !ok;
      });
    },
    (request.ttl * 1000) / 3,
  );
  timer.unref();
  return timer;
}

main(process.argv.slice(2)).then(
  (status) => process.exit(status),
  (error: unknown) => {
    process.stderr.write(`koa-buffer-lock: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(EX_UNAVAILABLE);
  },
);
