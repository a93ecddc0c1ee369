/**
 * `/`: the index. It says, in the page itself, what each page demonstrates,
 * which response headers to look at, and a curl line for each. It is an
 * indented page like the others, so it is squashed and compressed too.
 */
import type { Context } from 'koa';
import { capabilities } from '../capabilities.ts';
import { dashboardPanel } from './dashboard.ts';
import { escapeHtml, layout } from './layout.ts';

const pages: Array<[path: string, title: string]> = [
  ['/article', 'An indented HTML page'],
  ['/api/products', 'A JSON API'],
  ['/report', 'A slow report behind the cache'],
  ['/stale', 'A slow page answered stale while it is rebuilt'],
  ['/hello', 'A page per language'],
  ['/download', 'A streamed download'],
  ['/live', 'A page that changes every few seconds'],
];

const headerNotes: Array<[string, string]> = [
  ['Content-Encoding', 'br, zstd or gzip when the body was compressed for you; absent when it was sent as it is.'],
  [
    'Vary',
    'Accept-Encoding on every compressible response, so caches keep the codings apart; /hello adds Accept-Language and Cookie.',
  ],
  [
    'ETag',
    'The MD5 of the squashed, uncompressed page, with -br, -zstd or -gzip after it for a compressed one. Send it back in If-None-Match for a 304.',
  ],
  [
    'Last-Modified',
    "The newest modification time of the demo's script and page files. Pages with an ETag are validated by the ETag alone, unless trustLastModified is on.",
  ],
  [
    'Cache-Control',
    'no-cache, added by koa-buffer beside a Last-Modified it generated: without it a browser would keep the page for a tenth of its age without asking. Your own Cache-Control or Expires is kept.',
  ],
  [
    'X-Cache',
    'MISS when the request built the page, HIT when it was answered from the cache or from a build another request made.',
  ],
  [
    'Cache-Status',
    'The same in RFC 9211 form: hit with the seconds left, fwd=miss; stored, or fwd=miss; collapsed for a request that waited for another one.',
  ],
  ['X-Worker', 'Which of the two worker processes answered (set by the demo, not by koa-buffer).'],
];

/** The index for a request whose origin is `base`. */
function index(base: string): string {
  const sections = pages
    .map(([path, title]) => {
      const shown = capabilities.filter((c) => c.path === path);
      const items = shown
        .map(
          (c) => `<li>
  <strong>${escapeHtml(c.name)}.</strong>
  ${escapeHtml(c.explains)}
  Look at: ${c.headers.map((h) => `<code>${h}</code>`).join(', ')}.
  <pre>${escapeHtml(c.curl(base))}</pre>
</li>`,
        )
        .join('\n');
      return `<section>
  <h2><a href="${path}">${escapeHtml(path)}</a>: ${escapeHtml(title)}</h2>
  <ul>
    ${items.replace(/\n/g, '\n    ')}
  </ul>
</section>`;
    })
    .join('\n\n');
  const notes = headerNotes
    .map(
      ([name, note]) => `<dt><code>${name}</code></dt>
<dd>${escapeHtml(note)}</dd>`,
    )
    .join('\n');
  return layout(
    'Index',
    `<h1>koa-buffer demo</h1>
<p>
  Two worker processes (<code>node:cluster</code>) serve this site through one
  <code>buffer({ optimiseContent: 1, cache: 'sqlite:…', cacheLockDir: '…' })</code>:
  every page is squashed, compressed and given an ETag, and the slow ones are
  kept in a SQLite cache the workers share, built by one request at a time.
  Open your browser's network panel, or use the curl lines below.
</p>

${dashboardPanel()}

${sections}

<section>
  <h2>The headers to look at</h2>
  <dl>
    ${notes.replace(/\n/g, '\n    ')}
  </dl>
</section>`,
  );
}

/** Serves the index. */
export function indexPage(ctx: Context): void {
  ctx.type = 'html';
  ctx.body = index(`${ctx.protocol}://${ctx.host}`);
}
