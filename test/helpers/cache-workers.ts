/**
 * Server processes for the multi-process cache tests (test/fixtures/cache-server.ts):
 * start them, count how many of their requests wait, read their log lines.
 * Every child is killed, and every temp dir removed, in the test's teardown.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ExecutionContext } from 'ava';
import { fixture, spawnChild, type LineChild } from './children.ts';
import type { RawResponse } from './serve.ts';

/** One server process. */
export interface Worker {
  child: LineChild;
  port: number;
}

/** A temp dir removed in teardown. */
export function tempDir(t: ExecutionContext, prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** Starts `count` servers with `config` and waits for their ports. */
export async function startWorkers(
  t: ExecutionContext,
  count: number,
  config: Record<string, unknown>,
): Promise<Worker[]> {
  const children = Array.from({ length: count }, () =>
    spawnChild(t, fixture('cache-server.ts'), [JSON.stringify(config)]),
  );
  return Promise.all(
    children.map(async (child) => {
      const { port } = await child.waitForJson<{ port?: number }>((m) => typeof m.port === 'number', 'the port');
      return { child, port: port! };
    }),
  );
}

/** The pids the action ran in, one line per run (the run count is the truth). */
export function runs(file: string): string[] {
  try {
    return readFileSync(file, 'utf8')
      .split('\n')
      .filter((l) => l !== '');
  } catch {
    return [];
  }
}

/** The koa-buffer log lines of `workers` at `level`. */
export function logLines(workers: readonly Worker[], level: string): string[] {
  return workers.flatMap((w) =>
    w.child.lines.flatMap((line) => {
      try {
        const message = JSON.parse(line) as { log?: string; message?: string };
        return message.log === level ? [message.message!] : [];
      } catch {
        return [];
      }
    }),
  );
}

/** How many requests of `workers` wait for a build (in their process or another): the debug lines say. */
export function waitingRequests(workers: readonly Worker[]): number {
  return logLines(workers, 'debug').filter((m) => m.startsWith('waiting for ')).length;
}

/** Waits until `count` requests wait for a build; fails after 20 s. */
export async function untilWaiting(workers: readonly Worker[], count: number): Promise<void> {
  const deadline = Date.now() + 20_000;
  while (waitingRequests(workers) < count) {
    if (Date.now() > deadline) throw new Error(`only ${waitingRequests(workers)} of ${count} requests came to wait`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** Lets every held build end. */
export function release(workers: readonly Worker[]): void {
  for (const w of workers) if (w.child.running) w.child.send('release');
}

/**
 * Asserts what a cold page requested by many clients across `workers` must
 * come to: one build in total, one page for all, one response that stored
 * it and every other one collapsed onto that build, no error logged.
 */
export function assertOneBuild(
  t: ExecutionContext,
  responses: readonly RawResponse[],
  runsFile: string,
  workers: readonly Worker[],
): void {
  t.is(runs(runsFile).length, 1, 'one build in total');
  for (const response of responses) t.is(response.status, 200);
  t.is(new Set(responses.map((r) => r.body.toString())).size, 1, 'one page for all');
  const statuses = responses.map((r) => r.headers['cache-status']);
  t.is(statuses.filter((s) => s === 'koa-buffer; fwd=miss; stored').length, 1);
  t.is(statuses.filter((s) => s === 'koa-buffer; fwd=miss; collapsed').length, responses.length - 1);
  t.deepEqual(logLines(workers, 'error'), [], 'nothing went wrong');
}
