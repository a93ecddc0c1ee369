/**
 * The command line of koa-buffer-lock, parsed: flock(1)'s short options
 * (`-n`, `-w`, `-E`, `-c`, `-q`) beside the long ones, and every bad value
 * refused with a message that names the option.
 */
import { parseArgs } from 'node:util';
import { parseDuration } from '../base/duration.ts';

/** sysexits(3) EX_TEMPFAIL: the lock stayed busy, try again later. */
export const defaultBusyStatus = 75;

/** The shortest --ttl: a Redis lock renewed every ttl/3 needs time for the round trips. */
export const minimumTtl = 1;

/** What the command line asked for. */
export interface Request {
  readonly backend: { readonly dir: string } | { readonly redis: string };
  /** Seconds to wait for a busy lock; 0 gives up at once. */
  readonly wait: number;
  /** Seconds a Redis lock outlives a holder that died. */
  readonly ttl: number;
  /** The exit status of a run skipped because the lock stayed busy. */
  readonly busyStatus: number;
  /** 'quiet': a skipped run says nothing (the default); 'verbose': it says so, and how long the wait took. */
  readonly verbosity: 'quiet' | 'verbose';
  readonly key: string;
  readonly command: string;
  readonly args: readonly string[];
}

/** A command line that cannot be run; the message names what is wrong. */
export class UsageError extends Error {}

const options = {
  dir: { type: 'string' },
  redis: { type: 'string' },
  wait: { type: 'string', short: 'w' },
  timeout: { type: 'string' },
  nonblock: { type: 'boolean', short: 'n' },
  ttl: { type: 'string' },
  'conflict-exit-code': { type: 'string', short: 'E' },
  command: { type: 'string', short: 'c' },
  quiet: { type: 'boolean', short: 'q' },
  verbose: { type: 'boolean' },
  version: { type: 'boolean', short: 'V' },
  help: { type: 'boolean', short: 'h' },
} as const;

/** Seconds from `--wait`/`-w`, `--ttl`: a number or a duration such as "5 minutes". */
function seconds(name: string, value: string): number {
  const parsed = parseDuration(value);
  if (parsed === undefined) throw new UsageError(`${name} needs a number of seconds, not '${value}'`);
  return parsed;
}

/**
 * Parses the arguments after the program name.
 *
 * @returns the request, or 'help' / 'version' when asked for
 * @throws UsageError naming the argument that is wrong
 */
export function parse(argv: readonly string[]): Request | 'help' | 'version' {
  let parsed;
  try {
    parsed = parseArgs({ args: [...argv], options, allowPositionals: true, strict: true, tokens: true });
  } catch (error) {
    throw new UsageError(error instanceof Error ? error.message : String(error));
  }
  const { values, tokens } = parsed;
  if (values.help) return 'help';
  if (values.version) return 'version';
  const terminator = tokens.find((token) => token.kind === 'option-terminator');
  const before = tokens.filter(
    (token) => token.kind === 'positional' && (terminator === undefined || token.index < terminator.index),
  );
  const after = terminator === undefined ? [] : argv.slice(terminator.index + 1);
  let command: string;
  let args: string[];
  if (values.command !== undefined) {
    if (after.length > 0) throw new UsageError('give the command either with -c or after --, not both');
    if (values.command === '') throw new UsageError("-c needs a command, not ''");
    [command, args] = ['sh', ['-c', values.command]];
  } else {
    if (terminator === undefined) throw new UsageError('put -- between KEY and COMMAND (or give -c COMMAND)');
    if (after.length === 0) throw new UsageError('COMMAND is missing after --');
    [command, args] = [after[0]!, after.slice(1)];
  }
  if (before.length !== 1)
    throw new UsageError(before.length === 0 ? 'KEY is missing' : 'give exactly one KEY before the command');
  if ((values.dir === undefined) === (values.redis === undefined))
    throw new UsageError('give exactly one of --dir and --redis');
  if (values.dir === '') throw new UsageError('--dir needs a directory');
  if (values.ttl !== undefined && values.redis === undefined) throw new UsageError('--ttl applies to --redis only');
  if (values.quiet && values.verbose) throw new UsageError('-q and --verbose cannot be combined');

  const waits = [values.wait, values.timeout].filter((v) => v !== undefined);
  if (waits.length > 1) throw new UsageError('give one of -w/--wait and --timeout');
  if (values.nonblock && waits.length > 0) throw new UsageError('-n (no wait) and -w SECONDS cannot be combined');
  const wait = waits.length === 0 ? 0 : seconds('-w/--wait', waits[0]!);

  const ttl = values.ttl === undefined ? 60 : seconds('--ttl', values.ttl);
  if (ttl < minimumTtl) throw new UsageError(`--ttl must be at least ${minimumTtl} s, not '${values.ttl}'`);

  let busyStatus = defaultBusyStatus;
  if (values['conflict-exit-code'] !== undefined) {
    const given = values['conflict-exit-code'];
    busyStatus = /^\d{1,3}$/.test(given) ? Number(given) : NaN;
    if (!(busyStatus <= 255)) throw new UsageError(`-E needs an exit status from 0 to 255, not '${given}'`);
  }

  return {
    backend: values.dir !== undefined ? { dir: values.dir } : { redis: values.redis! },
    wait,
    ttl,
    busyStatus,
    verbosity: values.verbose ? 'verbose' : 'quiet',
    key: (before[0] as { value: string }).value,
    command,
    args,
  };
}
