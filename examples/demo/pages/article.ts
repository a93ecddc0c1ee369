/**
 * `/article`: an ordinary indented HTML page, to show squashing (white space,
 * comments, link rewriting; `<pre>` kept byte for byte), compression, the
 * ETag and 304 Not Modified. The page is the same for every request to one
 * host, so its ETag is stable and a browser's revalidation gets a 304.
 * `/article?buffer=off` shows what the template wrote.
 */
import type { Context } from 'koa';
import { escapeHtml, layout } from './layout.ts';

const steps: Array<[string, string]> = [
  [
    'Check',
    'Empty bodies, 204/206/304, bodies already encoded and excluded media types are left alone; streams are compressed as they are read. A plain object becomes JSON.',
  ],
  [
    'Optimise',
    'HTML is squashed: white space runs collapse, white space beside block tags goes, comments go. Kept only when smaller.',
  ],
  [
    'Compress',
    'The coding is chosen from Accept-Encoding q-values, ties by server order; small bodies and bodies that would grow are sent as they are.',
  ],
  [
    'Store',
    'A response built behind ctx.bufferIsCached() is stored optimised and uncompressed, so each hit is compressed for its own client.',
  ],
  [
    'Validate',
    'ETag (MD5 of the entity, suffixed by the coding) and Last-Modified are added; a matching If-None-Match gets 304.',
  ],
  ['Send', 'The final bytes go out with the right Content-Length; a HEAD request gets the headers only.'],
];

/** The page for a request to `host` (its absolute links name this host, so the squasher shortens them). */
function article(host: string): string {
  const rows = steps
    .map(
      ([step, what]) => `<tr>
  <th scope="row">${step}</th>
  <td>
    ${escapeHtml(what)}
  </td>
</tr>`,
    )
    .join('\n');
  return layout(
    'What happens to a response',
    `<article>
  <header>
    <h1>What happens to a response</h1>
    <p>
      This page is written the way templates write pages: indented, commented,
      with white space on every line. Compare its size with and without
      <code>Accept-Encoding</code>, then look at the source your browser received.
    </p>
  </header>

  <!-- The steps below are in the order the middleware runs them. -->
  <section>
    <h2>The steps</h2>
    <table>
      <thead>
        <tr>
          <th>Step</th>
          <th>What it does</th>
        </tr>
      </thead>
      <tbody>
        ${rows.replace(/\n/g, '\n        ')}
      </tbody>
    </table>
  </section>

  <section>
    <h2>Pre-formatted text keeps its spaces</h2>
    <p>
      The content of <code>pre</code>, <code>textarea</code>, <code>script</code> and <code>style</code>
      is copied byte for byte:
    </p>
    <pre>
app.use(buffer({ optimiseContent: 1 }));
app.use(async (ctx) => {
    ctx.body = render('article');      // indented HTML in,
});                                    // squashed and compressed out
    </pre>
  </section>

  <section>
    <h2>Links to this site become shorter</h2>
    <p>
      With <code>rewriteLinks</code> on (the default), this absolute link to
      <a href="http://${escapeHtml(host)}/hello">the greeting page</a> was sent as a root-relative one;
      look for <code>href="/hello"</code> in the source.
    </p>
  </section>

  <footer>
    <p>
      <a href="/">Back to the index</a>
    </p>
  </footer>
</article>`,
  );
}

/** Serves the article; `?buffer=off` sends it as the template wrote it, for comparison. */
export function articlePage(ctx: Context): void {
  // 0, false or '' in ctx.state.buffer turns koa-buffer off for this one response.
  if (ctx.query.buffer === 'off') ctx.state.buffer = 0;
  ctx.type = 'html';
  ctx.body = article(ctx.host);
}
