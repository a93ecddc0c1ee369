/**
 * Child processes for tests: a TypeScript program run with
 * `node --import tsx/esm` (tsx's ESM-only hook: every file here is ESM, and it
 * starts in half the time of `--import tsx`, which counts when a test file
 * spawns dozens), spoken to by lines on stdin and stdout, and always killed
 * in the test's teardown.
 */
import { type ChildProcess, type SpawnOptions, spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import type { ExecutionContext } from 'ava';

/** How a child ended. */
export interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/** Options of {@link spawnChild}. */
export interface ChildOptions {
  env?: NodeJS.ProcessEnv;
  uid?: number;
  gid?: number;
  cwd?: string;
  /** Extra node flags, e.g. `--expose-gc`. */
  nodeArgs?: string[];
  /**
   * Start the child in a process group of its own and kill the whole group
   * in teardown, so grandchildren it leaves behind (a command run by
   * koa-buffer-lock) cannot hold the test's pipes open.
   */
  group?: boolean;
  /** Longest wait for a line, in ms. @defaultValue 15000 */
  lineTimeoutMs?: number;
}

/** A running child whose stdout is read line by line. */
export class LineChild {
  readonly process: ChildProcess;
  readonly exited: Promise<Exit>;
  /** Everything the child wrote to stderr, for failure messages. */
  stderr = '';
  #lines: string[] = [];
  #waiters: Array<() => void> = [];
  #exit: Exit | undefined;
  #nextId = 1;
  readonly #lineTimeoutMs: number;

  readonly #group: boolean;

  constructor(command: string, args: string[], options: SpawnOptions & { group?: boolean }, lineTimeoutMs: number) {
    const { group = false, ...spawnOptions } = options;
    this.#lineTimeoutMs = lineTimeoutMs;
    this.#group = group;
    this.process = spawn(command, args, { ...spawnOptions, detached: group, stdio: ['pipe', 'pipe', 'pipe'] });
    this.process.stderr!.setEncoding('utf8').on('data', (chunk: string) => (this.stderr += chunk));
    createInterface({ input: this.process.stdout! }).on('line', (line) => {
      this.#lines.push(line);
      this.#wake();
    });
    this.exited = new Promise((resolve) => {
      this.process.on('exit', (code, signal) => {
        // 'exit' can come before the last output is read: wait for the pipes to close too,
        // but not for ever, since a grandchild may still hold them.
        const closed = new Promise((done) => this.process.once('close', done));
        void Promise.race([closed, new Promise((done) => setTimeout(done, 2000).unref())]).then(() => {
          this.#exit = { code, signal };
          this.#wake();
          resolve(this.#exit);
        });
      });
      this.process.on('error', (error) => {
        this.stderr += String(error);
        this.#exit ??= { code: null, signal: null };
        this.#wake();
        resolve(this.#exit);
      });
    });
  }

  get pid(): number {
    return this.process.pid!;
  }

  get running(): boolean {
    return this.#exit === undefined;
  }

  /** Every stdout line so far. */
  get lines(): readonly string[] {
    return this.#lines;
  }

  /** Writes one line to the child's stdin. */
  send(line: string): void {
    this.process.stdin!.write(`${line}\n`);
  }

  /** The first line (from the start) that `match` accepts; waits for it. */
  async waitForLine(match: (line: string) => boolean, what = 'a matching line'): Promise<string> {
    const deadline = Date.now() + this.#lineTimeoutMs;
    for (;;) {
      const found = this.#lines.find(match);
      if (found !== undefined) return found;
      if (this.#exit !== undefined)
        throw new Error(`child exited (${JSON.stringify(this.#exit)}) before ${what}; stderr:\n${this.stderr}`);
      const left = deadline - Date.now();
      if (left <= 0)
        throw new Error(`no ${what} from the child within ${this.#lineTimeoutMs} ms; stderr:\n${this.stderr}`);
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        this.#waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
  }

  /** The first JSON line (parsed) that `match` accepts. */
  async waitForJson<T = Record<string, unknown>>(match: (message: T) => boolean, what?: string): Promise<T> {
    const line = await this.waitForLine((l) => {
      try {
        return match(JSON.parse(l) as T);
      } catch {
        return false;
      }
    }, what);
    return JSON.parse(line) as T;
  }

  /**
   * Sends `message` with a fresh `id` as a JSON line and waits for the child's
   * answer: the JSON line with that `id` and `done: true`.
   */
  async request<T = Record<string, unknown>>(message: Record<string, unknown>): Promise<T & { id: number }> {
    const id = this.#nextId++;
    this.send(JSON.stringify({ ...message, id }));
    return this.waitForJson<T & { id: number; done?: boolean }>(
      (m) => m.id === id && m.done === true,
      `an answer to ${JSON.stringify(message)}`,
    );
  }

  /** Sends `signal` and waits for the exit. */
  async kill(signal: NodeJS.Signals = 'SIGKILL'): Promise<Exit> {
    if (this.#exit === undefined) this.process.kill(signal);
    return this.exited;
  }

  /** SIGKILLs the child's whole process group (a `group` child), whatever is left of it. */
  killGroup(): void {
    if (!this.#group || this.process.pid === undefined) return;
    try {
      process.kill(-this.process.pid, 'SIGKILL');
    } catch {
      // the group is gone already
    }
  }

  #wake(): void {
    const waiters = this.#waiters;
    this.#waiters = [];
    for (const wake of waiters) wake();
  }
}

/** Absolute path of a file under test/fixtures. */
export function fixture(name: string): string {
  return fileURLToPath(new URL(`../fixtures/${name}`, import.meta.url));
}

/**
 * Starts `node --import tsx/esm file ...args` and kills it (SIGKILL) in the
 * test's teardown if it is still running.
 */
export function spawnChild(
  t: ExecutionContext,
  file: string,
  args: string[] = [],
  options: ChildOptions = {},
): LineChild {
  const { nodeArgs = [], lineTimeoutMs = 15_000, ...spawnOptions } = options;
  const child = new LineChild(
    process.execPath,
    [...nodeArgs, '--import', 'tsx/esm', file, ...args],
    spawnOptions,
    lineTimeoutMs,
  );
  t.teardown(async () => {
    child.killGroup();
    await child.kill('SIGKILL');
  });
  return child;
}

/** Starts any program (no tsx) and kills it in teardown. */
export function spawnProgram(
  t: ExecutionContext,
  command: string,
  args: string[] = [],
  options: ChildOptions = {},
): LineChild {
  const { lineTimeoutMs = 15_000, nodeArgs: _ignored, ...spawnOptions } = options;
  const child = new LineChild(command, args, spawnOptions, lineTimeoutMs);
  t.teardown(async () => {
    child.killGroup();
    await child.kill('SIGKILL');
  });
  return child;
}
