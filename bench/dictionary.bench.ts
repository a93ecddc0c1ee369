/**
 * Compression dictionaries (RFC 9842) for a returning visitor: a page
 * changed in one place, sent as dcz with its previous version as the
 * dictionary, against what the common peer stack sends (koa-compress's
 * default, br quality 4, which has no dictionary).
 *
 * - bytes: the 50 KiB template page of `http.bench.ts`, and every real page
 *   of the squash corpus (`support/squash-corpus/`), each changed in one
 *   place (a timestamp comment inserted at its middle); target br ≥ 20 × dcz;
 * - encode time: one dcz encode (the dictionary already loaded, as the
 *   server keeps it) against one br 4 call; target dcz ≤ br 4;
 * - hit throughput: a cache hit of the 50 KiB page over real HTTP (wrk),
 *   `dictionaries` on against off, for a browser that names no dictionary;
 *   target within 10%. Both servers run in this process, the load
 *   generator pinned to core 1.
 *
 * Run: node --import tsx bench/dictionary.bench.ts [--quick]
 */
import { createHash } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import zlib from 'node:zlib';
import Koa from 'koa';
import { alternate, compare, median, quick, sample, type Row } from './lib/harness.ts';
import { htmlPage } from '../support/pages.ts';
import { load, reportHttp } from './lib/load.ts';
import { buffer } from '../src/index.ts';
import { dczEncode } from '../src/encoding/dictionaries/dcz.ts';

const br4 = (body: Buffer): Buffer =>
  zlib.brotliCompressSync(body, {
    params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 4, [zlib.constants.BROTLI_PARAM_SIZE_HINT]: body.length },
  });
const sha = (bytes: Buffer): string => createHash('sha256').update(bytes).digest('hex');
const dcz = (next: Buffer, previous: Buffer): Buffer => dczEncode(next, previous, sha(previous), 3);

/** The page with a timestamp comment inserted before the first tag at or after its middle: a change in one place. */
function changedOnce(page: Buffer): Buffer {
  const text = page.toString('latin1');
  let at = text.indexOf('<', text.length >> 1);
  if (at < 0) at = text.length;
  return Buffer.from(`${text.slice(0, at)}<!-- 12:00:01 -->${text.slice(at)}`, 'latin1');
}

const rows: Row[] = [];
const problems: string[] = [];

// --- bytes ---------------------------------------------------------------------

const template = Buffer.from(htmlPage(50 * 1024, 42));
const templateNext = changedOnce(template);
const templateDcz = dcz(templateNext, template).length;
const templateBr = br4(templateNext).length;
rows.push(
  compare(
    'bytes, 50 KiB page changed in one place: dcz (previous version as dictionary) vs br 4',
    sample('dcz level 3', [templateDcz], 'B'),
    sample('br 4', [templateBr], 'B'),
    false,
    '>= 20',
  ),
);

const dir = fileURLToPath(new URL('../support/squash-corpus/', import.meta.url));
const corpus = readdirSync(dir)
  .filter((f) => f.endsWith('.html') && !f.endsWith('.expected.html'))
  .sort()
  .map((f) => ({ name: f, page: readFileSync(dir + f) }));
let corpusDcz = 0;
let corpusBr = 0;
const perPage: number[] = [];
for (const { name, page } of corpus) {
  const next = changedOnce(page);
  const d = dcz(next, page).length;
  const b = br4(next).length;
  corpusDcz += d;
  corpusBr += b;
  perPage.push(b / d);
  console.log(`  ${name}: ${page.length} B, br 4 ${b} B, dcz ${d} B, ratio ${(b / d).toFixed(1)}`);
}
rows.push({
  ...compare(
    `bytes, the ${corpus.length} corpus pages changed in one place, summed: dcz vs br 4`,
    sample('dcz level 3', [corpusDcz], 'B'),
    sample('br 4', [corpusBr], 'B'),
    false,
    '>= 20',
  ),
  note: `per page: median ratio ${median(perPage).toFixed(1)}, lowest ${Math.min(...perPage).toFixed(1)}; ${perPage.filter((r) => r >= 20).length} of ${perPage.length} pages at 20 or more (the smallest pages are mostly the 40-byte dcz header)`,
});

// --- encode time -----------------------------------------------------------------

const calls = quick ? 200 : 1000;
function microsPerCall(fn: () => unknown): number {
  const start = process.hrtime.bigint();
  for (let i = 0; i < calls; i++) fn();
  return Number(process.hrtime.bigint() - start) / 1e3 / calls;
}
// The server hashes a dictionary once, when it is offered; the hash is not part of an encode.
const templateHash = sha(template);
const [dczTime, brTime] = await alternate(
  [
    { name: 'dcz level 3', run: () => microsPerCall(() => dczEncode(templateNext, template, templateHash, 3)) },
    { name: 'br 4', run: () => microsPerCall(() => br4(templateNext)) },
  ],
  quick ? 5 : 11,
  'µs',
);
rows.push(compare('encode time, 50 KiB page, one call, the same dictionary again', dczTime!, brTime!, false, '>= 1'));
// Each call loads the dictionary anew (ZSTD_compress_usingDict on one warm context): this row checks that a
// dictionary never seen before costs no more than one already used.
let fresh = 0;
const freshHash = (): string => (++fresh).toString(16).padStart(64, '0');
const [coldDcz, coldBr] = await alternate(
  [
    {
      name: 'dcz level 3, first use',
      run: () => microsPerCall(() => dczEncode(templateNext, template, freshHash(), 3)),
    },
    { name: 'br 4', run: () => microsPerCall(() => br4(templateNext)) },
  ],
  quick ? 3 : 7,
  'µs',
);
rows.push(
  compare('encode time, 50 KiB page, first call with a new dictionary (loads it)', coldDcz!, coldBr!, false, '>= 1'),
);

// --- hit throughput --------------------------------------------------------------

async function server(dictionaries: boolean): Promise<{ port: number; close: () => void }> {
  const app = new Koa();
  app.use(buffer({ cache: true, varyBy: [], ...(dictionaries ? { dictionaries: [{ match: '/*' }] } : {}) }));
  const page = template.toString();
  app.use(async (ctx) => {
    if (await ctx.bufferIsCached()) return;
    ctx.type = 'html';
    ctx.body = page;
  });
  const s = http.createServer(app.callback() as http.RequestListener); // Koa catches its own errors
  await new Promise<void>((resolve) => s.listen(0, '127.0.0.1', resolve));
  return { port: (s.address() as AddressInfo).port, close: () => s.close() };
}
const on = await server(true);
const off = await server(false);
const headers = { 'accept-encoding': 'gzip, deflate, br, zstd, dcz' };
const seconds = quick ? 1 : 2;
for (const s of [on, off]) await load(s.port, headers, 1); // warm-up: the entry stored, the answers prepared
const [onRps, offRps] = await alternate(
  [
    { name: 'dictionaries on', run: async () => (await load(on.port, headers, seconds)).rps },
    { name: 'dictionaries off', run: async () => (await load(off.port, headers, seconds)).rps },
  ],
  quick ? 3 : 7,
  'req/s',
);
rows.push(compare('cache hit, 50 KiB page, browser naming no dictionary: on vs off', onRps!, offRps!, true, '>= 0.9'));
on.close();
off.close();

reportHttp('Compression dictionaries (dcz) for a returning visitor', rows, problems);
