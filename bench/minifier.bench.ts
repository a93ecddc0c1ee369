/**
 * Which optional minifier should level 2 (inline CSS/JS) use? Measures each
 * installed candidate on the same inline blocks: time per block (median of
 * reps, alternating candidates) and bytes out. Run:
 *   node --import tsx bench/minifier.bench.ts [--quick]
 */
import { alternate, compare, quick, report, type Row } from './lib/harness.ts';
import { inlineCss, inlineJs } from '../support/inline-blocks.ts';

type Minify = (code: string) => Promise<string> | string;

const esbuild = await import('esbuild');
const terser = await import('terser');
const csso = await import('csso');
const lightningcss = await import('lightningcss');

const js: Record<string, Minify> = {
  'esbuild (async)': async (code) => (await esbuild.transform(code, { loader: 'js', minify: true })).code,
  'esbuild (sync)': (code) => esbuild.transformSync(code, { loader: 'js', minify: true }).code,
  terser: async (code) => (await terser.minify(code, { compress: true, mangle: true })).code ?? code,
};
const css: Record<string, Minify> = {
  'esbuild (async)': async (code) => (await esbuild.transform(code, { loader: 'css', minify: true })).code,
  'esbuild (sync)': (code) => esbuild.transformSync(code, { loader: 'css', minify: true }).code,
  csso: (code) => csso.minify(code).css,
  lightningcss: (code) =>
    lightningcss.transform({ filename: 'inline.css', code: Buffer.from(code), minify: true }).code.toString(),
};

const reps = quick ? 3 : 7;
const perRep = quick ? 100 : 300;

async function measure(kind: string, table: Record<string, Minify>, input: string): Promise<Row[]> {
  for (const fn of Object.values(table)) await fn(input); // warm up (esbuild starts its service)
  const samples = await alternate(
    Object.entries(table).map(([name, fn]) => ({
      name,
      run: async () => {
        const start = process.hrtime.bigint();
        for (let i = 0; i < perRep; i++) await fn(input);
        return Number(process.hrtime.bigint() - start) / 1000 / perRep;
      },
    })),
    reps,
    'µs/block',
  );
  const rows: Row[] = [];
  const baseline = samples[0]!;
  for (const [i, [name, fn]] of Object.entries(table).entries()) {
    const out = await fn(input);
    const row = compare(
      `${kind} ${input.length} B → ${out.length} B`,
      samples[i]!,
      i === 0 ? undefined : baseline,
      false,
    );
    row.note = `${name}: ${((1 - out.length / input.length) * 100).toFixed(1)}% smaller`;
    rows.push(row);
  }
  return rows;
}

const rows = [...(await measure('inline JS', js, inlineJs)), ...(await measure('inline CSS', css, inlineCss))];
await esbuild.stop();
report('Level 2 minifiers (ratio > 1: faster than the first row of its kind)', rows);
