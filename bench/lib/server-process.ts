/**
 * The server half of an HTTP bench, in a child process of its own, and the
 * driver's handle on it: one way to start it pinned to core 0, to ask it
 * questions over IPC, to read its CPU time, and to measure it inside a single
 * load run.
 *
 * The server counts the requests it receives, so that a measurement can be a
 * window inside one load run (its first seconds warm the JIT; see
 * {@link measureInOneRun}), and it measures its own event-loop delay on
 * request (`delay-start`, `delay-stop`), where the load generator cannot see.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { readFileSync } from 'node:fs';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { load, once, pinned } from './load.ts';

/** A server process as the driver sees it. */
export interface ServerProcess {
  mode: string;
  port: number;
  child: ChildProcess;
  /** Sends `cmd` to the server and resolves with its answer. One question at a time. */
  ask(cmd: string): Promise<Record<string, number>>;
}

/**
 * Server side: serves `listener` on a loopback port, tells the driver the
 * port, answers its questions, and exits when the driver goes away.
 *
 * @param extra - answers to more questions, by command (e.g. RSS readings)
 */
export function serveToDriver(
  listener: http.RequestListener,
  extra: Record<string, () => Record<string, number>> = {},
): http.Server {
  let received = 0;
  const delay = monitorEventLoopDelay({ resolution: 1 });
  const server = http.createServer((req, res) => {
    received++;
    listener(req, res);
  });
  server.listen(0, '127.0.0.1', () => process.send!({ port: (server.address() as AddressInfo).port }));
  process.on('message', (message: { cmd: string }) => {
    if (message.cmd === 'received') {
      process.send!({ received });
    } else if (message.cmd === 'delay-start') {
      delay.reset();
      delay.enable();
      process.send!({ ok: 1 });
    } else if (message.cmd === 'delay-stop') {
      delay.disable();
      process.send!({ p99: delay.percentile(99) / 1e6, max: delay.max / 1e6 });
    } else if (extra[message.cmd]) {
      process.send!(extra[message.cmd]!());
    }
  });
  process.on('disconnect', () => process.exit(0));
  return server;
}

/**
 * Driver side: starts `script --serve mode` (plus `args`) pinned to core 0 and
 * resolves once it listens.
 *
 * @param options.pin - false to leave the process on every core (two servers that talk to each other)
 * @param options.nodeArgs - flags for node itself (e.g. `--expose-gc`)
 * @throws Error naming the mode when the process exits before it listens
 */
export function startServerProcess(
  script: string,
  mode: string,
  args: string[] = [],
  options: { pin?: boolean; nodeArgs?: string[] } = {},
): Promise<ServerProcess> {
  const argv = [process.execPath, ...(options.nodeArgs ?? []), '--import', 'tsx', script, '--serve', mode, ...args];
  const [cmd, rest] = options.pin === false ? [argv[0]!, argv.slice(1)] : pinned(0, argv);
  const child = spawn(cmd, rest, {
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    env: { ...process.env, KOA_BUFFER_DEBUG: '0' },
  });
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', (code) => reject(new Error(`server ${mode} exited with ${code}`)));
    child.once('message', (message: { port: number }) => {
      resolve({
        mode,
        port: message.port,
        child,
        ask: (question) =>
          new Promise((answered) => {
            child.once('message', answered as never);
            child.send({ cmd: question });
          }),
      });
    });
  });
}

/** CPU time (user + system) of a process so far, in microseconds; undefined without /proc. */
export function cpuMicros(pid: number): number | undefined {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
    // Fields 14 and 15 of stat(5), counted from the state field (3rd) here; in clock ticks of 10 ms (USER_HZ 100).
    return (Number(fields[11]) + Number(fields[12])) * 10_000;
  } catch {
    return undefined;
  }
}

/** What {@link measureInOneRun} reports. */
export interface WindowResult {
  rps: number;
  /** Server CPU µs per request; undefined without /proc. */
  micros: number | undefined;
  errors: number;
  non2xx: number;
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * One load run of `warmSeconds + windowSeconds + 1` seconds, measured over
 * its window only: requests counted by the server, its CPU time from /proc.
 *
 * Why a window inside one run, on a process that has seen no other run: a
 * Node 20 process that has seen the end of a few load runs (each resets its
 * 50 connections mid-response) can settle, at random, into a state in which
 * Node creates every `process.nextTick` object through V8's runtime (perf:
 * Runtime_DefineKeyedOwnPropertyInLiteral, Map::TransitionToDataProperty,
 * MigrateToMap) and spends a quarter to a half more CPU per request for as
 * long as it lives. It struck today's koa-buffer and older commits alike
 * (2026-12-01: 6 processes of 8 after 14 one-second runs each), and bare
 * Koa, but not equally often in one bench run, so which processes it struck
 * decided a 5% comparison. A single continuous run of 80 s did not set it off.
 */
export async function measureInOneRun(
  server: ServerProcess,
  headers: Record<string, string>,
  { warmSeconds = 2, windowSeconds = 3 } = {},
): Promise<WindowResult> {
  const pid = server.child.pid!;
  const running = load(server.port, headers, warmSeconds + windowSeconds + 1);
  await sleep(warmSeconds * 1000);
  const [count0, cpu0, at0] = [(await server.ask('received')).received!, cpuMicros(pid), performance.now()];
  await sleep(windowSeconds * 1000);
  const [count1, cpu1, at1] = [(await server.ask('received')).received!, cpuMicros(pid), performance.now()];
  const result = await running;
  const count = count1 - count0;
  return {
    rps: (count / (at1 - at0)) * 1000,
    micros: cpu0 !== undefined && cpu1 !== undefined && count > 0 ? (cpu1 - cpu0) / count : undefined,
    errors: result.errors,
    non2xx: result.non2xx,
  };
}

/**
 * A contender for bench/lib/harness.ts `paired` that measures a new server
 * process of `mode` per run ({@link measureInOneRun}): req/s, then CPU µs
 * per request (NaN without /proc).
 *
 * @param prepare - run on the new process before the load (e.g. wait for hot bytes)
 */
export function freshProcessContender(
  script: string,
  mode: string,
  name: string,
  headers: Record<string, string>,
  problems: string[],
  prepare: (server: ServerProcess) => Promise<void>,
): { name: string; run: () => Promise<number[]> } {
  return {
    name,
    run: async () => {
      const server = await startServerProcess(script, mode);
      try {
        await prepare(server);
        const result = await measureInOneRun(server, headers);
        if (result.errors > 0 || result.non2xx > 0)
          problems.push(`${name} (new process): ${result.errors} errors, ${result.non2xx} non-2xx`);
        if (process.env.KB_BENCH_VERBOSE === '1')
          console.error(`${name} (new process): ${result.rps.toFixed(0)} req/s ${result.micros?.toFixed(1) ?? '?'} µs`);
        return [result.rps, result.micros ?? Number.NaN];
      } finally {
        server.child.kill();
      }
    },
  };
}

/** Waits until the server answers with hot bytes (an ETag ending in the coding's level, e.g. `…-br11"`), at most a minute. */
export async function untilHot(port: number, headers: Record<string, string>): Promise<void> {
  for (let waited = 0; waited < 60_000; waited += 100) {
    if (/\d"$/.test((await once(port, headers)).headers.etag ?? '')) return;
    await sleep(100);
  }
}
