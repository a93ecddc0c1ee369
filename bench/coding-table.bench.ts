/**
 * The measurements behind `src/encoding/coding-table.ts`: for every coding
 * and level, the microseconds of one synchronous call and the bytes it
 * makes, on the 50 KiB template page of `http.bench.ts` after squashing
 * (what koa-buffer compresses with `optimiseContent: 1`), and the bytes the
 * common peer stack sends for the same page to a client of that coding:
 * koa-compress with its defaults, through a zlib stream, of the page as
 * rendered (it does not squash). A br client gets br quality 4; a
 * gzip-only or deflate-only client gets zlib's default level 6, whose
 * bytes are much fewer than br 4's on this page, so the gzip and deflate
 * bounds are tighter; a zstd client gets br 4 (koa-compress makes zstd
 * only with Node's own zstd, from Node 22.15, and Chrome, Edge and Firefox
 * all accept br).
 *
 * From these it names, per coding, the cold level (the cheapest level whose
 * bytes are at or below that coding's bound) and reports the hot level's figures
 * (br 11, zstd 19, gzip 9, deflate 9). Paste the printed table into
 * coding-table.ts when the codecs or the page change.
 *
 * A last part asks how small gzip can get at all on this page, against the
 * hot target of 0.8× the peer's gzip bytes: zlib's best (level 9, memLevel
 * 9) and Zopfli (the devDependency @gfx/zopfli, an exhaustive deflate
 * encoder whose output any gzip decoder reads) at 15 and 100 iterations.
 * The figures are in docs/decisions/0023-adaptive-compression-by-body-temperature.md
 * and docs/decisions/0031-hot-gzip-target-out-of-reach.md. Run:
 *   node --import tsx bench/coding-table.bench.ts [--quick]
 */
import zlib from 'node:zlib';
import { createRequire } from 'node:module';
import { median, quick, report, type Row } from './lib/harness.ts';
import { htmlPage } from '../support/pages.ts';
import { squashHtml } from '../src/index.ts';

type ZstdModule = typeof import('zstd-napi');
const zstd = createRequire(import.meta.url)('zstd-napi') as ZstdModule;

const rendered = Buffer.from(htmlPage(50 * 1024, 42));
const page = squashHtml(rendered, { level: 1 });
const reps = quick ? 41 : 201;

// One reusable context per level, as src/encoding/compress.ts keeps them: creating one costs more than a page.
const zstdCompressors = new Map<number, InstanceType<ZstdModule['Compressor']>>();
function zstdCompressor(level: number): InstanceType<ZstdModule['Compressor']> {
  let compressor = zstdCompressors.get(level);
  if (!compressor) {
    compressor = new zstd.Compressor();
    compressor.setParameters({ compressionLevel: level });
    zstdCompressors.set(level, compressor);
  }
  return compressor;
}

/** One synchronous compression per coding, at a level. */
const codecs: Record<string, { levels: number[]; hot: number; run: (level: number) => Buffer }> = {
  zstd: {
    levels: [1, 2, 3, 4, 5, 6, 19],
    hot: 19,
    run: (level) => zstdCompressor(level).compress(page),
  },
  br: {
    levels: [0, 1, 2, 3, 4, 5, 11],
    hot: 11,
    run: (level) =>
      zlib.brotliCompressSync(page, {
        params: {
          [zlib.constants.BROTLI_PARAM_QUALITY]: level,
          [zlib.constants.BROTLI_PARAM_SIZE_HINT]: page.length,
        },
      }),
  },
  gzip: { levels: [1, 2, 3, 4, 5, 6, 9], hot: 9, run: (level) => zlib.gzipSync(page, { level }) },
  deflate: { levels: [1, 2, 3, 4, 5, 6, 9], hot: 9, run: (level) => zlib.deflateSync(page, { level }) },
};

/** What koa-compress sends by default: br quality 4, or gzip or deflate at zlib's default, the string body ended into a zlib stream. */
function peerBytes(coding: 'br' | 'gzip' | 'deflate'): Promise<number> {
  return new Promise((resolve, reject) => {
    const stream =
      coding === 'br'
        ? zlib.createBrotliCompress({ params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 4 } })
        : coding === 'gzip'
          ? zlib.createGzip()
          : zlib.createDeflate();
    let bytes = 0;
    stream.on('data', (chunk: Buffer) => (bytes += chunk.length));
    stream.on('end', () => resolve(bytes));
    stream.on('error', reject);
    stream.end(rendered.toString());
  });
}

/**
 * Median µs of one call per level, the levels interleaved call by call so
 * that a burst on this shared machine hits them alike; the slow hot levels
 * get a tenth of the calls.
 */
function microseconds(levels: number[], hot: number, run: (level: number) => unknown): Map<number, number> {
  const times = new Map(levels.map((level) => [level, [] as number[]]));
  for (const level of levels) for (let i = 0; i < 3; i++) run(level); // warm up
  for (let rep = 0; rep < reps; rep++) {
    for (const level of levels) {
      if (level === hot && rep % 10 !== 0) continue;
      const start = process.hrtime.bigint();
      run(level);
      times.get(level)!.push(Number(process.hrtime.bigint() - start) / 1e3);
    }
  }
  return new Map([...times].map(([level, values]) => [level, median(values)]));
}

const peerOf = { br: await peerBytes('br'), gzip: await peerBytes('gzip'), deflate: await peerBytes('deflate') };
/** The bound of each coding: what koa-compress sends the clients that get this coding from koa-buffer. */
const bound: Record<string, { peer: string; bytes: number }> = {
  zstd: { peer: 'br 4', bytes: peerOf.br },
  br: { peer: 'br 4', bytes: peerOf.br },
  gzip: { peer: 'gzip 6', bytes: peerOf.gzip },
  deflate: { peer: 'deflate 6', bytes: peerOf.deflate },
};
const rows: Row[] = [];
const lines: string[] = [];
lines.push(
  `page ${rendered.length} B rendered, ${page.length} B squashed; peer (koa-compress, stream): ` +
    `br 4 ${peerOf.br} B, gzip 6 ${peerOf.gzip} B, deflate 6 ${peerOf.deflate} B`,
);
lines.push('coding level  µs (median)  bytes  at or below peer');
for (const [coding, codec] of Object.entries(codecs)) {
  const peer = bound[coding]!.bytes;
  let cold: { level: number; us: number; bytes: number } | undefined;
  let hot: { level: number; us: number; bytes: number } | undefined;
  const timed = microseconds(codec.levels, codec.hot, codec.run);
  for (const level of codec.levels) {
    const bytes = codec.run(level).length;
    const us = timed.get(level)!;
    lines.push(
      `${coding.padEnd(7)}${String(level).padStart(5)}  ${us.toFixed(0).padStart(11)}  ${bytes}  ${bytes <= peer}`,
    );
    if (level === codec.hot) hot = { level, us, bytes };
    else if (bytes <= peer && (cold === undefined || us < cold.us)) cold = { level, us, bytes };
  }
  for (const [kind, found] of [
    ['cold', cold],
    ['hot', hot],
  ] as const) {
    if (!found) continue;
    rows.push({
      figure: `${coding} ${kind} level ${found.level}: bytes vs peer ${bound[coding]!.peer} (${peer} B)`,
      ours: { name: `${coding} ${found.level}`, median: found.bytes, min: found.bytes, max: found.bytes, unit: 'B' },
      ratio: peer / found.bytes,
      note: `${found.us.toFixed(0)} µs a call, sync`,
    });
  }
  lines.push(
    `=> ${coding}: cold ${cold ? `${cold.level} (${cold.us.toFixed(0)} µs, ${cold.bytes} B)` : 'none meets the bound'}, hot ${hot!.level} (${hot!.us.toFixed(0)} µs, ${hot!.bytes} B)`,
  );
}
/** The fewest gzip bytes any encoder here makes of the page, and what they cost. */
async function gzipFloor(): Promise<void> {
  const target = Math.floor(0.8 * peerOf.gzip);
  const zlibBest = zlib.gzipSync(page, { level: 9, memLevel: 9 }).length;
  lines.push(`gzip floor: target 0.8 × ${peerOf.gzip} = ${target} B; zlib level 9 memLevel 9: ${zlibBest} B`);
  rows.push({
    figure: `gzip, fewest bytes from zlib (level 9, memLevel 9) vs peer gzip 6 (${peerOf.gzip} B)`,
    ours: { name: 'zlib 9', median: zlibBest, min: zlibBest, max: zlibBest, unit: 'B' },
    ratio: peerOf.gzip / zlibBest,
    target: '>= 1.25',
  });
  let zopfli: typeof import('@gfx/zopfli') | undefined;
  try {
    zopfli = await import('@gfx/zopfli');
  } catch {
    lines.push('gzip floor: @gfx/zopfli is not installed (npm install), Zopfli not measured');
    return;
  }
  for (const numiterations of quick ? [15] : [15, 100]) {
    const started = process.hrtime.bigint();
    const bytes = (await zopfli.gzipAsync(page, { numiterations })).length;
    const ms = Number(process.hrtime.bigint() - started) / 1e6;
    lines.push(`gzip floor: Zopfli ${numiterations} iterations: ${bytes} B in ${ms.toFixed(0)} ms`);
    rows.push({
      figure: `gzip, fewest bytes from Zopfli (${numiterations} iterations) vs peer gzip 6 (${peerOf.gzip} B)`,
      ours: { name: `zopfli ${numiterations}`, median: bytes, min: bytes, max: bytes, unit: 'B' },
      ratio: peerOf.gzip / bytes,
      target: '>= 1.25',
      note: `${ms.toFixed(0)} ms a call; ${bytes > target ? 'the target is out of reach for gzip' : 'meets the target'}`,
    });
  }
}
await gzipFloor();
for (const line of lines) console.log(line);
report('Coding table: µs and bytes per coding and level, 50 KiB template page squashed', rows);
