/** examples/sections.ts: bufferSection declarations and ctx.state.buffer overrides, run as a user would. */
import { createHash } from 'node:crypto';
import test from 'ava';
import { startExample } from '../../helpers/examples.ts';
import { decode } from '../../helpers/serve.ts';

const indented = /\n {4}<p>\n {6}The same/;
const squashed = /^<!doctype html><html><body><p>\nThe same indented page at every URL\.\n<\/p><\/body><\/html>\n?$/;

test('sections and per-response overrides decide, most specific first', async (t) => {
  const app = await startExample(t, 'sections.ts');
  const br = { 'Accept-Encoding': 'br' };
  const page = async (
    path: string,
  ): Promise<{ html: string; coding: string | undefined; etag: string | undefined }> => {
    const response = await app.request(path, br);
    t.is(response.status, 200, `${path} is served`);
    return {
      html: decode(response).toString('utf8'),
      coding: response.headers['content-encoding'],
      etag: response.headers.etag,
    };
  };

  const site = await page('/page');
  t.regex(site.html, squashed, 'buffer(): squashed');
  t.is(site.coding, 'br');

  const legacy = await page('/legacy/page');
  t.regex(legacy.html, indented, 'the /legacy section: not squashed');
  t.is(legacy.coding, 'br', 'the section changes optimiseContent only: still compressed');
  t.truthy(legacy.etag, 'and still given an ETag');

  t.regex((await page('/legacy/modern/page')).html, squashed, 'the inner /legacy/modern section wins: squashed');
  t.regex((await page('/legacy/page?squash')).html, squashed, 'ctx.state.buffer beats the section: squashed');

  const live = await app.request('/live', br);
  t.regex(live.body.toString('utf8'), indented, 'ctx.state.buffer = 0: not squashed');
  t.is(live.headers['content-encoding'], undefined, 'ctx.state.buffer = 0: not compressed');
  t.is(live.headers.etag, undefined, 'ctx.state.buffer = 0: no ETag');
  t.is(live.headers.vary, undefined, 'ctx.state.buffer = 0: no Vary');

  const data = await app.request('/api/data', br);
  t.is(data.headers['content-encoding'], undefined, '{ compressContent: false }: sent uncompressed');
  t.is(data.headers.etag, `"${createHash('md5').update(data.body).digest('hex')}"`, 'with the ETag of the JSON');
  t.is((JSON.parse(data.body.toString('utf8')) as { items: unknown[] }).items.length, 20);
  t.is(
    (await app.request('/api/data', { ...br, 'If-None-Match': data.headers.etag! })).status,
    304,
    'and 304 on revalidation',
  );
});
