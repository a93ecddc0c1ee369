/**
 * The demo site (`npm start`) as a user meets it: started as a real process
 * (a cluster primary and two workers) on a free port with a fresh data
 * directory, every page checked over HTTP, then stopped by SIGTERM (and, in a
 * second instance, by Ctrl-C) with nothing left running.
 */
import { createHash } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import test from 'ava';
import { capabilities } from '../../../examples/demo/capabilities.ts';
import { escapeHtml } from '../../../examples/demo/pages/layout.ts';
import { LineChild } from '../../helpers/children.ts';
import { alive, example, exampleEnv, repoRoot, startExample, tempDir, waitGone } from '../../helpers/examples.ts';
import { decode, rawRequest, type RawResponse } from '../../helpers/serve.ts';

const server = example('demo/server.ts');
const bannerLine = /^koa-buffer demo: http:\/\/127\.0\.0\.1:(\d+)\/ {2}\(2 workers: pid (\d+), (\d+)\)$/;
const md5 = (bytes: Buffer): string => createHash('md5').update(bytes).digest('hex');

interface Demo {
  child: LineChild;
  dataDir: string;
  port: number;
  base: string;
  workers: number[];
  /** Every X-Worker seen, to check that both workers served. */
  servedBy: Set<string>;
}

let demo: Demo;

/** A request to the shared demo; remembers which worker answered. */
async function get(path: string, headers: Record<string, string> = {}): Promise<RawResponse> {
  const response = await rawRequest(demo.port, path, { headers });
  if (response.headers['x-worker']) demo.servedBy.add(response.headers['x-worker']);
  return response;
}

const text = (response: RawResponse): string => decode(response).toString('utf8');
const lockFiles = (): string[] => readdirSync(join(demo.dataDir, 'locks'));

// One demo for the serial tests below (starting one costs three Node processes);
// it is killed and its directory removed after them, whatever happened.
test.before(async () => {
  const dataDir = mkdtempSync(join(tmpdir(), 'kb-demo-'));
  const child = new LineChild(
    process.execPath,
    ['--import', 'tsx/esm', server],
    { env: exampleEnv({ KOA_BUFFER_DEMO_DIR: dataDir }), cwd: repoRoot, group: true },
    30_000,
  );
  demo = { child, dataDir, port: 0, base: '', workers: [], servedBy: new Set() };
  const match = bannerLine.exec(await child.waitForLine((line) => bannerLine.test(line), 'the demo banner'))!;
  demo.port = Number(match[1]);
  demo.base = `http://127.0.0.1:${demo.port}`;
  demo.workers = [Number(match[2]), Number(match[3])];
});

test.after.always(async () => {
  if (!demo) return;
  demo.child.killGroup();
  await demo.child.kill('SIGKILL');
  rmSync(demo.dataDir, { recursive: true, force: true });
});

test.serial('on start it prints where it serves, where the data is, and one curl line per capability', async (t) => {
  await demo.child.waitForLine((line) => line.trim() === capabilities.at(-1)!.curl(demo.base), 'the last curl line');
  const lines = demo.child.lines.map((line) => line.trim());
  t.true(lines.includes(`data directory: ${demo.dataDir}`), 'the data directory is printed');
  t.true(
    lines.includes(
      `metrics of both workers, summed: ${demo.base}/metrics (Prometheus text), ${demo.base}/api/stats (JSON)`,
    ),
    'where /metrics is served is printed',
  );
  for (const capability of capabilities)
    t.true(lines.includes(capability.curl(demo.base)), `a curl line for ${capability.name}`);
  t.is(
    lines.filter((line) => /^(curl|seq) /.test(line)).length,
    capabilities.length,
    'one curl line per capability, no more',
  );
  t.is(statSync(join(demo.dataDir, 'locks')).mode & 0o777, 0o700, 'the lock directory is private to the user');
  t.true(statSync(join(demo.dataDir, 'catalogue.csv')).size > 100_000, 'the file to download is prepared');
});

test.serial(
  'the index explains each page and the headers to look at, and is itself squashed and compressed',
  async (t) => {
    const response = await get('/', { 'Accept-Encoding': 'gzip' });
    t.is(response.status, 200);
    t.is(response.headers['content-encoding'], 'gzip', 'compressed for a gzip client');
    const html = decode(response);
    t.is(
      response.headers.etag,
      `"${md5(html)}-gzip"`,
      'ETag: the MD5 of the uncompressed page, suffixed by the coding',
    );
    const page = html.toString('utf8');
    t.regex(page, /^<!doctype html><html lang="en"><head>/, 'the indentation between tags is gone');
    t.notRegex(page, /\n[ \t]/, 'no line of the sent page starts with white space');
    t.false(page.includes('<!--'), 'comments are removed');
    for (const path of ['/article', '/api/products', '/report', '/hello', '/download'])
      t.true(page.includes(`href="${path}"`), `links to ${path}`);
    for (const header of [
      'X-Cache',
      'Cache-Status',
      'ETag',
      'Content-Encoding',
      'Vary',
      'Last-Modified',
      'Cache-Control',
    ])
      t.true(page.includes(`<code>${header}</code>`), `explains ${header}`);
    for (const capability of capabilities) {
      t.true(page.includes(escapeHtml(capability.explains)), `explains ${capability.name}`);
      t.true(page.includes(escapeHtml(capability.curl(demo.base))), `shows the curl line for ${capability.name}`);
    }
    const css = await get('/style.css', { 'Accept-Encoding': 'br' });
    t.is(css.headers['content-type'], 'text/css; charset=utf-8');
    t.is(css.headers['content-encoding'], 'br', 'the style sheet is compressed too');
  },
);

test.serial(
  '/article is squashed (pre kept, links shortened), compressed per Accept-Encoding, and answers 304',
  async (t) => {
    const plain = await get('/article');
    t.is(plain.headers['content-encoding'], undefined, 'no Accept-Encoding: sent as it is');
    t.true(plain.headers.vary?.includes('Accept-Encoding'), 'Vary: Accept-Encoding');
    t.truthy(plain.headers['last-modified'], 'Last-Modified is set');
    t.is(plain.headers['cache-control'], 'no-cache', 'with Cache-Control: no-cache, so browsers revalidate');
    t.is(plain.headers.etag, `"${md5(plain.body)}"`, 'ETag: the MD5 of the squashed page');
    const squashed = text(plain);

    const off = await get('/article?buffer=off', { 'Accept-Encoding': 'br' });
    t.is(off.headers['content-encoding'], undefined, 'ctx.state.buffer = 0: not compressed');
    t.is(off.headers.etag, undefined, 'ctx.state.buffer = 0: no ETag');
    const written = text(off);
    t.regex(written, /\n {6}<article>\n {8}<header>/, 'the template wrote an indented page');
    t.true(
      squashed.length < written.length * 0.9,
      `squashing saves more than 10% (${written.length} → ${squashed.length} bytes)`,
    );
    t.true(written.includes('<!--') && !squashed.includes('<!--'), 'comments are removed');
    t.is(
      /<pre>[\s\S]*?<\/pre>/.exec(squashed)?.[0],
      /<pre>[\s\S]*?<\/pre>/.exec(written)?.[0],
      '<pre> is kept byte for byte',
    );
    t.true(
      written.includes(`href="http://127.0.0.1:${demo.port}/hello"`) && squashed.includes('href="/hello"'),
      'the link to this site is made root-relative',
    );
    t.true(squashed.includes('href="/"'), 'links back to the index');

    for (const coding of ['br', 'zstd', 'gzip']) {
      const response = await get('/article', { 'Accept-Encoding': coding });
      t.is(response.headers['content-encoding'], coding, `${coding} for a ${coding} client`);
      t.is(Number(response.headers['content-length']), response.body.length, 'Content-Length is the compressed length');
      t.true(
        response.body.length < plain.body.length * 0.6,
        `${coding} saves more than 40% (${plain.body.length} → ${response.body.length} bytes)`,
      );
      t.is(text(response), squashed, `the ${coding} body decodes to the squashed page`);
      t.is(response.headers.etag, `"${md5(plain.body)}-${coding}"`, `the ${coding} ETag is suffixed by its coding`);
    }
    const preferred = await get('/article', { 'Accept-Encoding': 'gzip;q=1, br;q=0.5' });
    t.is(preferred.headers['content-encoding'], 'gzip', "the client's q-values decide");

    const br = await get('/article', { 'Accept-Encoding': 'br' });
    const revalidated = await get('/article', { 'Accept-Encoding': 'br', 'If-None-Match': br.headers.etag! });
    t.is(revalidated.status, 304, 'If-None-Match with the ETag: 304');
    t.is(revalidated.body.length, 0, 'a 304 has no body');
    t.is(revalidated.headers.etag, br.headers.etag, 'a 304 carries the ETag');
    const byDate = await get('/article', { 'If-Modified-Since': plain.headers['last-modified']! });
    t.is(
      byDate.status,
      200,
      'If-Modified-Since alone does not validate a page that has an ETag (trustLastModified is off)',
    );
    const otherCoding = await get('/article', { 'Accept-Encoding': 'gzip', 'If-None-Match': br.headers.etag! });
    t.is(otherCoding.status, 200, 'the br ETag does not validate the gzip representation');
  },
);

test.serial('/api/products sends its plain object as compressed JSON with an ETag', async (t) => {
  const response = await get('/api/products', { 'Accept-Encoding': 'zstd' });
  t.is(response.status, 200);
  t.is(response.headers['content-type'], 'application/json; charset=utf-8');
  t.is(response.headers['content-encoding'], 'zstd');
  const json = decode(response);
  t.is(response.headers.etag, `"${md5(json)}-zstd"`);
  const body = JSON.parse(json.toString('utf8')) as { count: number; products: Array<{ id: number; name: string }> };
  t.is(body.count, 40);
  t.is(body.products.length, 40);
  t.deepEqual(body.products[0], { id: 1, name: 'Smoky Blend', category: 'tea', priceCents: 450, inStock: true });
});

test.serial('/report: six concurrent first requests build it once for both workers, then it is a hit', async (t) => {
  const started = Date.now();
  const first = await Promise.all(
    Array.from({ length: 6 }, (_, i) => get('/report', i % 2 === 0 ? { 'Accept-Encoding': 'br' } : {})),
  );
  const took = Date.now() - started;
  t.true(
    first.every((r) => r.status === 200),
    `every request is answered 200 (${first.map((r) => r.status).join(' ')})`,
  );
  const caches = first.map((r) => r.headers['x-cache']);
  t.is(caches.filter((c) => c === 'MISS').length, 1, `one request builds (X-Cache: ${caches.join(' ')})`);
  t.is(caches.filter((c) => c === 'HIT').length, 5, 'the five others are answered from its build');
  t.is(first.find((r) => r.headers['x-cache'] === 'MISS')!.headers['cache-status'], 'koa-buffer; fwd=miss; stored');
  t.true(took >= 950, `the build takes a second (${took} ms)`);
  const pages = new Set(first.map(text));
  t.is(pages.size, 1, 'every request got the same page');
  const page = [...pages][0]!;
  t.regex(page, /id="build-number">1</, 'the page says it is build number 1');
  const log = readFileSync(join(demo.dataDir, 'report-builds.log'), 'utf8').trim().split('\n');
  t.is(log.length, 1, `one line in the build log: ${log.join(' | ')}`);

  const again = Date.now();
  const hit = await get('/report', { 'Accept-Encoding': 'gzip' });
  t.is(hit.headers['x-cache'], 'HIT');
  t.regex(
    hit.headers['cache-status'] ?? '',
    /^koa-buffer; hit; ttl=(2\d|30)$/,
    'Cache-Status: a hit with the seconds left of 30',
  );
  t.is(hit.headers['content-encoding'], 'gzip', 'a hit is compressed for its client');
  t.is(text(hit), page, 'the hit is the page that was built');
  t.true(Date.now() - again < 900, 'a hit does not wait for a build');
  t.is(readFileSync(join(demo.dataDir, 'report-builds.log'), 'utf8').trim().split('\n').length, 1, 'still one build');
});

test.serial(
  '/hello is a page per language, each its own cache entry (varyBy cookie and accept-language)',
  async (t) => {
    const fr = await get('/hello', { 'Accept-Language': 'fr-CH, fr;q=0.9, en;q=0.5' });
    t.is(fr.headers['x-cache'], 'MISS');
    t.is(fr.headers['content-language'], 'fr');
    t.deepEqual(
      fr.headers.vary?.split(/,\s*/).sort(),
      ['Accept-Encoding', 'Accept-Language', 'Cookie'],
      'Vary names the headers the page depends on',
    );
    t.true(text(fr).includes('<h1 lang="fr">Bonjour !</h1>'));

    const frAgain = await get('/hello', { 'Accept-Language': 'fr-CH, fr;q=0.9, en;q=0.5' });
    t.is(frAgain.headers['x-cache'], 'HIT', 'the same language again: a hit');
    t.is(text(frAgain), text(fr), 'the same page');

    const de = await get('/hello', { 'Accept-Language': 'de' });
    t.is(de.headers['x-cache'], 'MISS', 'another language: its own entry');
    t.true(text(de).includes('<h1 lang="de">Hallo!</h1>'));

    const es = await get('/hello', { 'Accept-Language': 'fr', Cookie: 'lang=es' });
    t.is(es.headers['x-cache'], 'MISS', 'a cookie: its own entry');
    t.true(text(es).includes('<h1 lang="es">¡Hola!</h1>'), 'the cookie beats Accept-Language, and UTF-8 survives');

    const ja = await get('/hello', { 'Accept-Language': 'ja', 'Accept-Encoding': 'br' });
    t.true(text(ja).includes('こんにちは！'), 'non-ASCII text survives squashing and compression');

    const choose = await get('/hello/choose?lang=ja');
    t.is(choose.status, 302);
    t.is(choose.headers.location, '/hello');
    t.regex(choose.headers['set-cookie'] ?? '', /^lang=ja; path=\/; samesite=lax; httponly$/);
  },
);

test.serial('/download streams the file compressed as it is read, with a weak file ETag and a 304', async (t) => {
  const response = await get('/download', { 'Accept-Encoding': 'br, gzip' });
  t.is(response.status, 200);
  t.is(response.headers['content-encoding'], 'br', 'a CSV stream is compressed as a stream');
  t.regex(response.headers.etag ?? '', /^W\/"[0-9a-f]+-[0-9a-f]+"$/, "koa-etag's weak tag for a file");
  t.is(response.headers['transfer-encoding'], 'chunked', 'sent as it is read');
  t.is(response.headers['content-disposition'], 'attachment; filename="catalogue.csv"');
  t.true(decode(response).equals(readFileSync(join(demo.dataDir, 'catalogue.csv'))), 'the bytes of the file');
  const again = await get('/download', { 'Accept-Encoding': 'br, gzip', 'If-None-Match': response.headers.etag! });
  t.is(again.status, 304);
});

test.serial('both workers answer requests', (t) => {
  t.deepEqual(
    [...demo.servedBy].map(Number).sort(),
    [...demo.workers].sort(),
    'X-Worker named each of the two printed worker pids',
  );
});

/** The value of one sample line of Prometheus text, e.g. `koa_buffer_requests_total{outcome="hit"}`. */
function sample(metrics: string, line: string): number {
  const found = new RegExp(`^${line.replace(/[{}"]/g, '\\$&')} (\\S+)$`, 'm').exec(metrics);
  return found ? Number(found[1]) : NaN;
}

interface Counters {
  workers: number;
  answered: number;
  requests: Record<string, number>;
  hitRatio: number | null;
  builds: { started: number };
  codings: Array<{ coding: string; responses: number; bytesIn: number; bytesOut: number; saved: number }>;
  budgets: Array<{ name: string; bytes: number; limit: number; full: number | null }>;
}

test.serial(
  '/metrics and /api/stats answer for both workers, whichever takes the request, and are not counted',
  async (t) => {
    const answeredBy = new Set<string>();
    const scrape = async (): Promise<string> => {
      const response = await get('/metrics');
      answeredBy.add(response.headers['x-worker']!);
      t.is(response.status, 200);
      t.is(response.headers['content-type'], 'text/plain; version=0.0.4; charset=utf-8');
      t.is(response.headers['cache-control'], 'no-store');
      return text(response);
    };
    const stats = async (): Promise<Counters> => {
      const response = await get('/api/stats');
      answeredBy.add(response.headers['x-worker']!);
      t.is(response.status, 200);
      t.is(response.headers['content-type'], 'application/json; charset=utf-8');
      return JSON.parse(text(response)) as Counters;
    };

    const seen: Array<{ metrics: string; counters: Counters }> = [];
    // Connections go round-robin to the workers: a few pairs reach both.
    for (let i = 0; i < 4; i++) seen.push({ metrics: await scrape(), counters: await stats() });
    t.is(answeredBy.size, 2, 'both workers answered');
    const first = seen[0]!;
    for (const { metrics, counters } of seen) {
      t.is(sample(metrics, 'koa_buffer_cluster_workers{answered="true"}'), 2, 'every scrape has both workers');
      t.is(counters.answered, 2);
      t.is(counters.workers, 2);
      t.deepEqual(counters.requests, first.counters.requests, 'scrapes and polls are not requests through the cache');
      t.deepEqual(counters.codings, first.counters.codings, 'nor responses counted by coding');
    }

    const { metrics, counters } = first;
    const outcome = (name: string): number => sample(metrics, `koa_buffer_requests_total{outcome="${name}"}`);
    t.is(counters.requests.hit, outcome('hit'));
    t.is(counters.requests.miss, outcome('miss'));
    t.is(counters.requests.collapsed, outcome('collapsed'));
    t.true(counters.requests.miss! >= 5, `the earlier tests' builds are counted (${counters.requests.miss} misses)`);
    t.is(
      counters.hitRatio,
      counters.requests.hit! / counters.requests.total!,
      'the hit ratio is hits over every outcome',
    );
    t.is(counters.builds.started, sample(metrics, 'koa_buffer_builds_started_total'));
    const br = counters.codings.find((c) => c.coding === 'br')!;
    t.is(br.saved, br.bytesIn - br.bytesOut);
    t.true(br.saved > 0, 'br saved bytes');
    const memo = counters.budgets.find((b) => b.name === 'memo')!;
    t.is(memo.limit, sample(metrics, 'koa_buffer_budget_limit_bytes{budget="memo"}'), 'both workers’ limits added up');
    t.is(memo.full, memo.bytes / memo.limit);

    // A hit while the report's 30 seconds last; a slow machine may have outlived them: then a miss.
    const report = await get('/report');
    const outcomeOf = report.headers['x-cache'] === 'HIT' ? 'hit' : 'miss';
    const after = await stats();
    t.is(
      after.requests[outcomeOf],
      counters.requests[outcomeOf]! + 1,
      `a request on either worker is counted in the sum (X-Cache: ${report.headers['x-cache']})`,
    );
    t.is(after.requests.total, counters.requests.total! + 1);
  },
);

test.serial('SIGTERM lets the request under way finish, stops both workers, and the primary exits 0', async (t) => {
  const before = new Set(lockFiles());
  const inFlight = get('/report?during=shutdown');
  // The builder takes its lock before it runs the action: a new lock file means the request is being served.
  const deadline = Date.now() + 10_000;
  while (lockFiles().every((name) => before.has(name)) && Date.now() < deadline)
    await new Promise((resolve) => setTimeout(resolve, 10));
  t.true(
    lockFiles().some((name) => !before.has(name)),
    'the request reached a worker',
  );
  demo.child.process.kill('SIGTERM');

  const response = await inFlight;
  t.is(response.status, 200, 'the request under way was answered');
  t.true(text(response).includes('Monthly report'));
  t.deepEqual(await demo.child.exited, { code: 0, signal: null }, `the primary exits 0; stderr: ${demo.child.stderr}`);
  t.true(demo.child.lines.includes('koa-buffer demo: stopped'));
  t.deepEqual(await waitGone(demo.workers), [], 'no worker is left running');
  await t.throwsAsync(rawRequest(demo.port, '/'), undefined, 'nothing listens any more');
});

test('Ctrl-C (SIGINT to the whole process group) stops the demo cleanly', async (t) => {
  const dataDir = tempDir(t, 'kb-demo-int-');
  const running = await startExample(t, 'demo/server.ts', {
    env: { KOA_BUFFER_DEMO_DIR: dataDir },
    urlLine: bannerLine,
  });
  const workers = bannerLine
    .exec(running.child.lines.find((line) => bannerLine.test(line))!)!
    .slice(2)
    .map(Number);
  t.is((await running.request('/')).status, 200);
  process.kill(-running.child.pid, 'SIGINT'); // what a terminal does on Ctrl-C
  t.deepEqual(
    await running.child.exited,
    { code: 0, signal: null },
    `the primary exits 0; stderr: ${running.child.stderr}`,
  );
  t.deepEqual(await waitGone(workers), [], 'no worker is left running');
  t.false(workers.some(alive));
});
