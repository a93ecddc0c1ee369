/**
 * A real Redis Cluster for tests: three masters (`redis-server
 * --cluster-enabled yes`) on free loopback ports, joined by `redis-cli
 * --cluster create`, without persistence, in a temp dir. Every process is
 * killed and the dir removed in the test's teardown. Without redis-server or
 * redis-cli, the tests skip with a title saying what to install.
 */
import { execFile, spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import test, { type ExecutionContext, type Implementation } from 'ava';
import { Cluster } from 'ioredis';
import { freePort, pingPort } from '../../support/redis-server.ts';

const run = promisify(execFile);

const missing = (program: string): boolean => spawnSync(program, ['--version']).error !== undefined;

/** Why cluster tests cannot run here, or undefined when they can. */
export const clusterSkipReason: string | undefined = missing('redis-server')
  ? 'install redis-server (Debian package redis-server)'
  : missing('redis-cli')
    ? 'install redis-cli (Debian package redis-tools, which redis-server depends on)'
    : undefined;

/** `test.serial`, or `test.skip` with the reason in the title when no cluster can be started. */
export function clusterTest(title: string, implementation: Implementation<[]>): void {
  // Serial: each test starts three servers of its own, and the machine is shared.
  if (clusterSkipReason === undefined) test.serial(title, implementation);
  else test.skip(`${title} (skipped: ${clusterSkipReason})`, implementation);
}

/** A running cluster. */
export interface TestCluster {
  /** The client ports of the three masters. */
  ports: number[];
  /** An ioredis Cluster on it, disconnected in teardown. */
  client(): Cluster;
}

/**
 * Starts a 3-master cluster and waits until every node says
 * `cluster_state:ok`; stops it in `t.teardown`.
 */
export async function useCluster(t: ExecutionContext): Promise<TestCluster> {
  if (clusterSkipReason !== undefined) throw new Error(clusterSkipReason);
  const dir = mkdtempSync(join(tmpdir(), 'kb-cluster-'));
  const children: ChildProcess[] = [];
  t.teardown(async () => {
    await Promise.all(children.map(kill));
    rmSync(dir, { recursive: true, force: true });
  });
  const ports: number[] = [];
  for (let node = 0; node < 3; node++) {
    const { port, child } = await startNode(dir, ports);
    ports.push(port);
    children.push(child);
  }
  await run('redis-cli', [
    '--cluster',
    'create',
    ...ports.map((port) => `127.0.0.1:${port}`),
    '--cluster-replicas',
    '0',
    '--cluster-yes',
  ]);
  await untilStateOk(ports);
  return {
    ports,
    client() {
      const cluster = new Cluster(
        ports.map((port) => ({ host: '127.0.0.1', port })),
        { redisOptions: { connectTimeout: 2000 } },
      );
      cluster.on('error', () => undefined); // failures reach the test through its commands
      t.teardown(() => cluster.disconnect());
      return cluster;
    },
  };
}

/**
 * One cluster node. The cluster bus port is given too (by default it is the
 * client port + 10000, which a free port near 65535 does not have). A port
 * taken between the probe and the bind: try again.
 */
async function startNode(dir: string, taken: number[]): Promise<{ port: number; child: ChildProcess }> {
  for (let attempt = 0; ; attempt++) {
    const port = await freePort();
    const bus = await freePort();
    if (port === bus || taken.includes(port) || taken.includes(bus)) continue;
    const child = spawn(
      'redis-server',
      [
        '--port',
        String(port),
        '--cluster-port',
        String(bus),
        '--bind',
        '127.0.0.1',
        '--cluster-enabled',
        'yes',
        '--cluster-config-file',
        join(dir, `nodes-${port}.conf`),
        '--save',
        '',
        '--appendonly',
        'no',
        '--dir',
        dir,
        '--protected-mode',
        'no',
        '--loglevel',
        'warning',
      ],
      { stdio: ['ignore', 'ignore', 'pipe'] },
    );
    let stderr = '';
    child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
    const deadline = Date.now() + 10_000;
    while (!(await pingPort(port))) {
      if (child.exitCode !== null || child.signalCode !== null || Date.now() > deadline) break;
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    if (await pingPort(port)) return { port, child };
    await kill(child);
    if (attempt >= 4) throw new Error(`redis-server did not start on port ${port}: ${stderr}`);
  }
}

/** Waits until every node's `CLUSTER INFO` says the cluster is ok; fails after 20 s. */
async function untilStateOk(ports: number[]): Promise<void> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const states = await Promise.all(
      ports.map(async (port) => {
        const { stdout } = await run('redis-cli', ['-p', String(port), 'cluster', 'info']);
        return /^cluster_state:(\w+)/m.exec(stdout)?.[1];
      }),
    );
    if (states.every((state) => state === 'ok')) return;
    if (Date.now() > deadline) throw new Error(`the cluster did not come up: states ${states.join(', ')}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

async function kill(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGKILL');
  await exited;
}
