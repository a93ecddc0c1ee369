/**
 * The bench report's chart (bench/results/latest.svg): one horizontal bar
 * per ratio on a log scale, a vertical line at 1×, grouped by bench section,
 * each row with its absolute figures beside the ratio.
 *
 * Two panels keep apart what a reader must not confuse:
 * - koa-buffer against a peer (another library): green where koa-buffer is
 *   ahead, orange where it is behind;
 * - controls (the same thing measured twice: the machine's drift), ceilings
 *   and floors (bare Koa sending precompressed bytes, open+close), and
 *   comparisons that involve no peer (koa-buffer's own modes, the minifiers
 *   it can call): neutral grey, never a colour that reads as a loss.
 *
 * Labels are wrapped and the left margin is computed from the widest line,
 * so nothing is clipped. `node --import tsx bench/chart.ts` redraws the
 * chart from latest.json without running a benchmark; `npm run bench`
 * draws it after a run.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { Row } from './lib/harness.ts';

/** What the chart needs of a bench section. */
export interface ChartSection {
  file?: string;
  title: string;
  rows: Row[];
}

/** How a row is drawn. */
export type RowKind = 'peer' | 'control' | 'reference';

const font = 'DejaVu Sans, Verdana, Arial, sans-serif';
const fontSize = 12;
const lineHeight = 15;
const colours = { ahead: '#2e7d32', behind: '#e07b00', control: '#bdbdbd', reference: '#8c8c8c' };

/**
 * Which rows are not koa-buffer against a peer, and why. The bench files
 * name their rows in words; these rules read those words.
 */
const referenceRules: Array<{ why: string; test: (section: ChartSection, row: Row) => boolean }> = [
  { why: 'named a ceiling, floor or reference', test: (_, r) => /ceiling|\bfloor\b|reference/i.test(words(r)) },
  { why: 'the other side is bare Koa sending precompressed bytes', test: (_, r) => /^bare\b/i.test(r.peer!.name) },
  {
    why: 'koa-buffer against itself in another mode or store',
    test: (_, r) => /sync vs async|native vs twin|against memory/i.test(r.figure),
  },
  { why: 'third-party minifiers against each other', test: (s) => /\bminifiers\b/i.test(s.title) },
];

/** The figure, its note and the peer's name, for the rules to read. */
function words(row: Row): string {
  return `${row.figure} ${row.note ?? ''} ${row.peer?.name ?? ''}`;
}

/** How a row with a ratio is drawn. */
export function kindOf(section: ChartSection, row: Row): RowKind {
  if (/\bcontrol\b|against itself|drift/i.test(`${row.figure} ${row.note ?? ''}`)) return 'control';
  if (row.peer && referenceRules.some((rule) => rule.test(section, row))) return 'reference';
  return 'peer';
}

// Advance widths of DejaVu Sans (the widest of the usual sans-serif fonts), in ems, so an
// estimate is never short whichever of them the viewer has. Unlisted characters count as wide.
const narrow = new Map<string, number>([
  ...[...'ijl'].map((c) => [c, 0.28] as [string, number]),
  ...[...".,:; '|!"].map((c) => [c, 0.34] as [string, number]),
  ...[...'ft()[]/-'].map((c) => [c, 0.4] as [string, number]),
  ['r', 0.42],
  ...[...'sczJ'].map((c) => [c, 0.56] as [string, number]),
  ...[...'abdeghknopquvxy0123456789µ'].map((c) => [c, 0.64] as [string, number]),
  ...[...'mMW%…'].map((c) => [c, 1] as [string, number]),
]);

/** The width `text` takes at `size` px, never less than it renders. */
export function textWidth(text: string, size = fontSize): number {
  let ems = 0;
  for (const c of text) ems += narrow.get(c) ?? 0.84;
  return ems * size;
}

/** Breaks `text` into lines of at most `width` px, at spaces. */
export function wrap(text: string, width: number, size = fontSize): string[] {
  const lines: string[] = [];
  let line = '';
  for (const word of text.split(' ')) {
    const next = line === '' ? word : `${line} ${word}`;
    if (line !== '' && textWidth(next, size) > width) {
      lines.push(line);
      line = word;
    } else line = next;
  }
  if (line !== '') lines.push(line);
  return lines;
}

function escapeXml(text: string): string {
  return text.replace(/[<>&"]/g, (c) => ({ '<': '&lt;', '>': '&gt;', '&': '&amp;', '"': '&quot;' })[c]!);
}

/** 12,345 or 12.3 or 1.23: three significant digits at most, thousands grouped. */
function number(value: number): string {
  const digits = value >= 100 ? 0 : value >= 10 ? 1 : 2;
  return value.toLocaleString('en-US', { maximumFractionDigits: digits, minimumFractionDigits: digits });
}

/** The absolute figures behind a ratio: `ours br 28,637 vs bare br 28,011 req/s`. */
function absolute(row: Row): string {
  const peer = row.peer!;
  const same = peer.unit === row.ours.unit;
  const ours = `${row.ours.name} ${number(row.ours.median)}${same ? '' : ` ${row.ours.unit}`}`;
  return `${ours} vs ${peer.name} ${number(peer.median)} ${peer.unit}${row.target ? `; target ${row.target}` : ''}`;
}

/** A bench section's title without the reading hint the chart's own title gives. */
function areaTitle(title: string): string {
  return title.replace(/\s*\(ratio > 1:[^)]*\)\s*$/, '');
}

interface Drawn {
  kind: RowKind;
  ratio: number;
  label: string[];
  figures: string[];
}

interface Group {
  title: string[];
  rows: Drawn[];
}

/** The SVG chart of every ratio in `sections`; `subtitle` says where and when they were measured. */
export function benchChart(sections: ChartSection[], subtitle = ''): string {
  const labelWidth = 330; // the longest a label line may be before it wraps
  const plotWidth = 380;
  const ratioWidth = 64;
  const gap = 12;
  const figuresWidth = 400; // the same for the absolute figures

  const panels: Array<{ title: string; groups: Group[] }> = [
    { title: 'koa-buffer against a peer (right of 1×: koa-buffer better)', groups: [] },
    {
      title: 'Controls, ceilings and comparisons with no peer (grey: not a koa-buffer result against another library)',
      groups: [],
    },
  ];
  for (const section of sections) {
    const rows = section.rows.filter((r) => r.ratio !== undefined && r.peer !== undefined && r.ratio > 0);
    const drawn = rows.map((r): Drawn => ({
      kind: kindOf(section, r),
      ratio: r.ratio!,
      label: wrap(`${r.figure}${r.note ? ` (${r.note})` : ''}`, labelWidth),
      figures: wrap(absolute(r), figuresWidth, 11),
    }));
    const peers = drawn.filter((d) => d.kind === 'peer');
    const others = drawn.filter((d) => d.kind !== 'peer');
    if (peers.length > 0) panels[0]!.groups.push({ title: [areaTitle(section.title)], rows: peers });
    if (others.length > 0) panels[1]!.groups.push({ title: [areaTitle(section.title)], rows: others });
  }

  const all = panels.flatMap((p) => p.groups.flatMap((g) => g.rows));
  const left = 16 + Math.ceil(Math.max(0, ...all.flatMap((d) => d.label.map((line) => textWidth(line))))) + gap;
  const figuresX = left + plotWidth + gap + ratioWidth;
  const width = Math.ceil(
    figuresX + Math.max(0, ...all.flatMap((d) => d.figures.map((line) => textWidth(line, 11)))) + 16,
  );
  for (const panel of panels)
    for (const group of panel.groups) group.title = wrap(group.title[0]!, width - 32, 13).map((l) => l);

  const logs = all.map((d) => Math.log10(d.ratio));
  const lo = Math.floor(Math.min(-0.3, ...logs) * 2) / 2;
  const hi = Math.ceil(Math.max(0.3, ...logs) * 2) / 2;
  const x = (ratio: number): number => left + ((Math.log10(ratio) - lo) / (hi - lo)) * plotWidth;
  const ticks: number[] = [];
  for (let p = Math.ceil(lo); p <= Math.floor(hi); p++) ticks.push(10 ** p);

  const parts: string[] = [];
  const under: string[] = []; // grid lines and frames, drawn beneath the bars
  let y = 16;
  const text = (tx: number, ty: number, body: string, attrs = ''): void => {
    parts.push(`<text x="${tx.toFixed(1)}" y="${ty}"${attrs}>${escapeXml(body)}</text>`);
  };

  text(16, (y += 14), 'koa-buffer benchmarks: every ratio, log scale', ' font-size="16" font-weight="bold"');
  if (subtitle)
    for (const line of wrap(subtitle, width - 32, 11)) text(16, (y += 16), line, ' font-size="11" fill="#555"');
  y += 12;
  const legend: Array<[string, string]> = [
    [colours.ahead, 'koa-buffer ahead of the peer'],
    [colours.behind, 'koa-buffer behind the peer'],
    [colours.reference, 'ceiling, floor or no peer'],
    [colours.control, 'control: the same thing twice (drift)'],
  ];
  let lx = 16;
  for (const [colour, name] of legend) {
    parts.push(`<rect x="${lx}" y="${y}" width="12" height="12" fill="${colour}"/>`);
    text(lx + 16, y + 10, name);
    lx += 16 + textWidth(name) + 18;
  }
  y += 22;

  for (const panel of panels) {
    if (panel.groups.length === 0) continue;
    y += 18;
    text(16, y, panel.title, ' font-size="14" font-weight="bold"');
    y += 10;
    const axisTop = y;
    // The scale at the top of each panel.
    y += 14;
    for (const t of ticks) text(x(t), y, `${t >= 1 ? t : t.toString()}×`, ' text-anchor="middle" fill="#555"');
    text(figuresX, y, 'medians: the measured side vs the other side', ' fill="#555"');
    parts.push(`<text x="${left + plotWidth + gap}" y="${y}" fill="#555">ratio</text>`);
    y += 6;
    const plotTop = y;
    for (const group of panel.groups) {
      y += 8;
      // A white ground under the area's title, so the grid lines do not run through it.
      const titleWidth = Math.max(...group.title.map((line) => textWidth(line, 13)));
      parts.push(
        `<rect x="12" y="${y + 3}" width="${Math.ceil(titleWidth + 8)}" height="${group.title.length * 16 + 2}" fill="white"/>`,
      );
      for (const line of group.title) text(16, (y += 16), line, ' font-size="13" font-weight="bold"');
      y += 6;
      for (const row of group.rows) {
        const rowHeight = Math.max(1, row.label.length, row.figures.length) * lineHeight + 6;
        const barY = y + 2;
        // One group per row, its kind named, so a reader (or a test) can tell a row's parts together.
        parts.push(`<g class="row" data-kind="${row.kind}">`);
        row.label.forEach((line, i) =>
          text(left - gap, barY + 11 + i * lineHeight, line, ' class="label" text-anchor="end"'),
        );
        const colour =
          row.kind === 'control'
            ? colours.control
            : row.kind === 'reference'
              ? colours.reference
              : row.ratio >= 1
                ? colours.ahead
                : colours.behind;
        const [x1, x2] = [x(1), x(row.ratio)];
        parts.push(
          `<rect class="bar" x="${Math.min(x1, x2).toFixed(1)}" y="${barY}" width="${Math.max(1.5, Math.abs(x2 - x1)).toFixed(1)}" height="13" fill="${colour}"/>`,
        );
        text(
          left + plotWidth + gap,
          barY + 11,
          `${row.ratio.toFixed(row.ratio >= 100 ? 0 : row.ratio >= 10 ? 1 : 2)}×`,
          ' class="ratio" font-weight="bold"',
        );
        row.figures.forEach((line, i) =>
          text(figuresX, barY + 11 + i * lineHeight, line, ' font-size="11" fill="#444"'),
        );
        parts.push('</g>');
        y += rowHeight;
      }
    }
    const plotBottom = y + 4;
    for (const t of ticks)
      text(x(t), plotBottom + 14, `${t >= 1 ? t : t.toString()}×`, ' text-anchor="middle" fill="#555"');
    for (const t of ticks)
      under.push(
        `<line x1="${x(t).toFixed(1)}" x2="${x(t).toFixed(1)}" y1="${plotTop}" y2="${plotBottom}" stroke="${t === 1 ? '#000' : '#ddd'}"${t === 1 ? ' stroke-width="1.5"' : ''}/>`,
      );
    under.push(
      `<rect x="${left}" y="${axisTop}" width="${plotWidth}" height="${plotBottom - axisTop}" fill="none" stroke="#ccc"/>`,
    );
    y = plotBottom + 20;
  }
  const height = y + 12;
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="${font}" font-size="${fontSize}">`,
    '<rect width="100%" height="100%" fill="white"/>',
    ...under,
    ...parts,
    '</svg>',
    '',
  ].join('\n');
}

/** The line under the title, from latest.json's machine facts. */
export function describeMachine(machine: Record<string, unknown> | undefined): string {
  if (!machine) return '';
  const date = typeof machine.date === 'string' ? machine.date.slice(0, 10) : 'unknown date';
  return (
    `npm run bench${machine.quick ? ' -- --quick' : ''} on ${date}: ${String(machine.cpu)}, ${String(machine.cores)} cores, ` +
    `Node.js ${String(machine.node)}. Medians of alternating repetitions; ranges in latest.md.`
  );
}

// Run directly: redraw latest.svg from latest.json.
if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const results = fileURLToPath(new URL('./results/', import.meta.url));
  const report = JSON.parse(readFileSync(`${results}latest.json`, 'utf8')) as {
    machine?: Record<string, unknown>;
    sections: ChartSection[];
  };
  writeFileSync(`${results}latest.svg`, benchChart(report.sections, describeMachine(report.machine)));
  console.log(`Wrote ${results}latest.svg from latest.json`);
}
