/**
 * Load generation shared by the HTTP benches: autocannon in its own process
 * pinned to core 1 (the server runs pinned to core 0), and a single request
 * that reports status, headers and bytes on the wire.
 */
import { spawn, spawnSync } from 'node:child_process';
import http from 'node:http';
import { fileURLToPath } from 'node:url';

const autocannonBin = fileURLToPath(new URL('../node_modules/autocannon/autocannon.js', import.meta.url));

/** True when `taskset` can pin processes to cores here. */
export const hasTaskset = spawnSync('taskset', ['-c', '0', 'true']).status === 0;

/** `args` as a command pinned to `core` when taskset is there: [command, arguments]. */
export const pinned = (core: number, args: string[]): [string, string[]] =>
  hasTaskset ? ['taskset', ['-c', String(core), ...args]] : [args[0]!, args.slice(1)];

/** What one autocannon run reports. */
export interface LoadResult {
  rps: number;
  total: number;
  non2xx: number;
  errors: number;
}

/** One autocannon run of `seconds` against 127.0.0.1:port with `connections` connections. */
export function load(port: number, headers: Record<string, string>, seconds: number, connections = 50): Promise<LoadResult> {
  const h = Object.entries(headers).flatMap(([k, v]) => ['-H', `${k}=${v}`]);
  const [cmd, args] = pinned(1, [process.execPath, autocannonBin, '-c', String(connections), '-d', String(seconds), '-j', ...h, `http://127.0.0.1:${port}/`]);
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'ignore'] });
    let out = '';
    child.stdout.on('data', (chunk) => (out += chunk));
    child.on('error', reject);
    child.on('exit', () => {
      try {
        const json = JSON.parse(out) as { requests: { average: number; total: number }; non2xx: number; errors: number };
        resolve({ rps: json.requests.average, total: json.requests.total, non2xx: json.non2xx, errors: json.errors });
      } catch (error) {
        reject(new Error(`autocannon output did not parse: ${out.slice(0, 200)} (${(error as Error).message})`));
      }
    });
  });
}

/** One GET: status, headers and the bytes of the body as sent (still encoded). */
export function once(port: number, headers: Record<string, string>): Promise<{ status: number; headers: http.IncomingHttpHeaders; bytes: number }> {
  return new Promise((resolve, reject) => {
    http.get({ host: '127.0.0.1', port, headers, agent: false }, (res) => {
      let bytes = 0;
      res.on('data', (chunk: Buffer) => (bytes += chunk.length));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, bytes }));
    }).on('error', reject);
  });
}
