/**
 * The demo's /metrics scraped by a real Prometheus (Debian's `prometheus`):
 * the demo runs as `npm start` runs it (a primary and two workers), one
 * scrape target answers for both workers, and the hit ratio Prometheus
 * computes from the scraped counters is the one the requests' own
 * Cache-Status headers imply.
 */
import { startExample, tempDir } from '../../helpers/examples.ts';
import { prometheusTest, startPrometheus } from '../../helpers/prometheus.ts';

const bannerLine = /^koa-buffer demo: http:\/\/127\.0\.0\.1:(\d+)\/ {2}\(2 workers: pid (\d+), (\d+)\)$/;
const job = 'koa-buffer-demo';

/** Each URL asked this many times, one request after another: a miss that builds it, then hits. */
const plan: ReadonlyArray<readonly [path: string, times: number]> = [
  ['/report?prometheus=a', 4],
  ['/report?prometheus=b', 2],
  ['/hello', 3],
];

prometheusTest(
  "Prometheus scrapes the demo's /metrics: one target for both workers, and the hit ratio the requests imply",
  async (t) => {
    const demo = await startExample(t, 'demo/server.ts', {
      env: { KOA_BUFFER_DEMO_DIR: tempDir(t, 'kb-demo-prometheus-') },
      urlLine: bannerLine,
    });
    const prometheus = await startPrometheus(t, job, [`127.0.0.1:${demo.port}`]);

    // One after another: concurrent first requests would wait for one build and count as collapsed.
    let hits = 0;
    let misses = 0;
    const workers = new Set<string>();
    for (const [path, times] of plan)
      for (let i = 0; i < times; i++) {
        const response = await demo.request(path);
        t.is(response.status, 200);
        workers.add(response.headers['x-worker'] ?? '');
        const status = response.headers['cache-status'] ?? '';
        if (/^koa-buffer; hit; ttl=\d+$/.test(status)) hits++;
        else if (status === 'koa-buffer; fwd=miss; stored') misses++;
        else t.fail(`${path}: Cache-Status ${status}, neither a fresh hit nor a stored miss`);
      }
    t.is(misses, plan.length, 'each URL was built once');
    t.is(hits + misses, 9);
    t.log(`${hits} hits, ${misses} misses, answered by workers ${[...workers].join(' and ')}`);

    // Prometheus scrapes every second: wait for a scrape that saw every request.
    const total = await prometheus.waitFor(`sum(koa_buffer_requests_total{job="${job}"})`, (n) => n === hits + misses);
    t.is(total, hits + misses, 'every request counted once, whichever worker took it');

    const ratio = await prometheus.query(
      `sum(koa_buffer_requests_total{job="${job}",outcome="hit"}) / sum(koa_buffer_requests_total{job="${job}"})`,
    );
    t.is(ratio.length, 1);
    t.true(
      Math.abs(ratio[0]!.value - hits / total) < 1e-9,
      `hit ratio ${ratio[0]!.value}, the requests imply ${hits}/${total}`,
    );

    const up = await prometheus.query(`up{job="${job}"}`);
    t.deepEqual(
      up.map((s) => [s.metric.instance, s.value]),
      [[`127.0.0.1:${demo.port}`, 1]],
      'one target, and its scrapes succeed (the exposition parses)',
    );
    t.deepEqual(
      (await prometheus.query(`koa_buffer_cluster_workers{job="${job}",answered="true"}`)).map((s) => s.value),
      [2],
      'both workers answered the scrape',
    );
    t.deepEqual(
      (await prometheus.query(`koa_buffer_builds_started_total{job="${job}"}`)).map((s) => s.value),
      [misses],
      'one build per miss',
    );
  },
);
