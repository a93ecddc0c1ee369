/**
 * Running the files of `examples/` as a user would: a real process
 * (`node --import tsx/esm examples/<file>`, in a process group of its own so
 * that cluster workers go with it), on a free port, waiting for the line
 * that prints its URL. Everything is killed and removed in teardown.
 */
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ExecutionContext } from 'ava';
import { spawnProgram, type ChildOptions, type LineChild } from './children.ts';
import { rawRequest, type RawResponse } from './serve.ts';

/** Absolute path of a file under examples/. */
export function example(name: string): string {
  return fileURLToPath(new URL(`../../examples/${name}`, import.meta.url));
}

/** The repository root (examples are run from there, as their comments say). */
export const repoRoot = fileURLToPath(new URL('../..', import.meta.url));

/** A fresh temporary directory, removed in teardown. */
export function tempDir(t: ExecutionContext, prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/**
 * The environment for an example: this one, PORT=0, and `env`. NO_CACHE and
 * NO_STORE are dropped: either would make every cache lookup a bypass.
 */
export function exampleEnv(env: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const { NO_CACHE: _noCache, NO_STORE: _noStore, ...rest } = process.env;
  return { ...rest, PORT: '0', ...env };
}

/** A running example server. */
export interface RunningExample {
  child: LineChild;
  /** e.g. http://127.0.0.1:41234 */
  base: string;
  port: number;
  /** GET (or another method) over a fresh connection; the response exactly as it came. */
  request(path: string, headers?: Record<string, string>, method?: string): Promise<RawResponse>;
}

/**
 * Starts `examples/<name>` and waits for the line carrying its URL.
 *
 * @param urlLine - the line that announces the server; its first `http://host:port` is the base
 */
export async function startExample(
  t: ExecutionContext,
  name: string,
  options: { env?: NodeJS.ProcessEnv; urlLine?: RegExp; lineTimeoutMs?: number } = {},
): Promise<RunningExample> {
  const { env, urlLine = /^listening on http:\/\//, lineTimeoutMs = 30_000 } = options;
  const childOptions: ChildOptions = { env: exampleEnv(env), cwd: repoRoot, group: true, lineTimeoutMs };
  const child = spawnProgram(t, process.execPath, ['--import', 'tsx/esm', example(name)], childOptions);
  const line = await child.waitForLine((l) => urlLine.test(l), `${name} to print its URL`);
  const match = /http:\/\/127\.0\.0\.1:(\d+)/.exec(line);
  if (!match) throw new Error(`no http://127.0.0.1:PORT in ${JSON.stringify(line)}`);
  const port = Number(match[1]);
  return {
    child,
    base: `http://127.0.0.1:${port}`,
    port,
    request: (path, headers = {}, method = 'GET') => rawRequest(port, path, { headers, method }),
  };
}

/** True while a process with this pid runs (a zombie, dead but not yet reaped, does not count). */
export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
  if (!existsSync('/proc/self/stat')) return true; // no procfs: trust kill(0)
  try {
    // /proc/PID/stat: "pid (comm) state ..."; comm may hold spaces and parentheses.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.charAt(stat.lastIndexOf(')') + 2) !== 'Z';
  } catch {
    return false; // gone between the two looks
  }
}

/** Waits until none of `pids` is alive, or `ms` passed; returns those still alive. */
export async function waitGone(pids: number[], ms = 5000): Promise<number[]> {
  const deadline = Date.now() + ms;
  for (;;) {
    const left = pids.filter(alive);
    if (left.length === 0 || Date.now() > deadline) return left;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
