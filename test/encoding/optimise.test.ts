/**
 * OPTIMISE over real HTTP: level 1 squashes HTML (and only HTML), link
 * rewriting gets the request's host with its port and its path, level 2
 * minifies inline CSS and JavaScript with the measured minifier choice, a
 * minifier failure leaves the block as it was, and replayed entries are not
 * optimised again. Also the hooks the server-side cache builds on.
 */
import test from 'ava';
import { buffer } from '../../src/buffer.ts';
import { readEntry } from '../../src/cache/entry.ts';
import { squashHtml } from '../../src/native/exports.ts';
import { inlineCss, inlineJs } from '../../support/inline-blocks.ts';
import { decode, recordingLogger, serve } from '../helpers/serve.ts';

const html = `<!DOCTYPE html>
<html>
  <head>
    <title>  Optimise  </title>
    <style>${inlineCss}</style>
  </head>
  <body>
    <div>
      <p>Some    text   with    spaces</p>
      <pre>  keep
     this  </pre>
    </div>
    <script>${inlineJs}</script>
    <script type="application/json">{ "keep" :   "as is" }</script>
    <script src="/app.js"></script>
  </body>
</html>
`;

function between(body: string, open: string, close: string): string[] {
  const out: string[] = [];
  let at = body.indexOf(open);
  while (at !== -1) {
    const start = body.indexOf('>', at) + 1;
    const end = body.indexOf(close, start);
    out.push(body.slice(start, end));
    at = body.indexOf(open, end);
  }
  return out;
}

test('level 1 squashes HTML exactly as squashHtml does, and leaves inline CSS/JS alone', async (t) => {
  const server = await serve(t, [
    buffer({ optimiseContent: 1, rewriteLinks: false }),
    (ctx) => {
      ctx.body = html;
    },
  ]);
  const response = await server.request('/', { headers: { 'accept-encoding': 'gzip' } });
  const body = decode(response);
  t.true(body.equals(squashHtml(html, { level: 1 })), 'the bytes of squashHtml level 1');
  t.true(body.length < Buffer.byteLength(html));
  t.true(body.toString().includes(inlineJs), 'the script is untouched at level 1');
  t.true(body.toString().includes('<pre>  keep\n     this  </pre>'), 'pre is untouched');
});

test('only text/html and application/xhtml+xml are optimised', async (t) => {
  const server = await serve(t, [
    buffer({ optimiseContent: 1 }),
    (ctx) => {
      ctx.type = decodeURIComponent(ctx.path.slice(1));
      ctx.body = html;
    },
  ]);
  for (const type of ['text/html', 'application/xhtml+xml']) {
    t.true(
      (await server.request(`/${encodeURIComponent(type)}`)).body.length < Buffer.byteLength(html),
      `${type} is optimised`,
    );
  }
  for (const type of ['text/plain', 'application/xml', 'text/css']) {
    t.is((await server.request(`/${encodeURIComponent(type)}`)).body.toString(), html, `${type} is not`);
  }
});

test('links are rewritten with the request’s host (with its port) and path', async (t) => {
  const server = await serve(t, [
    buffer({ optimiseContent: 1 }),
    (ctx) => {
      const self = `http://${ctx.host}`;
      ctx.body = `<html><body><a href="${self}/docs/a?x=1">a</a> <a href="${self}${ctx.path}?page=2">next</a> <img src="//${ctx.host}/logo.png"> <a href="http://other.example/x">other</a></body></html>`;
    },
  ]);
  const body = (await server.request('/list')).body.toString();
  t.true(body.includes('<a href="/docs/a?x=1">'), `an absolute link to this host becomes root-relative: ${body}`);
  t.true(body.includes('<a href="?page=2">'), 'a link to this path with a query becomes the query');
  t.true(body.includes('<img src="/logo.png">'), 'a protocol-relative link too');
  t.true(body.includes('http://other.example/x'), 'other hosts are kept');
  const kept = await serve(t, [
    buffer({ optimiseContent: 1, rewriteLinks: false }),
    (ctx) => {
      ctx.body = `<a href="http://${ctx.host}/x">x</a>`;
    },
  ]);
  t.regex(
    (await kept.request('/')).body.toString(),
    /href="http:\/\/127\.0\.0\.1:\d+\/x"/,
    'rewriteLinks: false keeps them',
  );
});

test('level 2 minifies inline CSS and JavaScript, and only those', async (t) => {
  const server = await serve(t, [
    buffer({ optimiseContent: 2, rewriteLinks: false }),
    (ctx) => {
      ctx.body = html;
    },
  ]);
  const body = decode(await server.request('/', { headers: { 'accept-encoding': 'br' } })).toString();
  const level1 = squashHtml(html, { level: 1 }).toString();
  t.true(body.length < level1.length, `level 2 (${body.length}) is smaller than level 1 (${level1.length})`);
  const [style] = between(body, '<style', '</style>');
  t.true(style!.length < inlineCss.length && !style!.includes('\n'), 'the style block is minified');
  t.true(style!.includes('--accent:#0a66c2'), 'and still says the same');
  const scripts = between(body, '<script', '</script>');
  t.true(scripts[0]!.length < inlineJs.length, 'the script is minified');
  t.true(scripts[0]!.includes('basket-v1') && scripts[0]!.includes('data-add-to-basket'), 'its strings are kept');
  t.is(scripts[1], '{ "keep" :   "as is" }', 'a JSON script is not JavaScript: untouched');
  t.is(scripts[2], '', 'a script with src stays empty');
  t.true(body.includes('<pre>  keep\n     this  </pre>'));
});

test('level 2 keeps the global names a classic script defines', async (t) => {
  const server = await serve(t, [
    buffer({ optimiseContent: 2 }),
    (ctx) => {
      ctx.body =
        '<html><body><script>var counterValue = 1;   function incrementCounter() { counterValue = counterValue + 1; return counterValue; }</script><button onclick="incrementCounter()">+</button></body></html>';
    },
  ]);
  const body = (await server.request('/')).body.toString();
  t.true(body.includes('incrementCounter') && body.includes('counterValue'), `top-level names survive: ${body}`);
});

test('a block the minifier cannot parse is left as it was, and the failure is logged', async (t) => {
  const logger = recordingLogger();
  const broken = 'function (  { this is not javascript';
  const server = await serve(t, [
    buffer({ optimiseContent: 2, logger }),
    (ctx) => {
      ctx.body = `<html><body><script>${broken}</script><style>a { color: red;   }</style></body></html>`;
    },
  ]);
  const body = (await server.request('/')).body.toString();
  t.true(body.includes(`<script>${broken}</script>`), 'the broken script is byte-identical');
  t.true(
    body.includes('a{color:red}') || body.includes('a{color:red;}'),
    `the style beside it is still minified: ${body}`,
  );
  t.is(logger.count(/minifying an inline JavaScript block failed; left as it was/), 1);
});

test('a block that is not UTF-8 is left as it was', async (t) => {
  const latin1 = Buffer.concat([
    Buffer.from('<html><body><script>var caf = "caf'),
    Buffer.from([0xe9]),
    Buffer.from('";   var  x = 1;</script></body></html>'),
  ]);
  const server = await serve(t, [
    buffer({ optimiseContent: 2 }),
    (ctx) => {
      ctx.type = 'text/html; charset=iso-8859-1';
      ctx.body = latin1;
    },
  ]);
  const body = (await server.request('/')).body;
  t.true(body.includes(Buffer.from([0x63, 0x61, 0x66, 0xe9])), 'the byte 0xE9 is kept');
  t.true(body.includes(Buffer.from('";   var  x = 1;')), 'the block is untouched');
});

test('an optimisation that does not shrink the page is dropped', async (t) => {
  const tight = '<p>x</p>';
  const server = await serve(t, [
    buffer({ optimiseContent: 2 }),
    (ctx) => {
      ctx.body = tight;
    },
  ]);
  t.is((await server.request('/')).body.toString(), tight);
});

/** A Map used as the cache store, counting the entries written to it under cache keys (not the start-up probe's). */
class CountingStore extends Map<string, unknown> {
  writes = 0;
  override set(key: string, value: unknown): this {
    if (key.startsWith('buffer:') && 'entry' in readEntry(value)) this.writes++;
    return super.set(key, value);
  }
}

/** Waits until `done()` holds: an entry is written after its response is sent. */
async function until(done: () => boolean): Promise<void> {
  for (let i = 0; i < 200 && !done(); i++) await new Promise((resolve) => setTimeout(resolve, 10));
}

test('a replayed entry is not optimised again, and is not stored again', async (t) => {
  const store = new CountingStore();
  const server = await serve(t, [
    buffer({ optimiseContent: 1, cache: store, varyBy: [] }),
    async (ctx) => {
      if (await ctx.bufferIsCached()) return;
      ctx.state.buffer = { optimiseContent: 0 }; // the entry is built as it is, not squashed
      ctx.body = html;
    },
  ]);
  t.is((await server.request('/replayed')).body.toString(), html);
  await until(() => store.writes === 1);
  t.is(store.writes, 1, 'the build was stored');
  const hit = await server.request('/replayed');
  t.is(hit.headers['x-cache'], 'HIT');
  t.is(hit.body.toString(), html, 'not squashed: it was optimised (here: not) when it was built');
  await new Promise((resolve) => setTimeout(resolve, 50));
  t.is(store.writes, 1, 'a replayed entry is not stored');
});

test('STORE hands over the optimised, uncompressed entity with status and headers, before VALIDATE', async (t) => {
  const store = new CountingStore();
  const server = await serve(t, [
    buffer({ optimiseContent: 1, rewriteLinks: false, cache: store, varyBy: [] }),
    async (ctx) => {
      if (await ctx.bufferIsCached()) return;
      ctx.set('X-Custom', 'yes');
      ctx.body = html;
    },
  ]);
  const response = await server.request('/', { headers: { 'accept-encoding': 'br', 'if-none-match': '*' } });
  t.is(response.status, 304, 'the client got its 304');
  await until(() => store.writes === 1);
  t.is(store.writes, 1, 'stored even though VALIDATE answered 304');
  const read = readEntry([...store].find(([key]) => key.startsWith('buffer:'))?.[1]);
  if (!('entry' in read)) return t.fail('no entry in the store');
  const stored = read.entry;
  t.is(stored.status, 200);
  t.true(stored.body.equals(squashHtml(html, { level: 1 })), 'the optimised, uncompressed entity');
  t.is(stored.headers['x-custom'], 'yes');
  t.is(stored.headers['content-type'], 'text/html; charset=utf-8');
  t.is(stored.headers['content-encoding'], undefined, 'no representation headers');
  t.is(stored.headers.etag, undefined, 'the ETag is made per representation, after STORE');
});

test('FINISH runs after SEND, and also when the action throws: the lock of a build is released', async (t) => {
  const events: string[] = [];
  const lock = {
    acquire: (key: string): [unknown, undefined] => {
      events.push('acquire');
      return [{ key }, undefined];
    },
    release: (): [true, undefined] => {
      events.push('release');
      return [true, undefined];
    },
  };
  const server = await serve(t, [
    buffer({ cache: true, cacheLock: lock }),
    async (ctx) => {
      if (await ctx.bufferIsCached()) return;
      if (ctx.path === '/throws') throw new Error('the action failed');
      ctx.body = html;
    },
  ]);
  await server.request('/ok');
  await until(() => events.length === 2);
  t.deepEqual(events, ['acquire', 'release'], 'a build that succeeded released its lock');
  const failed = await server.request('/throws');
  t.is(failed.status, 500);
  await until(() => events.length === 4);
  t.deepEqual(events, ['acquire', 'release', 'acquire', 'release'], 'so did the one whose action threw');
});

test('ctx.bufferIsCached() exists on every request and answers false without a cache', async (t) => {
  const answers: boolean[] = [];
  const server = await serve(t, [
    buffer(),
    async (ctx) => {
      answers.push(await ctx.bufferIsCached());
      ctx.body = 'ok';
    },
  ]);
  await server.request('/');
  t.deepEqual(answers, [false]);
});
