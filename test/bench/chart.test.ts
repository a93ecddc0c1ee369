/**
 * The bench report's chart (bench/chart.ts): which rows count as koa-buffer
 * against a peer, that the committed latest.svg is the chart of the
 * committed latest.json, and, drawn by Chromium, that no label is clipped or
 * overlaps another and that controls and ceilings are grey.
 */
import { readFileSync } from 'node:fs';
import test from 'ava';
import { benchChart, describeMachine, kindOf, type ChartSection, type RowKind } from '../../bench/chart.ts';
import type { Row } from '../../bench/lib/harness.ts';
import { chromiumSkipReason } from '../helpers/chromium.ts';
import { launchScriptedChromium } from '../helpers/dashboard.ts';

const results = new URL('../../bench/results/', import.meta.url);
const report = JSON.parse(readFileSync(new URL('latest.json', results), 'utf8')) as {
  machine: Record<string, unknown>;
  sections: ChartSection[];
};

/** The row of latest.json whose figure starts with `figure`, and its section. */
function find(figure: string): [ChartSection, Row] {
  for (const section of report.sections)
    for (const row of section.rows) if (row.figure.startsWith(figure)) return [section, row];
  throw new Error(`no row '${figure}' in latest.json`);
}

test('controls, ceilings and comparisons with no peer are told apart from koa-buffer against a peer', (t) => {
  const kinds: Array<[string, RowKind]> = [
    ['cache hit, 50 KiB page, br client: koa-buffer vs koa-cash', 'peer'],
    ['50 KiB page, gzip, memo off', 'peer'],
    ['RedisLock vs redlock acquire+release, one pair', 'peer'],
    ['control, br: bare Koa vs a second bare Koa', 'control'],
    ['control: FileLock against itself', 'control'],
    ['1024 B control', 'control'],
    ['50 KiB page, br, peers vs bare Koa (ceiling)', 'reference'],
    ['cache hit, 50 KiB page, br client: koa-buffer vs bare Koa precompressed', 'reference'],
    ['acquire + release vs the open+close floor', 'reference'],
    ['get of a 50 KiB entry, against memory', 'reference'],
    ['br 64 KiB, sync vs async', 'reference'],
    ['inline CSS 1657 B → 1401 B', 'reference'],
  ];
  for (const [figure, kind] of kinds) t.is(kindOf(...find(figure)), kind, figure);
});

test('bench/results/latest.svg is the chart of latest.json (npm run bench:chart redraws it)', (t) => {
  const committed = readFileSync(new URL('latest.svg', results), 'utf8');
  t.is(committed, benchChart(report.sections, describeMachine(report.machine)));
});

test('every ratio gets one bar, with its ratio and absolute figures beside it', (t) => {
  const svg = benchChart(report.sections, describeMachine(report.machine));
  const withRatio = report.sections.flatMap((s) => s.rows.filter((r) => r.ratio !== undefined && r.peer));
  t.is(svg.match(/<g class="row"/g)?.length, withRatio.length);
  t.is(svg.match(/<rect class="bar"/g)?.length, withRatio.length);
  // The memo row of whatever run is committed: figures of 100 and more print whole and grouped, ratios of
  // 10 and more with one decimal.
  const [, memo] = find('50 KiB page, br, same bytes per request (memo)');
  t.true(memo.ours.median >= 100 && memo.peer!.median >= 100 && memo.ratio! >= 10, 'the row this check reads');
  const whole = (value: number): string => Math.round(value).toLocaleString('en-US');
  const figures = `${memo.ours.name} ${whole(memo.ours.median)} vs ${memo.peer!.name} ${whole(memo.peer!.median)} req/s`;
  t.true(svg.includes(`>${memo.ratio!.toFixed(1)}×<`) && svg.includes(figures), `the memo row, in full: ${figures}`);
});

type Box = { text: string; x: number; y: number; right: number; bottom: number };

const chromiumTest = chromiumSkipReason === undefined ? test : test.skip;
const skipped = chromiumSkipReason === undefined ? '' : ` (skipped: ${chromiumSkipReason})`;

chromiumTest(
  `drawn by Chromium: nothing clipped, no text over another, controls and ceilings grey${skipped}`,
  async (t) => {
    const svg = benchChart(report.sections, describeMachine(report.machine));
    const browser = await launchScriptedChromium();
    t.teardown(() => browser.close());
    const page = await browser.newPage({ viewport: { width: 800, height: 600 } });
    await page.setContent(`<!doctype html><body style="margin:0">${svg}</body>`);
    // Runs in the page. A string, not a function: tsx would wrap the function's inner
    // functions in a helper (__name) that the page does not have.
    const measured = (await page.evaluate(`(() => {
    const box = (el) => {
      const b = el.getBBox();
      return { x: b.x, y: b.y, right: b.x + b.width, bottom: b.y + b.height };
    };
    const root = document.querySelector('svg');
    const labels = (g) => Array.from(g.querySelectorAll('text.label'));
    return {
      width: Number(root.getAttribute('width')),
      height: Number(root.getAttribute('height')),
      texts: Array.from(document.querySelectorAll('text')).map((el) => ({ text: el.textContent, ...box(el) })),
      rows: Array.from(document.querySelectorAll('g.row')).map((g) => ({
        kind: g.dataset.kind,
        label: labels(g).map((el) => el.textContent).join(' '),
        fill: g.querySelector('rect.bar').getAttribute('fill'),
        labelRight: Math.max(...labels(g).map((el) => box(el).right)),
      })),
      plotLeft: Math.min(...Array.from(document.querySelectorAll('rect.bar')).map((el) => box(el).x)),
    };
  })()`)) as {
      width: number;
      height: number;
      texts: Box[];
      rows: Array<{ kind: string; label: string; fill: string; labelRight: number }>;
      plotLeft: number;
    };
    const texts = measured.texts;
    for (const b of texts)
      t.true(
        b.x >= 0 && b.y >= 0 && b.right <= measured.width && b.bottom <= measured.height,
        `"${b.text}" lies inside the ${measured.width}×${measured.height} chart (${Math.round(b.x)}..${Math.round(b.right)})`,
      );
    const overlaps: string[] = [];
    for (let i = 0; i < texts.length; i++)
      for (let j = i + 1; j < texts.length; j++) {
        const [a, b] = [texts[i]!, texts[j]!];
        // One pixel of slack: glyph boxes of adjacent lines touch.
        if (a.x < b.right - 1 && b.x < a.right - 1 && a.y < b.bottom - 1 && b.y < a.bottom - 1)
          overlaps.push(`"${a.text}" / "${b.text}"`);
      }
    t.deepEqual(overlaps, [], 'no two texts overlap');

    const rows = measured.rows;
    t.is(rows.length, (svg.match(/<g class="row"/g) ?? []).length);
    for (const row of rows) {
      t.true(row.labelRight <= measured.plotLeft, `the label of "${row.label}" ends left of the plot`);
      if (row.kind !== 'peer')
        t.regex(row.fill, /^#([0-9a-f])\1\1\1\1\1$|^#([0-9a-f]{2})\2\2$/i, `"${row.label}" is grey (${row.fill})`);
    }
    const ceiling = rows.find((r) => r.label.includes('peers vs bare Koa (ceiling)'))!;
    t.is(ceiling.kind, 'reference', 'the peers’ gap to bare Koa is not drawn as a koa-buffer result');
  },
);
