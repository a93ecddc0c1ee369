/**
 * Runs the command of koa-buffer-lock so that it keeps the lock as long as
 * it runs and gets each signal once
 * (docs/decisions/0041-command-keeps-the-lock.md).
 *
 * - A flock lock: the locked descriptor is handed to the command as fd 3,
 *   as flock(1) does, so the kernel keeps the lock while the command (or
 *   anything it started with fd 3) runs, even when this wrapper is killed.
 * - A lock with a time to live (Redis): the wrapper renews it, so the
 *   command must not outlive the wrapper. It runs under a `sh` shim whose
 *   watchdog reads a pipe from the wrapper: the wrapper writes one line
 *   when the command has ended; end of file without that line means the
 *   wrapper died, and the watchdog kills the command. Where util-linux's
 *   setpriv is found the command also gets a parent-death signal, so the
 *   kernel kills it at once, without waiting for the watchdog's turn.
 * - Signals: in the foreground of a terminal the command stays in the
 *   terminal's process group (it can read the terminal, Ctrl-Z stops it),
 *   and the keyboard's SIGINT and SIGQUIT, which the terminal sends to the
 *   whole group, are not sent again. Anywhere else the command gets a
 *   session of its own, so a signal to our process group reaches only the
 *   wrapper, which passes every signal on to the command's group, once.
 */
import { spawn, type ChildProcess, type StdioOptions } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { constants } from 'node:os';
import type { Writable } from 'node:stream';

const EX_NOEXEC = 126;
const EX_NOTFOUND = 127;

/** How the command holds on to the lock. */
export type Tie =
  /** A flock descriptor to hand down as fd 3. */
  | { readonly fd: number }
  /** A lock the wrapper keeps alive: the command dies with the wrapper. */
  | 'watchdog';

/** What {@link runCommand} runs. */
export interface RunRequest {
  readonly command: string;
  readonly args: readonly string[];
  readonly tie: Tie;
}

/**
 * The shim of a watched command. Its watchdog ignores the signals the command
 * gets (they are the command's to handle), keeps none of the command's
 * output open, and kills the command when the pipe on fd 3 ends without a
 * line: its whole process group when it leads one (what it started dies
 * too), else the command alone (the terminal's group holds other jobs).
 */
function watchdogShim(ownGroup: boolean): string {
  const target = ownGroup ? '-$$' : '$$';
  // setpriv (util-linux) sets the command's parent-death signal before exec: the kernel kills the command the
  // moment this wrapper dies, where the watchdog must first be scheduled (on a machine loaded enough, later than
  // a short ttl). The watchdog stays for what the command started, and for systems without setpriv.
  return (
    `( trap '' HUP INT QUIT TERM; read -r _ <&3 || kill -s KILL -- ${target} ) </dev/null >/dev/null 2>&1 &\n` +
    `if command -v setpriv >/dev/null 2>&1; then exec setpriv --pdeathsig KILL -- "$@" 3<&-; fi\n` +
    `exec "$@" 3<&-`
  );
}

/** Signals passed on to the command. */
const forwarded: NodeJS.Signals[] = ['SIGINT', 'SIGTERM', 'SIGHUP', 'SIGQUIT'];
/** Signals a terminal sends its foreground process group from the keyboard. */
const keyboard = new Set<NodeJS.Signals>(['SIGINT', 'SIGQUIT']);

/**
 * True when this process is in the foreground process group of its
 * controlling terminal (/proc/self/stat: tty_nr is set and tpgid is our
 * pgrp), where the keyboard's signals reach the command directly. Without
 * /proc, a terminal on any standard stream counts as one.
 */
export function inTerminalForeground(): boolean {
  try {
    const stat = readFileSync('/proc/self/stat', 'utf8');
    // pid (comm) state ppid pgrp session tty_nr tpgid ...; comm may hold spaces and parentheses.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const [pgrp, ttyNr, tpgid] = [Number(fields[2]), Number(fields[4]), Number(fields[5])];
    return ttyNr !== 0 && tpgid === pgrp;
  } catch {
    return Boolean(process.stdin.isTTY || process.stdout.isTTY || process.stderr.isTTY);
  }
}

/**
 * Runs the command and resolves with the status this program should exit
 * with: the command's, 128+N when it died of signal N, 126 when it could
 * not be run, 127 when it was not found. `say` gets the one line of a
 * command that could not be started.
 */
export function runCommand(request: RunRequest, say: (command: string, error: string) => void): Promise<number> {
  return new Promise((resolve) => {
    const foreground = inTerminalForeground();
    // The handlers go in before the spawn: the command may start and be signalled before spawn() returns
    // here, and a signal in that gap would otherwise kill us and orphan it.
    let child: ChildProcess | undefined;
    const early: NodeJS.Signals[] = [];
    const send = (signal: NodeJS.Signals): void => {
      try {
        // Outside a terminal the command leads its own process group: all of it gets the signal, as
        // a terminal's Ctrl-C reaches every process of a pipeline.
        if (foreground) child!.kill(signal);
        else process.kill(-child!.pid!, signal);
      } catch {
        // gone already
      }
    };
    const forward = (signal: NodeJS.Signals): void => {
      // The terminal sent this one to the whole group, the command included: not again.
      if (foreground && keyboard.has(signal)) return;
      if (child?.pid !== undefined) send(signal);
      else early.push(signal);
    };
    for (const signal of forwarded) process.on(signal, forward);
    const done = (status: number): void => {
      for (const signal of forwarded) process.off(signal, forward);
      resolve(status);
    };

    const watched = request.tie === 'watchdog';
    const extra = watched ? 'pipe' : (request.tie as { fd: number }).fd;
    const stdio: StdioOptions = ['inherit', 'inherit', 'inherit', extra];
    const [file, args] = watched
      ? ['/bin/sh', ['-c', watchdogShim(!foreground), 'koa-buffer-lock', request.command, ...request.args]]
      : [request.command, [...request.args]];
    try {
      child = spawn(file, args, { stdio, detached: !foreground });
    } catch (error) {
      say(request.command, error instanceof Error ? error.message : String(error));
      done(EX_NOEXEC);
      return;
    }
    const pipe = watched ? (child.stdio[3] as Writable | null) : null;
    // The watchdog's pipe must never stop this process, whatever the shim does with its end.
    pipe?.on('error', () => undefined);
    if (child.pid !== undefined) for (const signal of early) send(signal);
    child.once('error', (error: NodeJS.ErrnoException) => {
      pipe?.destroy();
      say(request.command, error.message);
      done(error.code === 'ENOENT' ? EX_NOTFOUND : EX_NOEXEC);
    });
    child.once('exit', (code, signal) => {
      // The command ended on its own: the line tells the watchdog to go without killing anything.
      pipe?.end('\n');
      done(signal !== null ? 128 + (constants.signals[signal] ?? 0) : (code ?? 0));
    });
  });
}
