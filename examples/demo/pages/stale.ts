/**
 * `/stale`: stale-while-revalidate. A slow page (one second of "work") whose
 * own `Cache-Control` says how the server cache keeps it: fresh for
 * `s-maxage` seconds, then answered stale for up to
 * `stale-while-revalidate` seconds while one background refresh, on one
 * worker, builds the next version. No visitor waits for that build: every
 * request is answered at hit speed, with `X-Cache: STALE` while the refresh
 * runs, and the build log (as /report keeps it) grows by one line per
 * expiry, however many requests came.
 */
import { appendFile, readFile } from 'node:fs/promises';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Context, Middleware } from 'koa';
import { layout } from './layout.ts';

/** Seconds the page is fresh, then seconds it may be answered stale while it is rebuilt. */
export const staleFreshSeconds = 5;
export const staleWindowSeconds = 60;

/** How long building the page takes, in ms. */
const buildMs = 1000;

/**
 * The /stale action.
 *
 * @param buildLog - the file each build appends a line to
 */
export function stalePage(buildLog: string): Middleware {
  return async (ctx: Context) => {
    if (await ctx.bufferIsCached()) return; // fresh, or stale and refreshed in the background

    const started = Date.now();
    await sleep(buildMs); // the expensive part
    await appendFile(buildLog, `${new Date(started).toISOString()} pid=${process.pid} ${ctx.url}\n`);
    const builds = (await readFile(buildLog, 'utf8')).split('\n').filter((line) => line.endsWith(` ${ctx.url}`));
    // The server cache reads these (RFC 5861); a browser's own cache only honours stale-while-revalidate.
    ctx.set('Cache-Control', `s-maxage=${staleFreshSeconds}, stale-while-revalidate=${staleWindowSeconds}`);
    ctx.type = 'html';
    ctx.body = layout(
      'Stale while revalidate',
      `<h1>Stale while revalidate</h1>
<p id="build">
  Built by worker <strong id="builder">${process.pid}</strong>
  at <time>${new Date(started).toISOString()}</time>
  in ${Date.now() - started} ms: build number <strong id="build-number">${builds.length}</strong> of this page.
</p>
<p>
  Fresh for ${staleFreshSeconds} seconds (<code>s-maxage=${staleFreshSeconds}</code>): reloads say
  <code>X-Cache: HIT</code>. After that, for up to ${staleWindowSeconds} seconds
  (<code>stale-while-revalidate=${staleWindowSeconds}</code>), the first reload is answered at once
  with this page, <code>X-Cache: STALE</code> and <code>Cache-Status: koa-buffer; hit; fwd=stale; ttl=-N</code>,
  while one worker builds the next version in the background; reload a second later and the build number
  has gone up by one, however many requests came in between.
</p>`,
    );
  };
}
