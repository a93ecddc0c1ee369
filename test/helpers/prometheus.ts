/**
 * A real Prometheus for tests: Debian's `prometheus` (or the binary named by
 * `KB_PROMETHEUS`), started on a free loopback port with its config file and
 * its storage in a temporary directory, scraping the targets a test names;
 * and its HTTP query API. In teardown it is stopped (SIGTERM, then SIGKILL)
 * before the directory is removed. Without the binary, the tests skip with
 * a title saying what to install.
 */
import { spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { join } from 'node:path';
import test, { type ExecutionContext, type Implementation } from 'ava';
import { freePort } from '../../support/redis-server.ts';
import { spawnProgram } from './children.ts';
import { tempDir } from './examples.ts';

/** The Prometheus binary: `KB_PROMETHEUS`, else `prometheus` on the PATH. */
export const prometheusBinary = process.env.KB_PROMETHEUS ?? 'prometheus';

/** Why the Prometheus tests cannot run here, or undefined when they can. */
export const prometheusSkipReason: string | undefined =
  spawnSync(prometheusBinary, ['--version']).error === undefined
    ? undefined
    : 'install prometheus (Debian package prometheus) or set KB_PROMETHEUS';

/** `test.serial`, or `test.skip` with the reason in the title when Prometheus is missing. */
export function prometheusTest(title: string, implementation: Implementation<[]>): void {
  if (prometheusSkipReason === undefined) test.serial(title, implementation);
  else test.skip(`${title} (skipped: ${prometheusSkipReason})`, implementation);
}

/** One sample of an instant vector: its labels and its value. */
export interface PromSample {
  metric: Record<string, string>;
  value: number;
}

/** A running Prometheus. */
export interface TestPrometheus {
  /** e.g. http://127.0.0.1:41235 */
  base: string;
  /** The instant vector `expr` evaluates to now (`/api/v1/query`). */
  query(expr: string): Promise<PromSample[]>;
  /**
   * Waits until `expr` gives exactly one sample and `accept` takes its value,
   * and returns that value.
   * @throws Error after `ms`, with the last answer
   */
  waitFor(expr: string, accept: (value: number) => boolean, ms?: number): Promise<number>;
}

/** GET on loopback, the body as text; rejects on a status other than 200. */
function get(port: number, path: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, timeout: 5000 }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () =>
        res.statusCode === 200 ? resolve(body) : reject(new Error(`GET ${path}: ${res.statusCode} ${body}`)),
      );
    });
    req.on('timeout', () => req.destroy(new Error(`GET ${path}: no answer in 5 s`)));
    req.on('error', reject);
    req.end();
  });
}

/**
 * Starts Prometheus scraping `targets` (`host:port`, path `/metrics`) every
 * second as job `job`, and waits until it is ready.
 */
export async function startPrometheus(t: ExecutionContext, job: string, targets: string[]): Promise<TestPrometheus> {
  const dir = tempDir(t, 'kb-prometheus-');
  const config = join(dir, 'prometheus.yml');
  // A one-second scrape, so the test waits seconds; the timeout may not exceed the interval.
  writeFileSync(
    config,
    `global:
  scrape_interval: 1s
  scrape_timeout: 1s
scrape_configs:
  - job_name: ${JSON.stringify(job)}
    static_configs:
      - targets: ${JSON.stringify(targets)}
`,
  );
  const port = await freePort();
  const child = spawnProgram(t, prometheusBinary, [
    `--config.file=${config}`,
    `--storage.tsdb.path=${join(dir, 'data')}`,
    `--web.listen-address=127.0.0.1:${port}`,
    '--log.level=warn',
  ]);
  // Registered after spawnProgram's SIGKILL and tempDir's removal, so it runs before both:
  // Prometheus closes its storage before the directory goes.
  t.teardown(async () => {
    if (!child.running) return;
    const late = new Promise<'late'>((resolve) => setTimeout(() => resolve('late'), 10_000).unref());
    if ((await Promise.race([child.kill('SIGTERM'), late])) === 'late') await child.kill('SIGKILL');
  });

  const deadline = Date.now() + 30_000;
  for (;;) {
    try {
      await get(port, '/-/ready');
      break;
    } catch (error) {
      if (!child.running) throw new Error(`prometheus exited before it was ready; stderr:\n${child.stderr}`);
      if (Date.now() > deadline) throw new Error(`prometheus not ready in 30 s (${String(error)}): ${child.stderr}`);
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }

  const query = async (expr: string): Promise<PromSample[]> => {
    const body = JSON.parse(await get(port, `/api/v1/query?query=${encodeURIComponent(expr)}`)) as {
      status: string;
      data: { resultType: string; result: Array<{ metric: Record<string, string>; value: [number, string] }> };
    };
    if (body.status !== 'success' || body.data.resultType !== 'vector')
      throw new Error(`query ${expr}: ${JSON.stringify(body)}`);
    return body.data.result.map((r) => ({ metric: r.metric, value: Number(r.value[1]) }));
  };

  const waitFor = async (expr: string, accept: (value: number) => boolean, ms = 30_000): Promise<number> => {
    const until = Date.now() + ms;
    for (;;) {
      const samples = await query(expr);
      if (samples.length === 1 && accept(samples[0]!.value)) return samples[0]!.value;
      if (Date.now() > until) throw new Error(`${expr} still gives ${JSON.stringify(samples)} after ${ms} ms`);
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  };

  return { base: `http://127.0.0.1:${port}`, query, waitFor };
}
