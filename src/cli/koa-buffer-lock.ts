#!/usr/bin/env node
/**
 * koa-buffer-lock: run a command while holding a koa-buffer lock, so that
 * only one copy of a cron job or deploy step runs at a time (docs/architecture.md, "The locks").
 * Its options follow flock(1); args.ts parses them, run-command.ts runs the
 * command so that it keeps the lock even when this wrapper is killed.
 *
 * Exit statuses follow sysexits(3) where the command's own cannot be used:
 * 64 bad usage, 66 the lock directory is missing, 69 the lock backend
 * failed, 75 (or -E CODE) the lock stayed busy; and the shell's 126/127
 * when the command cannot be run or found, 128+N when it died of signal N.
 */
import { lstatSync, readFileSync } from 'node:fs';
import { BufferOptionError } from '../base/errors.ts';
import { builtinMessages, type MessageArgs, type MessageKey } from '../base/messages.ts';
import { Lock } from '../locks/lock.ts';
import type { LockBackend } from '../locks/protocol.ts';
import { parse, UsageError, type Request } from './args.ts';
import { runCommand, type Tie } from './run-command.ts';

const EX_USAGE = 64;
const EX_NOINPUT = 66;
const EX_UNAVAILABLE = 69;

const usage = `Usage: koa-buffer-lock (--dir DIR | --redis URL) [-n | -w SECONDS] [options] KEY -- COMMAND [ARGS...]
       koa-buffer-lock (--dir DIR | --redis URL) [-n | -w SECONDS] [options] KEY -c 'COMMAND LINE'

Runs COMMAND (without a shell; with -c through sh -c) while holding the lock
KEY, so that only one copy runs at a time, and exits with its status.

  --dir DIR                 lock with a flock(2) file in DIR, which must exist: processes of this host
  --redis URL               lock in Redis (redis:// or rediss://): processes of many hosts
  -n, --nonblock            give up at once when the lock is busy (the default)
  -w, --wait, --timeout SECONDS
                            wait up to SECONDS for a busy lock, starting as soon as it is released;
                            also takes durations such as "5 minutes"
  -E, --conflict-exit-code CODE
                            exit with CODE (0-255) when the lock stays busy (default 75)
  -c, --command 'COMMAND'   run COMMAND through sh -c
  --ttl SECONDS             with --redis, how long the lock outlives a holder that died
                            (at least 1, default 60); renewed every ttl/3 while COMMAND runs
  -q, --quiet               say nothing when the lock stays busy (the default)
  --verbose                 say so when the lock is busy, and how long the wait took
  -V, --version             print the version
  -h, --help                print this help

With --dir, COMMAND gets the locked file as descriptor 3 and holds the lock
as long as it runs, even if koa-buffer-lock is killed; with --redis, COMMAND
is killed when koa-buffer-lock dies, since nobody renews the lock then.
SIGINT, SIGTERM, SIGHUP and SIGQUIT reach COMMAND once.

Exit status: COMMAND's; 128+N when it died of signal N; 75 (or -E) when the
lock stayed busy; 64 on bad usage; 66 when DIR does not exist; 69 when the
lock backend failed; 126 when COMMAND could not be run, 127 when it was not
found.
`;

function say(key: MessageKey, args: MessageArgs): void {
  process.stderr.write(`koa-buffer-lock: ${builtinMessages.text(key, args)}\n`);
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

/** The backend, remembering the guard it hands out (its descriptor goes to the command) and saying when it waits. */
function recording(backend: LockBackend, request: Request): { backend: LockBackend; guard: () => unknown } {
  let guard: unknown;
  let waiting = false;
  const seen = (result: unknown): unknown => {
    const [taken, error] = result as [unknown, unknown];
    if (taken) guard = taken;
    else if (error === undefined && !waiting && request.wait > 0 && request.verbosity === 'verbose') {
      waiting = true;
      say('cli_lock_waiting', { key: request.key, wait: request.wait });
    }
    return result;
  };
  return {
    backend: {
      acquire: (key, options) => {
        const result = backend.acquire(key, options);
        return result instanceof Promise ? result.then(seen) : seen(result);
      },
      release: (held) => backend.release(held),
      ...(backend.expire ? { expire: backend.expire.bind(backend) } : {}),
      ...(backend.waitForRelease
        ? { waitForRelease: (key, ms, options) => backend.waitForRelease!(key, ms, options).then(seen) }
        : {}),
    } as LockBackend,
    guard: () => guard,
  };
}

/** The package's version, from the package.json two levels up (from src/cli and dist/cli alike). */
function version(): string {
  const json = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };
  return json.version;
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

async function main(argv: string[]): Promise<number> {
  let request: Request | 'help' | 'version';
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
  if (request === 'version') {
    process.stdout.write(`koa-buffer-lock ${version()}\n`);
    return 0;
  }

  if ('dir' in request.backend) {
    // A cron line with a typo in --dir must not quietly lock in a directory of its own.
    try {
      lstatSync(request.backend.dir);
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === 'ENOENT') {
        say('lock_dir_missing', { dir: request.backend.dir });
        return EX_NOINPUT;
      }
    }
  }

  let raw: LockBackend & { close?(): Promise<void> };
  try {
    raw = await makeBackend(request);
  } catch (error) {
    const message = error instanceof Error ? error.message.replace(/^koa-buffer: /, '') : String(error);
    if (error instanceof BufferOptionError && error.key === 'option_lock_redis') {
      process.stderr.write(`koa-buffer-lock: ${message}\n\n${usage}`);
      return EX_USAGE;
    }
    say('cli_lock_unavailable', { key: request.key, error: message.split('\n')[0] });
    return EX_UNAVAILABLE;
  }

  try {
    const { backend, guard } = recording(raw, request);
    // Woken by the holder's release where the backend can be (flock(1) installed, Redis pub/sub), within a
    // few milliseconds; otherwise, or when a Redis message is lost, polling every 50 ms at most. exptime is
    // the Redis ttl of the lock; the waiting Lock wants it at least as long as the wait.
    const lock = new Lock(backend, {
      timeout: request.wait,
      step: 0.001,
      ratio: 2,
      maxStep: 0.05,
      exptime: Math.max(request.ttl, request.wait),
    });
    const [elapsed, error] = await lock.lock(request.key);
    if (elapsed === null) {
      if (error !== 'timeout') {
        say('cli_lock_unavailable', { key: request.key, error });
        return EX_UNAVAILABLE;
      }
      // A skipped run is silent by default: cron mails whatever a job prints.
      if (request.verbosity === 'verbose') {
        if (request.wait > 0) say('cli_lock_busy_waited', { key: request.key, wait: request.wait });
        else say('cli_lock_busy', { key: request.key });
      }
      return request.busyStatus;
    }
    if (request.verbosity === 'verbose') say('cli_lock_taken', { key: request.key, elapsed: elapsed.toFixed(3) });

    const fd = (guard() as { fd?: unknown }).fd;
    const tie: Tie = 'dir' in request.backend && typeof fd === 'number' ? { fd } : 'watchdog';
    const renew = 'redis' in request.backend ? keepAlive(lock, request) : undefined;
    const status = await runCommand({ command: request.command, args: request.args, tie }, (command, problem) =>
      say('cli_command_failed', { command, error: problem }),
    );
    if (renew) clearInterval(renew);
    const [released, releaseError] = await lock.unlock();
    if (!released) say('cli_unlock_failed', { key: request.key, error: releaseError });
    return status;
  } finally {
    await raw.close?.();
  }
}

main(process.argv.slice(2)).then(
  (status) => process.exit(status),
  (error: unknown) => {
    process.stderr.write(`koa-buffer-lock: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(EX_UNAVAILABLE);
  },
);
