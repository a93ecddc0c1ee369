/**
 * `/report`: a slow page (one second of "work") behind `ctx.bufferIsCached()`.
 *
 * The first request builds it and it is stored in the SQLite cache the
 * workers share; later requests, on either worker, are answered from the
 * cache. Concurrent first requests build it once: the others wait for that
 * build (in the same worker through its flight table, in the other worker
 * through the FileLock in the lock directory). Every build appends one line
 * to a build log in the data directory, and the page prints how many lines
 * the log had when it was built, so a page built once says so.
 */
import { appendFile, readFile } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Context, Middleware } from 'koa';
import { escapeHtml, layout } from './layout.ts';

/** How long the report stays in the cache, in seconds (a per-response override of `cacheDuration`). */
export const reportCacheSeconds = 30;

/** How long building the report takes, in ms. */
const buildMs = 1000;

/** Twelve months of made-up figures, the same for the same URL. */
function figures(seed: string): Array<[string, number]> {
  let x = [...seed].reduce((h, c) => (h * 31 + c.charCodeAt(0)) >>> 0, 7);
  const months = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
  return months.map((month) => {
    x = (x * 1103515245 + 12345) >>> 0;
    return [month, 1000 + (x % 9000)];
  });
}

/**
 * The /report action.
 *
 * @param buildLog - the file each build appends a line to
 */
export function reportPage(buildLog: string): Middleware {
  return async (ctx: Context) => {
    // Access checks (login, country, …) belong here, BEFORE bufferIsCached:
    // a hit answers at once and nothing after this line runs.
    ctx.state.buffer = { cacheDuration: reportCacheSeconds };
    if (await ctx.bufferIsCached()) return; // a hit, or answered from another request's build

    const started = Date.now();
    await sleep(buildMs); // the expensive part
    await appendFile(buildLog, `${new Date(started).toISOString()} pid=${process.pid} ${ctx.url}\n`);
    const builds = (await readFile(buildLog, 'utf8')).split('\n').filter(Boolean).length;

    const rows = figures(ctx.url)
      .map(
        ([month, sales]) => `<tr>
  <td>${month}</td>
  <td>${sales}</td>
</tr>`,
      )
      .join('\n');
    ctx.type = 'html';
    ctx.body = layout(
      'Monthly report',
      `<h1>Monthly report</h1>
<p id="build">
  Built by worker <strong id="builder">${process.pid}</strong>
  at <time>${new Date(started).toISOString()}</time>
  in ${Date.now() - started} ms.
  This was build number <strong id="build-number">${builds}</strong> of a report
  since the data directory was made.
</p>
<p>
  It stays in the cache for ${reportCacheSeconds} seconds: reload within that time and this
  paragraph does not change, whichever worker answers (see <code>X-Worker</code>),
  and <code>X-Cache</code> says <code>HIT</code>. A new query string, such as
  <a href="/report?run=${Date.now()}">${escapeHtml(`/report?run=${Date.now()}`)}</a>, is a new cache key.
</p>
<table>
  <thead>
    <tr>
      <th>Month</th>
      <th>Sales</th>
    </tr>
  </thead>
  <tbody>
    ${rows.replace(/\n/g, '\n    ')}
  </tbody>
</table>`,
    );
  };
}
