/**
 * The live panel on the index: the browser itself requests the demo's pages
 * and shows what came back (status, coding, bytes on the wire against the
 * page's size, cache verdict, worker, time), draws the bytes saved as bars
 * and the latencies as a strip chart, and has buttons that fire a set of
 * requests, such as a stampede of 20 at a report nobody has built yet.
 *
 * What the panel requests is data: {@link liveRequests} and
 * {@link panelButtons} below. A new capability adds its row or its button
 * here in one line; the script (public/dashboard.js) knows nothing of the
 * pages. The panel reads the build log through `/api/builds` to count how
 * many times the report's action really ran.
 *
 * Under the requests, the panel shows what koa-buffer itself counted, both
 * workers' `mw.stats()` summed, polled from `/api/stats` every second
 * (../metrics.ts): hit ratio, outcomes, builds, waiters, bytes saved per
 * coding and how full each memory budget is.
 */
import { readFileSync } from 'node:fs';
import type { Context, Middleware } from 'koa';
import { metricsPath, statsPath } from '../metrics.ts';
import { readBuilds } from './builds.ts';
import { escapeHtml } from './layout.ts';

/** One request the panel makes. */
export interface PanelRequest {
  /** The path and query; `{fresh}` is replaced by a value new to each press, so the URL is a cold cache key. */
  path: string;
  /** What the row is called in the panel. */
  label: string;
  /** Request method (GET when absent). */
  method?: string;
}

/** A button of the panel: a set of requests sent together, shown as their own table. */
export interface PanelButton {
  id: string;
  label: string;
  /** One sentence under the button (plain text). */
  explains: string;
  requests: PanelRequest[];
  /** Send them all at once (else one after another). */
  concurrent?: boolean;
  /** Ask /api/builds how many times the action ran for this URL (after `{fresh}` is replaced). */
  countBuildsOf?: string;
}

/** What the panel fetches on load and on "Fetch again", in order. */
export const liveRequests: readonly PanelRequest[] = [
  { label: 'index', path: '/' },
  { label: 'article', path: '/article' },
  { label: 'article, koa-buffer off', path: '/article?buffer=off' },
  { label: 'JSON API', path: '/api/products' },
  { label: 'style sheet', path: '/style.css' },
  { label: 'report (cached 30 s)', path: '/report' },
  { label: 'report again', path: '/report' },
  { label: 'greeting', path: '/hello' },
  { label: 'streamed download', path: '/download' },
];

/** Where the panel reads the workers' counters, and how often. */
export const countersPoll = { path: statsPath, everyMs: 1000 } as const;

/** Response headers shown in a column of their own when any response has them. */
export const extraHeaders: readonly string[] = ['Cache-Control'];

const stampedePath = '/report?stampede={fresh}';

/** The buttons under the table; a later capability (purge, stale-while-revalidate, …) adds one entry. */
export const panelButtons: readonly PanelButton[] = [
  {
    id: 'stampede',
    label: 'Stampede: 20 requests at a cold report',
    explains:
      'Twenty requests at once for a report URL nobody has asked for yet. One of them builds it (one second); ' +
      'the others, on either worker, wait for that build. Your browser opens at most six connections to one host, ' +
      'so the last fourteen queue in the browser and arrive once the report is stored.',
    requests: Array.from({ length: 20 }, (_, i) => ({ label: `request ${i + 1}`, path: stampedePath })),
    concurrent: true,
    countBuildsOf: stampedePath,
  },
  {
    id: 'stale',
    label: 'Stale while revalidate: 10 requests at a slow page',
    explains:
      'Ten requests at once for /stale, a one-second page fresh for 5 seconds and then answered stale for up to ' +
      'a minute. Past its 5 seconds they are all answered at once (X-Cache: STALE) while one worker rebuilds it in ' +
      'the background: press again every few seconds and the build count grows by one per expiry, not per request.',
    requests: Array.from({ length: 10 }, (_, i) => ({ label: `request ${i + 1}`, path: '/stale' })),
    concurrent: true,
    countBuildsOf: '/stale',
  },
];

/** The panel's HTML, placed on the index; the script fills it in. */
export function dashboardPanel(): string {
  const config = JSON.stringify({ liveRequests, panelButtons, extraHeaders, counters: countersPoll }).replace(
    /</g,
    '\\u003c',
  );
  const buttons = panelButtons
    .map(
      (b) => `<div class="panel-action" id="action-${escapeHtml(b.id)}">
  <p>
    <button type="button" data-action="${escapeHtml(b.id)}">${escapeHtml(b.label)}</button>
    ${escapeHtml(b.explains)}
  </p>
  <div class="panel-result" data-result="${escapeHtml(b.id)}"></div>
</div>`,
    )
    .join('\n');
  return `<section id="dashboard" data-state="idle">
  <h2>Live: what your browser just received</h2>
  <p>
    Your browser fetched each page below itself, past its own cache (<code>cache: 'no-store'</code>)
    but not past the server's (koa-buffer ignores the <code>Cache-Control: no-cache</code> such a fetch
    sends, unless <code>cacheRequestNoCache</code> says otherwise), and read the sizes from Resource Timing:
    <em>wire</em> is the body as sent (<code>encodedBodySize</code>, headers left out), <em>page</em>
    the body once decoded (<code>decodedBodySize</code>).
    <button type="button" data-action="refresh">Fetch again</button>
  </p>
  <noscript><p>The panel needs JavaScript; the sections below say the same in words.</p></noscript>
  <div class="panel-table" data-result="refresh"></div>
  <h3>Bytes on the wire against the page</h3>
  <div class="panel-bars" id="dashboard-bars"></div>
  <h3>How long each request took</h3>
  <div class="panel-strip" id="dashboard-strip"></div>
  ${buttons.replace(/\n/g, '\n  ')}
  <h3>What koa-buffer counted, both workers, live</h3>
  <p>
    Each worker's <code>mw.stats()</code>, added up by the cluster's primary (<code>clusterStats()</code>) and read
    from <a href="${statsPath}"><code>${statsPath}</code></a> every second; the same counters, as Prometheus text, are at
    <a href="${metricsPath}"><code>${metricsPath}</code></a>. The panel's requests above count too; these polls do not.
  </p>
  <div class="panel-counters" id="dashboard-counters" data-state="waiting"><p>Waiting for the first reading…</p></div>
  <script type="application/json" id="dashboard-config">${config}</script>
  <script type="module" src="/dashboard.js"></script>
</section>`;
}

/** The panel's own styles, appended to the site's style sheet. */
export const dashboardStyle = `#dashboard {
  position: relative;
  left: 50%;
  transform: translateX(-50%);
  width: min(64rem, 100vw - 2rem);
  box-sizing: border-box;
  padding: 0 .5rem;
}
#dashboard table {
  font-size: 14px;
  width: 100%;
}
#dashboard td.num {
  text-align: right;
  white-space: nowrap;
  font-variant-numeric: tabular-nums;
}
#dashboard .bar-row {
  display: grid;
  grid-template-columns: 12rem 1fr 14rem;
  gap: .5rem;
  align-items: center;
  font-size: 14px;
  margin: .2rem 0;
}
#dashboard .bar-track {
  position: relative;
  height: 1rem;
  background: #e3e3e3;
}
#dashboard .bar-wire {
  position: absolute;
  inset: 0 auto 0 0;
  background: #2e7d32;
}
#dashboard .legend span {
  display: inline-block;
  width: .8rem;
  height: .8rem;
  vertical-align: middle;
  margin: 0 .3rem 0 .8rem;
}
#dashboard button {
  font: inherit;
  margin-right: .5rem;
}
#dashboard .panel-action {
  border-top: 1px solid #ddd;
  margin-top: 1rem;
}
#dashboard .verdict {
  font-weight: bold;
}
#dashboard .counter-tables {
  display: flex;
  flex-wrap: wrap;
  gap: 0 1.5rem;
}
#dashboard .panel-counters table {
  width: auto;
  margin-bottom: .5rem;
}
#dashboard caption {
  text-align: left;
  font-weight: bold;
  white-space: nowrap;
}
#dashboard .changed {
  background: #fff3b0;
}
`;

/** Serves the panel's script, read once when the worker starts. */
export function dashboardScript(): Middleware {
  const script = readFileSync(new URL('../public/dashboard.js', import.meta.url), 'utf8');
  return (ctx: Context) => {
    ctx.type = 'js';
    ctx.body = script;
  };
}

/**
 * `/api/builds?url=/report?x=1`: the builds of that report URL in the build
 * log, `{ url, builds: [{ at, worker }] }`, so the panel counts real runs of
 * the action rather than trusting a header.
 *
 * @param buildLog - the file every build appends a line to
 */
export function buildsApi(buildLog: string): Middleware {
  return async (ctx: Context) => {
    const url = ctx.query.url;
    if (typeof url !== 'string' || !url.startsWith('/')) {
      ctx.status = 400;
      ctx.body = { error: 'url must be one path starting with /, e.g. /api/builds?url=/report' };
      return;
    }
    ctx.set('Cache-Control', 'no-store');
    ctx.body = { url, builds: await readBuilds(buildLog, url) };
  };
}
