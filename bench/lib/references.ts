/**
 * The reference rows of the HTTP benches: what a user could put in place of
 * koa-buffer's cache hit, measured beside it so the gap is in every report.
 *
 * - raw node:http sending given bytes: the most a Node process can do with
 *   a page already compressed, no framework at all;
 * - Varnish (Debian package `varnish`) on a free loopback port, pinned to
 *   core 0 like every server, with a VCL written here: it fetches the
 *   identity page once from an origin, gzips it (`do_gzip`) and answers
 *   every later request from memory. Varnish 7.1 makes no br: its rows are
 *   gzip hits.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { once, pinned } from './load.ts';

/**
 * A raw node:http listener answering every request with `br` or `gzip`
 * bytes by its Accept-Encoding (br first), head written in one call.
 */
export function rawPrecompressed(bytes: { br: Buffer; gzip: Buffer }): http.RequestListener {
  const head = (coding: 'br' | 'gzip'): string[] => [
    'content-type',
    'text/html; charset=utf-8',
    'content-encoding',
    coding,
    'vary',
    'Accept-Encoding',
    'content-length',
    String(bytes[coding].length),
  ];
  const heads = { br: head('br'), gzip: head('gzip') };
  return (req, res) => {
    const coding = (req.headers['accept-encoding'] ?? '').includes('br') ? 'br' : 'gzip';
    res.writeHead(200, heads[coding]);
    res.end(bytes[coding]);
  };
}

/** True when `varnishd` can be run here. */
export const hasVarnish = spawnSync('varnishd', ['-V'], { stdio: 'ignore' }).status === 0;

/** A running varnishd, and how to stop it (and remove its working directory). */
export interface Varnish {
  readonly port: number;
  stop(): void;
}

async function freePort(): Promise<number> {
  const server = http.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/**
 * Starts varnishd in front of `originPort`, pinned to core 0, and resolves
 * once it answers a gzip hit.
 *
 * @throws Error when it does not answer within 20 s (its output is in the message)
 */
export async function startVarnish(originPort: number): Promise<Varnish> {
  const dir = mkdtempSync(join(tmpdir(), 'kb-varnish-'));
  // varnishd started as root reads the VCL as its own unprivileged user.
  chmodSync(dir, 0o755);
  const vcl = join(dir, 'bench.vcl');
  writeFileSync(
    vcl,
    `vcl 4.1;
backend origin { .host = "127.0.0.1"; .port = "${originPort}"; }
sub vcl_recv { unset req.http.cookie; }
sub vcl_backend_response { set beresp.ttl = 1h; set beresp.do_gzip = true; }
`,
    { mode: 0o644 },
  );
  const port = await freePort();
  const args = ['varnishd', '-F', '-n', join(dir, 'work'), '-a', `127.0.0.1:${port}`, '-f', vcl, '-s', 'malloc,256m'];
  const [cmd, rest] = pinned(0, args);
  let output = '';
  const child: ChildProcess = spawn(cmd, rest, { stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  child.stdout!.on('data', (chunk) => (output += chunk));
  child.stderr!.on('data', (chunk) => (output += chunk));
  const stop = (): void => {
    try {
      process.kill(-child.pid!, 'SIGTERM');
    } catch {
      // already gone
    }
    rmSync(dir, { recursive: true, force: true });
  };
  for (let waited = 0; waited < 20_000; waited += 200) {
    const answer = await once(port, { 'accept-encoding': 'gzip' }).catch(() => undefined);
    if (answer?.status === 200 && answer.headers['content-encoding'] === 'gzip') return { port, stop };
    await sleep(200);
  }
  stop();
  throw new Error(`varnishd did not answer on port ${port}: ${output.slice(-500)}`);
}
