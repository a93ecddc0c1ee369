/**
 * Load generation shared by the HTTP benches, in its own process pinned to
 * core 1 (the server runs pinned to core 0), and a single request that
 * reports status, headers and bytes on the wire.
 *
 * The generator is wrk when it is installed (Debian package `wrk`), else
 * autocannon. On two cores the generator's own cost decides the ceiling:
 * autocannon spends more CPU per request than a Koa server answering a
 * 10 KB Buffer, so every fast configuration then measures autocannon and
 * every ratio between them is squeezed toward 1. wrk (C, epoll) costs a
 * fraction of that, so the server saturates first, as it should.
 * `KB_LOAD=autocannon` forces autocannon.
 */
import { spawn, spawnSync } from 'node:child_process';
import http from 'node:http';
import { fileURLToPath } from 'node:url';
import { report, type Row } from './harness.ts';

const autocannonBin = fileURLToPath(new URL('../../node_modules/autocannon/autocannon.js', import.meta.url));

/** The load generator in use: wrk when installed, unless KB_LOAD says autocannon. */
export const generator: 'wrk' | 'autocannon' =
  process.env.KB_LOAD !== 'autocannon' && spawnSync('wrk', ['--version']).error === undefined ? 'wrk' : 'autocannon';

/** True when `taskset` can pin processes to cores here. */
export const hasTaskset = spawnSync('taskset', ['-c', '0', 'true']).status === 0;

/** `args` as a command pinned to `core` when taskset is there: [command, arguments]. */
export const pinned = (core: number, args: string[]): [string, string[]] =>
  hasTaskset ? ['taskset', ['-c', String(core), ...args]] : [args[0]!, args.slice(1)];

/** What one load run reports. */
export interface LoadResult {
  rps: number;
  total: number;
  non2xx: number;
  errors: number;
  /** Bytes received a second, headers included, and the part of a response still arriving when the run ended. */
  bytesPerSecond: number;
}

const units: Record<string, number> = { B: 1, KB: 1024, MB: 1024 ** 2, GB: 1024 ** 3, TB: 1024 ** 4 };

/** One run of `seconds` against 127.0.0.1:port with `connections` connections. */
export function load(
  port: number,
  headers: Record<string, string>,
  seconds: number,
  connections = 50,
): Promise<LoadResult> {
  return generator === 'wrk'
    ? wrk(port, headers, seconds, connections)
    : autocannon(port, headers, seconds, connections);
}

function run(args: string[], parse: (out: string) => LoadResult): Promise<LoadResult> {
  const [cmd, rest] = pinned(1, args);
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, rest, { stdio: ['ignore', 'pipe', 'ignore'] });
    let out = '';
    child.stdout.on('data', (chunk) => (out += chunk));
    child.on('error', reject);
    child.on('exit', () => {
      try {
        resolve(parse(out));
      } catch (error) {
        reject(new Error(`${args[0]} output did not parse: ${out.slice(0, 300)} (${(error as Error).message})`));
      }
    });
  });
}

function wrk(port: number, headers: Record<string, string>, seconds: number, connections: number): Promise<LoadResult> {
  const h = Object.entries(headers).flatMap(([k, v]) => ['-H', `${k}: ${v}`]);
  return run(['wrk', '-t1', `-c${connections}`, `-d${seconds}s`, ...h, `http://127.0.0.1:${port}/`], (out) => {
    const number = (pattern: RegExp): number => Number(pattern.exec(out)?.[1] ?? 0);
    const total = number(/(\d+) requests in/);
    if (!/Requests\/sec:/.test(out)) throw new Error('no Requests/sec line');
    const errors = [...out.matchAll(/(connect|read|write|timeout) (\d+)/g)].reduce((sum, m) => sum + Number(m[2]), 0);
    const transfer = /Transfer\/sec:\s+([\d.]+)([KMGT]?B)/.exec(out);
    return {
      rps: number(/Requests\/sec:\s+([\d.]+)/),
      total,
      non2xx: number(/Non-2xx or 3xx responses: (\d+)/),
      errors,
      bytesPerSecond: transfer ? Number(transfer[1]) * units[transfer[2]!]! : 0,
    };
  });
}

function autocannon(
  port: number,
  headers: Record<string, string>,
  seconds: number,
  connections: number,
): Promise<LoadResult> {
  const h = Object.entries(headers).flatMap(([k, v]) => ['-H', `${k}=${v}`]);
  return run(
    [
      process.execPath,
      autocannonBin,
      '-c',
      String(connections),
      '-d',
      String(seconds),
      '-j',
      ...h,
      `http://127.0.0.1:${port}/`,
    ],
    (out) => {
      const json = JSON.parse(out) as {
        requests: { average: number; total: number };
        throughput: { average: number };
        non2xx: number;
        errors: number;
      };
      return {
        rps: json.requests.average,
        total: json.requests.total,
        non2xx: json.non2xx,
        errors: json.errors,
        bytesPerSecond: json.throughput.average,
      };
    },
  );
}

/** One GET: status, headers, and the body as sent (still encoded) with its length. */
export function once(
  port: number,
  headers: Record<string, string>,
): Promise<{ status: number; headers: http.IncomingHttpHeaders; bytes: number; body: Buffer }> {
  return new Promise((resolve, reject) => {
    http
      .get({ host: '127.0.0.1', port, headers, agent: false }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => {
          const body = Buffer.concat(chunks);
          resolve({ status: res.statusCode!, headers: res.headers, bytes: body.length, body });
        });
      })
      .on('error', reject);
  });
}

/**
 * Ends an HTTP bench: its problems and those of this machine's setup
 * (no taskset, no wrk) as WARNING lines, then the report.
 */
export function reportHttp(title: string, rows: Row[], problems: string[]): void {
  if (!hasTaskset) problems.push('taskset is missing: server and load generator were not pinned');
  if (generator !== 'wrk')
    problems.push(
      'wrk is missing (apt-get install wrk): autocannon saturates before the fast servers do, so those rows measure it',
    );
  for (const problem of problems) console.log(`WARNING: ${problem}`);
  report(title, rows);
}
