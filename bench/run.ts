/**
 * `npm run bench`: runs every `bench/*.bench.ts` in its own process, shows
 * their progress, and writes the report: bench/results/latest.json, a
 * Markdown table (latest.md) and an SVG chart of the ratios (latest.svg,
 * drawn by chart.ts, which can also redraw it alone from latest.json).
 * Exits non-zero when a benchmark could not run. `--quick` is passed on.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { benchChart, describeMachine } from './chart.ts';
import type { Row } from './lib/harness.ts';
import { quick } from './lib/harness.ts';

const benchDir = fileURLToPath(new URL('.', import.meta.url));
const resultsDir = join(benchDir, 'results');
const only = process.argv.slice(2).filter((a) => !a.startsWith('--'));

interface Section {
  file: string;
  title: string;
  rows: Row[];
  seconds: number;
  error?: string;
}

function runBench(file: string): Promise<Section> {
  const started = Date.now();
  return new Promise((resolve) => {
    const args = ['--import', 'tsx', join(benchDir, file), ...(quick ? ['--quick'] : [])];
    const child = spawn(process.execPath, args, {
      env: { ...process.env, KB_BENCH_JSON: '1' },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    const section: Section = { file, title: file, rows: [], seconds: 0 };
    let pending = '';
    child.stdout.on('data', (chunk: Buffer) => {
      pending += chunk.toString();
      let newline: number;
      while ((newline = pending.indexOf('\n')) >= 0) {
        const line = pending.slice(0, newline);
        pending = pending.slice(newline + 1);
        if (line.startsWith('KB_ROWS ')) {
          const parsed = JSON.parse(line.slice(8)) as { title: string; rows: Row[] };
          section.title = parsed.title;
          section.rows.push(...parsed.rows);
        } else {
          console.log(`  ${line}`);
        }
      }
    });
    child.on('close', (code, signal) => {
      section.seconds = (Date.now() - started) / 1000;
      if (code !== 0) section.error = `exited with ${code ?? signal}`;
      else if (section.rows.length === 0) section.error = 'reported no figures';
      resolve(section);
    });
  });
}

function fmt(value: number, unit: string): string {
  const digits = value >= 100 ? 0 : value >= 10 ? 1 : 2;
  return `${value.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits })} ${unit}`;
}

function machine() {
  const cpus = os.cpus();
  return {
    date: new Date().toISOString(),
    node: process.version,
    cpu: cpus[0]?.model ?? 'unknown',
    cores: cpus.length,
    memoryGiB: Math.round(os.totalmem() / 2 ** 30),
    os: `${os.type()} ${os.release()}`,
    quick,
  };
}

function markdown(sections: Section[], facts: ReturnType<typeof machine>): string {
  const lines = [
    '# koa-buffer benchmark results',
    '',
    `Made by \`npm run bench${quick ? ' -- --quick' : ''}\` on ${facts.date.slice(0, 10)}: ${facts.cpu}, ${facts.cores} cores, ` +
      `${facts.memoryGiB} GiB, Node.js ${facts.node}, ${facts.os}. Figures are medians of alternating repetitions ` +
      '(range in brackets); a ratio above 1 means koa-buffer is better.',
    '',
  ];
  for (const s of sections) {
    lines.push(`## ${s.title}`, '');
    if (s.error) lines.push(`**Could not run: ${s.error}.**`, '');
    if (s.rows.length === 0) continue;
    lines.push('| figure | koa-buffer | peer | ratio | target |', '|---|---|---|---|---|');
    for (const r of s.rows) {
      const ours = `${r.ours.name}: ${fmt(r.ours.median, r.ours.unit)} (${fmt(r.ours.min, '')}–${fmt(r.ours.max, '').trim()})`;
      const peer = r.peer ? `${r.peer.name}: ${fmt(r.peer.median, r.peer.unit)}` : '—';
      const ratio = r.ratio !== undefined ? `${r.ratio.toFixed(2)}×` : '—';
      lines.push(`| ${r.figure}${r.note ? ` (${r.note})` : ''} | ${ours} | ${peer} | ${ratio} | ${r.target ?? ''} |`);
    }
    lines.push('');
  }
  return lines.join('\n');
}

const files = readdirSync(benchDir)
  .filter((f) => f.endsWith('.bench.ts'))
  .filter((f) => only.length === 0 || only.some((o) => f.includes(o)))
  .sort();
console.log(`koa-buffer benchmarks${quick ? ' (quick)' : ''}: ${files.join(', ')}`);
const sections: Section[] = [];
for (const [i, file] of files.entries()) {
  console.log(`\n[${i + 1}/${files.length}] ${file}`);
  const section = await runBench(file);
  console.log(`  … ${section.error ? `FAILED (${section.error})` : 'done'} in ${section.seconds.toFixed(0)} s`);
  sections.push(section);
}

const facts = machine();
mkdirSync(resultsDir, { recursive: true });
writeFileSync(join(resultsDir, 'latest.json'), JSON.stringify({ machine: facts, sections }, null, 2) + '\n');
writeFileSync(join(resultsDir, 'latest.md'), markdown(sections, facts));
writeFileSync(join(resultsDir, 'latest.svg'), benchChart(sections, describeMachine(facts)));
console.log(`\nWrote ${join(resultsDir, 'latest.{json,md,svg}')}`);
const failed = sections.filter((s) => s.error);
if (failed.length > 0) {
  console.error(`${failed.length} benchmark(s) could not run: ${failed.map((s) => s.file).join(', ')}`);
  process.exit(1);
}
