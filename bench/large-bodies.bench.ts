/**
 * Large bodies and the event loop: koa-buffer's own longest block of the
 * server's event loop while one large page is answered, against a bare Koa
 * server sending the same body (the target: koa-buffer's part, ours less
 * bare, at most 5 ms).
 *
 * Scenarios, each a request at a time, a new body each time (so nothing is
 * answered from the representation memo):
 * - squash: 10 MiB HTML pages squashed (`optimiseContent: 1`), identity;
 * - dcz: 4 MiB pages (the largest a dictionary rule allows) sent as dcz
 *   against a 4 MiB dictionary, each in the rule's scope and so offered as
 *   a dictionary in turn;
 * - cached: 7 MiB pages (under the default `cacheMaxSize`) squashed and
 *   stored in the in-process cache (`cache: true`), each a miss;
 * - 100 MiB: one 100 MiB page squashed and hashed for its ETag, asked for
 *   three times (the second sighting teaches the memo; the third is
 *   recognised by it), as bytes and as a string.
 *
 * Method: each server runs in a child process of its own (both load the
 * same bodies); around each request the server reads its loop's longest
 * block of its own (support/loop-blocks.ts: CPU time the loop spent between
 * two turns of a 1 ms timer, not the time the OS gave the core to others on
 * this shared machine) and the event-loop delay's max.
 *
 * Reading the string rows: the application's own `ctx.body = string` makes
 * Koa measure the string's UTF-8 length (about 15 ms for 100 MiB here), and
 * bare Koa then converts it again in `res.end`; that is in both servers'
 * blocks, which is why koa-buffer's part is the difference. What is left
 * above 5 ms in single requests elsewhere is V8's mark-compact pause
 * (`--trace-gc`: 4–16 ms on this loaded machine) after a large allocation.
 *
 * Run: node --import tsx bench/large-bodies.bench.ts [--quick]
 *      KOA_BUFFER_NATIVE=0 for the TypeScript twin's slices
 */
import { createHash } from 'node:crypto';
import http from 'node:http';
import { fileURLToPath } from 'node:url';
import { compare, isMain, median, quick, sample, type Row } from './lib/harness.ts';
import { htmlPage } from '../support/pages.ts';
import { builtPackage, ensureBuilt } from './lib/package.ts';
import { report } from './lib/harness.ts';
import { hasSchedstat, loopWatchCommands } from '../support/loop-blocks.ts';
import { serveToDriver, startServerProcess, type ServerProcess } from './lib/server-process.ts';

const self = fileURLToPath(import.meta.url);
const reps = quick ? 3 : 7;
const MiB = 1024 * 1024;

/** The bodies, the same in both servers: generated from fixed seeds. */
function bodies(): { page10: Buffer; page4: Buffer; dictionary: Buffer; page100: Buffer; string100: string } {
  const page10 = Buffer.from(htmlPage(10 * MiB - 64, 3));
  const dictionary = Buffer.from(htmlPage(4 * MiB - 64 * 1024, 5));
  // The next version of the dictionary page: the same text with a change at its middle.
  const half = dictionary.length >> 1;
  const page4 = Buffer.concat([dictionary.subarray(0, half), Buffer.from('<p>changed</p>'), dictionary.subarray(half)]);
  const string100 = htmlPage(100 * MiB, 9);
  return { page10, page4, dictionary, page100: Buffer.from(string100), string100 };
}

/** A body made unique by a short tail (a copy of `base`: the same cost in both servers). */
const unique = (base: Buffer, n: string): Buffer => Buffer.concat([base, Buffer.from(`<!-- ${n} -->`)]);

// --- server side (a child process) -------------------------------------------

async function serve(mode: string): Promise<void> {
  const { default: Koa } = await import('koa');
  const app = new Koa();
  app.silent = true;
  const b = bodies();
  if (mode === 'koa-buffer') {
    const { buffer } = await builtPackage();
    const plain = buffer({
      optimiseContent: 1,
      lastModified: false,
      dictionaries: [{ match: '/dcz/*', maxSize: '4mb' }],
    });
    const cached = buffer({ optimiseContent: 1, lastModified: false, cache: true, cacheMemoryBytes: 64 * MiB });
    app.use((ctx, next) => (ctx.path === '/cached' ? cached(ctx, next) : plain(ctx, next)));
  }
  app.use(async (ctx) => {
    // The cached route asks the cache first (koa-buffer only): each request is a miss, built and stored.
    const isCached = (ctx as { bufferIsCached?: () => Promise<boolean> }).bufferIsCached;
    if (ctx.path === '/cached' && isCached && (await isCached.call(ctx))) return;
    ctx.type = 'html';
    const n = String(ctx.query.n ?? '0');
    if (ctx.path === '/squash') ctx.body = unique(b.page10, n);
    else if (ctx.path === '/cached') ctx.body = unique(b.page10.subarray(0, 7 * MiB), n);
    else if (ctx.path === '/dcz/base') ctx.body = b.dictionary;
    else if (ctx.path === '/dcz/page') ctx.body = unique(b.page4.subarray(0, 4 * MiB - 256), n);
    else if (ctx.path === '/big') ctx.body = b.page100;
    else if (ctx.path === '/big-string') ctx.body = b.string100;
    else ctx.status = 404;
  });
  serveToDriver(app.callback() as http.RequestListener, loopWatchCommands());
}

// --- driver side ---------------------------------------------------------------

const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });

/** One request, read to its end: status, content coding and body (kept only when asked). */
function request(
  port: number,
  path: string,
  headers: Record<string, string>,
  keep = false,
): Promise<{ status: number; encoding: string; body: Buffer; cacheStatus: string }> {
  return new Promise((resolve, reject) => {
    http
      .request({ host: '127.0.0.1', port, path, headers, agent }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => keep && chunks.push(chunk));
        res.on('end', () =>
          resolve({
            status: res.statusCode!,
            encoding: String(res.headers['content-encoding'] ?? ''),
            body: Buffer.concat(chunks),
            cacheStatus: String(res.headers['cache-status'] ?? ''),
          }),
        );
      })
      .on('error', reject)
      .end();
  });
}

/** The server's longest own block and delay max over one request. */
async function watched(
  server: ServerProcess,
  path: string,
  headers: Record<string, string>,
): Promise<{ busy: number; max: number; encoding: string; cacheStatus: string }> {
  await server.ask('watch-start');
  const { encoding, cacheStatus } = await request(server.port, path, headers);
  const { busy, max } = await server.ask('watch-stop');
  return { busy: busy!, max: max!, encoding, cacheStatus };
}

interface Scenario {
  name: string;
  paths: (rep: number) => string[];
  headers: Record<string, string>;
  /** The content coding koa-buffer must answer with, to be sure the scenario measures what it says. */
  coding?: string;
  /** The Cache-Status koa-buffer must answer with. */
  cacheStatus?: string;
}

async function run(server: ServerProcess, scenario: Scenario, problems: string[]): Promise<number[][]> {
  const blocks: number[] = [];
  const delays: number[] = [];
  for (let rep = 0; rep < reps; rep++) {
    for (const path of scenario.paths(rep)) {
      const seen = await watched(server, path, scenario.headers);
      if (server.mode === 'koa-buffer' && scenario.coding !== undefined && seen.encoding !== scenario.coding)
        problems.push(`${scenario.name}: answered with '${seen.encoding}', not ${scenario.coding}`);
      if (
        server.mode === 'koa-buffer' &&
        scenario.cacheStatus !== undefined &&
        seen.cacheStatus !== scenario.cacheStatus
      )
        problems.push(`${scenario.name}: Cache-Status '${seen.cacheStatus}', not ${scenario.cacheStatus}`);
      blocks.push(seen.busy);
      delays.push(seen.max);
    }
  }
  return [blocks, delays];
}

async function main(): Promise<void> {
  ensureBuilt();
  // The dictionary is the page as koa-buffer sent it (squashed): its hash is set once that server has answered.
  const dczHeaders: Record<string, string> = { 'accept-encoding': 'dcz, gzip' };
  const scenarios: Scenario[] = [
    { name: '10 MiB pages, squashed', paths: (rep) => [`/squash?n=${rep}`], headers: {} },
    {
      name: '4 MiB pages, dcz against a 4 MiB dictionary',
      paths: (rep) => [`/dcz/page?n=${rep}`],
      headers: dczHeaders,
      coding: 'dcz',
    },
    {
      name: '7 MiB pages, squashed and stored in the cache',
      paths: (rep) => [`/cached?n=${rep}`],
      headers: {},
      cacheStatus: 'koa-buffer; fwd=miss; stored',
    },
    // One 100 MiB page three times a rep: new, learnt by the memo, recognised.
    { name: 'a 100 MiB page (bytes), asked three times', paths: () => ['/big', '/big', '/big'], headers: {} },
    {
      name: 'a 100 MiB page (a string), asked three times',
      paths: () => ['/big-string', '/big-string', '/big-string'],
      headers: {},
    },
  ];
  const problems: string[] = [];
  const results = new Map<string, Map<string, number[][]>>();
  for (const mode of ['bare', 'koa-buffer']) {
    const server = await startServerProcess(self, mode, [], { pin: false });
    try {
      // The dictionary, offered once.
      const { body: dictionary } = await request(server.port, '/dcz/base', {}, true);
      dczHeaders['available-dictionary'] = `:${createHash('sha256').update(dictionary).digest('base64')}:`;
      await request(server.port, '/squash?n=warm', {});
      const byScenario = new Map<string, number[][]>();
      for (const scenario of scenarios) byScenario.set(scenario.name, await run(server, scenario, problems));
      results.set(mode, byScenario);
    } finally {
      server.child.kill();
    }
  }
  agent.destroy();
  const rows: Row[] = [];
  let worst = 0;
  for (const scenario of scenarios) {
    const [ourBlocks, ourDelays] = results.get('koa-buffer')!.get(scenario.name)!;
    const [bareBlocks, bareDelays] = results.get('bare')!.get(scenario.name)!;
    const own = Math.max(0, Math.max(...ourBlocks!) - median(bareBlocks!));
    worst = Math.max(worst, own);
    rows.push({
      ...compare(
        `${scenario.name}: longest block of the loop's own per request, koa-buffer vs bare Koa`,
        sample('koa-buffer', ourBlocks!, 'ms'),
        sample('bare Koa', bareBlocks!, 'ms'),
        false,
      ),
      note: `koa-buffer's own part at worst ${own.toFixed(1)} ms (max less bare's median)${hasSchedstat ? '' : '; no schedstat: not measured'}`,
    });
    rows.push(
      compare(
        `${scenario.name}: event-loop delay max per request (the OS counts here too)`,
        sample('koa-buffer', ourDelays!, 'ms'),
        sample('bare Koa', bareDelays!, 'ms'),
        false,
      ),
    );
  }
  rows.push({
    figure: "koa-buffer's own longest block, all scenarios",
    ours: sample('worst', [worst], 'ms'),
    target: '<= 5 ms',
  });
  for (const problem of problems) console.log(`WARNING: ${problem}`);
  report(
    `Large bodies and the event loop (${process.env.KOA_BUFFER_NATIVE === '0' ? 'TypeScript twin' : 'native addon'})`,
    rows,
  );
}

const serving = process.argv.indexOf('--serve');
if (serving >= 0) await serve(process.argv[serving + 1]!);
else if (isMain(import.meta.url)) await main();
