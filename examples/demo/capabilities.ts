/**
 * What the demo shows, one entry per capability: the page, what to look at,
 * and a `curl` line that shows it. The primary prints the curl lines when it
 * starts and the index page lists the same entries, so the two never disagree.
 */

/** One capability of koa-buffer and where the demo shows it. */
export interface Capability {
  /** Short name, as printed on the terminal. */
  name: string;
  /** The page that shows it. */
  path: string;
  /** One or two sentences for the index page (plain text). */
  explains: string;
  /** Response headers worth looking at. */
  headers: string[];
  /** A shell command that shows it, against `base` (e.g. `http://127.0.0.1:3000`). */
  curl: (base: string) => string;
}

/** Every capability the demo shows, in the order the terminal and the index list them. */
export const capabilities: readonly Capability[] = [
  {
    name: 'HTML squashing',
    path: '/article',
    explains:
      'An indented HTML page sent with its indentation squashed away: runs of white space become one character, ' +
      'white space between block tags goes, comments go, and the <pre> block keeps every space. ' +
      'Its absolute link to this site becomes root-relative. Compare with /article?buffer=off, which turns koa-buffer off for ' +
      'that one response (ctx.state.buffer = 0) and so is sent as the template wrote it.',
    headers: ['Content-Length'],
    curl: (base) =>
      `curl -s ${base}/article | head -c 700; echo; curl -s '${base}/article?buffer=off' | head -c 400; echo`,
  },
  {
    name: 'compression (br, zstd, gzip)',
    path: '/article',
    explains:
      'The same page compressed for the client by its Accept-Encoding q-values, ties going to the server order br, zstd, gzip. ' +
      'The ETag is the MD5 of the squashed page with the coding as a suffix.',
    headers: ['Content-Encoding', 'Vary', 'ETag', 'Content-Length'],
    curl: (base) => `curl -s -o /dev/null -D - -H 'Accept-Encoding: br' ${base}/article`,
  },
  {
    name: 'ETag and 304 Not Modified',
    path: '/article',
    explains:
      'Ask again with the ETag you were given (If-None-Match) and the answer is 304 Not Modified, with no body. ' +
      'Cache-Control: no-cache makes browsers ask every time instead of guessing a freshness from Last-Modified.',
    headers: ['ETag', 'Last-Modified', 'Cache-Control'],
    curl: (base) =>
      `curl -s -o /dev/null --etag-save /tmp/kb-demo.etag ${base}/article && curl -si --etag-compare /tmp/kb-demo.etag ${base}/article`,
  },
  {
    name: 'JSON API',
    path: '/api/products',
    explains:
      'The action returns a plain object; koa-buffer serialises it to JSON itself, so it is compressed and gets an ETag like any page.',
    headers: ['Content-Type', 'Content-Encoding', 'ETag'],
    curl: (base) => `curl -s -D - --compressed ${base}/api/products | head -c 700; echo`,
  },
  {
    name: 'server-side cache',
    path: '/report',
    explains:
      'A report that takes one second to build, behind ctx.bufferIsCached(). The first request builds it (X-Cache: MISS), ' +
      'the next ones are answered from the SQLite cache the two workers share (X-Cache: HIT) for 30 seconds. Run the command twice.',
    headers: ['X-Cache', 'Cache-Status', 'X-Worker'],
    curl: (base) =>
      `curl -s -o /dev/null -w '%header{x-cache} %header{cache-status} in %{time_total}s\\n' ${base}/report`,
  },
  {
    name: 'single flight across workers',
    path: '/report',
    explains:
      'Six requests at once for a report nobody has built yet (a new query string is a new cache key): one builds it, ' +
      'the others, on either worker, wait for it and are answered from it. The page says how many builds there have been.',
    headers: ['X-Cache', 'Cache-Status', 'X-Worker'],
    curl: (base) =>
      `seq 6 | xargs -P6 -I{} curl -s -o /dev/null -w '%header{x-cache} %header{x-worker} in %{time_total}s\\n' "${base}/report?run=$(date +%s)"`,
  },
  {
    name: 'stale while revalidate',
    path: '/stale',
    explains:
      'A one-second page fresh for 5 seconds (its own Cache-Control: s-maxage=5, stale-while-revalidate=60). ' +
      'After that every request is answered at once with the stale page (X-Cache: STALE) while one worker rebuilds it ' +
      'in the background: one build per expiry, however many requests. Run the command, wait 6 seconds, run it twice more.',
    headers: ['X-Cache', 'Cache-Status', 'Cache-Control'],
    curl: (base) =>
      `seq 6 | xargs -P6 -I{} curl -s -o /dev/null -w '%header{x-cache} %header{cache-status} in %{time_total}s\\n' ${base}/stale`,
  },
  {
    name: 'a page per language (varyBy)',
    path: '/hello',
    explains:
      "A greeting in the visitor's language, from a lang cookie or else Accept-Language. It is cached with " +
      "varyBy ['cookie', 'accept-language'], so each language is its own cache entry.",
    headers: ['Vary', 'Content-Language', 'X-Cache'],
    curl: (base) =>
      `curl -si -H 'Accept-Language: fr-CH, fr;q=0.9' ${base}/hello; echo; curl -si -b lang=de ${base}/hello`,
  },
  {
    name: 'streamed download, compressed as a stream',
    path: '/download',
    explains:
      'A file sent as a stream: koa-buffer never holds it in memory; it is compressed as it is read, chunked, with the weak ETag koa-etag would give a file, and a 304 for a matching If-None-Match.',
    headers: ['Transfer-Encoding', 'Content-Encoding', 'ETag', 'Content-Disposition'],
    curl: (base) => `curl -s -o /dev/null -D - -H 'Accept-Encoding: br' ${base}/download`,
  },
  {
    name: 'compression dictionaries (dcz)',
    path: '/live',
    explains:
      'A page that changes every three seconds, offered as a compression dictionary (Use-As-Dictionary). ' +
      'A browser that holds the previous version names it (Available-Dictionary) and gets the next as dcz: zstd with the old page ' +
      'as dictionary, a few hundred bytes instead of kilobytes. Open it in Chrome or Edge; the page shows the bytes it saved.',
    headers: ['Use-As-Dictionary', 'Content-Encoding', 'Vary'],
    curl: (base) =>
      `curl -s ${base}/live -o /tmp/kb-live.html && curl -s -o /dev/null -D - -H 'Accept-Encoding: dcz, zstd' -H "Available-Dictionary: :$(openssl dgst -sha256 -binary /tmp/kb-live.html | base64):" ${base}/live`,
  },
];
