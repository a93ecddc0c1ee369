/**
 * `/live`: a page that changes every three seconds (a clock and a moving
 * list of figures), offered to browsers as a compression dictionary. A
 * browser that has the previous version names it in `Available-Dictionary`
 * and gets the next one as `Content-Encoding: dcz`: only what changed.
 *
 * The page reloads itself every three seconds and shows, from the browser's
 * Resource Timing, the bytes that came over the wire against the bytes of
 * the page. The dictionaries are kept by every worker in its memory and in
 * the SQLite cache the two share, so a worker that did not send the
 * previous version can still answer with the difference.
 *
 * Chromium uses a page as a dictionary only while it is fresh in its HTTP
 * cache, hence `Cache-Control: max-age=30` here (a reload revalidates
 * anyway; never `private`, which no dictionary may be); the rule's `ttl`
 * says the same to browsers that know that parameter.
 */
import type { Context } from 'koa';
import { layout } from './layout.ts';

/** The rule `buffer()` is given for this page. */
export const liveDictionary = { match: '/live', ttl: '1 hour' };

/** Seconds between versions of the page. */
const period = 3;

/** Rows of figures that shift by one every version, so most of the page stays as it was. */
function figures(version: number): string {
  const rows: string[] = [];
  for (let i = 0; i < 60; i++) {
    const n = version + i;
    rows.push(
      `<tr><td>Sensor ${(n % 97) + 1}</td><td>${((n * 7919) % 1000) / 10} °C</td><td>${(n * 104729) % 9973} hPa</td><td>${n % 3 === 0 ? 'steady' : n % 3 === 1 ? 'rising' : 'falling'}</td></tr>`,
    );
  }
  return rows.join('\n');
}

/** Reads the navigation's Resource Timing: the bytes over the wire against the page's own bytes. */
const script = `
const entry = performance.getEntriesByType('navigation')[0];
const out = document.getElementById('saved');
if (entry && entry.decodedBodySize > 0) {
  const coding = entry.contentEncoding ? ' (' + entry.contentEncoding + ')' : '';
  const saved = 100 - (100 * entry.encodedBodySize) / entry.decodedBodySize;
  out.textContent = 'This load: ' + entry.encodedBodySize + ' bytes over the wire' + coding + ' for ' +
    entry.decodedBodySize + ' bytes of page, ' + saved.toFixed(1) + '% saved.';
}
setTimeout(() => location.reload(), ${period * 1000});
`;

/** The /live action. */
export function livePage(ctx: Context): void {
  const version = Math.floor(Date.now() / 1000 / period);
  ctx.type = 'html';
  ctx.set('Cache-Control', 'max-age=30');
  ctx.body = layout(
    'Live figures',
    `<h1>Live figures</h1>
<p>Version <strong>${version}</strong>, built at <time>${new Date(version * period * 1000).toISOString()}</time>. The page changes every ${period} seconds and reloads itself.</p>
<p id="saved">Reload once: the first load has no dictionary yet.</p>
<p>
  Every version is offered as a compression dictionary (<code>Use-As-Dictionary</code>). Your browser names the one it
  holds in <code>Available-Dictionary</code>, and the next version comes back as <code>Content-Encoding: dcz</code>:
  zstd with the previous version as its dictionary, so only the differences travel.
</p>
<table>
<thead><tr><th>Sensor</th><th>Temperature</th><th>Pressure</th><th>Trend</th></tr></thead>
<tbody>
${figures(version)}
</tbody>
</table>
<script>${script}</script>`,
  );
}
