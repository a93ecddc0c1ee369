/**
 * The response's own Vary is a secondary key, as Varnish keys it: a page
 * that varies on Accept-Language is kept once per language, each visitor
 * getting the variant of their own header; `Vary: *` and a Vary of too many
 * fields are never stored, and a URL keeps a bounded number of variants.
 */
import test from 'ava';
import { buffer } from '../../src/buffer.ts';
import { variantsMax } from '../../src/cache/vary-marker.ts';
import { serve } from '../helpers/serve.ts';

async function site(t: import('ava').ExecutionContext) {
  let builds = 0;
  let shifting = 'Accept-Language';
  const mw = buffer({ cache: true, varyBy: [] });
  const server = await serve(t, [
    mw,
    async (ctx) => {
      if (await ctx.bufferIsCached()) return;
      builds++;
      const language = ctx.get('accept-language') || 'none';
      if (ctx.path === '/star') ctx.set('Vary', '*');
      else if (ctx.path === '/many') ctx.set('Vary', 'A, B, C, D, E, F, G, H, I');
      else if (ctx.path === '/shift') ctx.set('Vary', shifting);
      else ctx.set('Vary', 'Accept-Language');
      ctx.type = 'html';
      ctx.body = `<p>${ctx.path} in ${language} (${ctx.get('x-theme') || 'plain'}), build ${builds}</p>`;
    },
  ]);
  return { server, mw, builds: () => builds, varyOn: (fields: string) => (shifting = fields) };
}

const get = (server: Awaited<ReturnType<typeof site>>['server'], path: string, headers: Record<string, string> = {}) =>
  server.request(path, { headers });

test('a page that varies on Accept-Language is kept per language, each visitor getting their own', async (t) => {
  const { server, builds } = await site(t);
  const en = await get(server, '/page', { 'accept-language': 'en' });
  t.is(en.headers['x-cache'], 'MISS');
  t.is(en.headers['cache-status'], 'koa-buffer; fwd=miss; stored');
  const fr = await get(server, '/page', { 'accept-language': 'fr' });
  t.is(fr.headers['x-cache'], 'MISS', 'another language is another variant');
  for (const [language, response] of [
    ['en', await get(server, '/page', { 'accept-language': 'en' })],
    ['fr', await get(server, '/page', { 'accept-language': 'fr' })],
  ] as const) {
    t.is(response.headers['x-cache'], 'HIT', `${language} is a hit`);
    t.regex(response.body.toString(), new RegExp(`in ${language} `), `${language} gets its own variant`);
  }
  const none = await get(server, '/page');
  t.is(none.headers['x-cache'], 'MISS', 'no header is a variant of its own');
  t.regex((await get(server, '/page')).body.toString(), /in none /);
  t.is(builds(), 3);
});

test('Vary: * and a Vary of more than eight fields are never stored', async (t) => {
  const { server } = await site(t);
  for (const path of ['/star', '/many']) {
    await get(server, path);
    const again = await get(server, path);
    t.is(again.headers['x-cache'], 'MISS', `${path} is not stored`);
    t.regex(again.headers['cache-status']!, /detail=VARY/);
  }
});

test(`a URL keeps at most ${variantsMax} variants; the next is served, not stored`, async (t) => {
  const { server } = await site(t);
  for (let i = 0; i < variantsMax; i++) await get(server, '/page', { 'accept-language': `l${i}` });
  const over = await get(server, '/page', { 'accept-language': 'one-too-many' });
  t.is(over.status, 200);
  t.is(over.headers['cache-status'], 'koa-buffer; fwd=uri-miss; detail=VARIANTS');
  t.is((await get(server, '/page', { 'accept-language': 'one-too-many' })).headers['x-cache'], 'MISS');
  t.is((await get(server, '/page', { 'accept-language': 'l0' })).headers['x-cache'], 'HIT', 'the kept ones stay');
});

test('a Vary that changes between builds starts the URL afresh under the new fields', async (t) => {
  const { server, mw, varyOn } = await site(t);
  await get(server, '/shift', { 'accept-language': 'en' });
  t.is((await get(server, '/shift', { 'accept-language': 'en' })).headers['x-cache'], 'HIT');
  // The page now varies on X-Theme: once its entries are purged, it is built again under the new field.
  varyOn('X-Theme');
  await mw.purge('/shift');
  const dark = await get(server, '/shift', { 'x-theme': 'dark', 'accept-language': 'en' });
  t.is(dark.headers['x-cache'], 'MISS');
  t.is((await get(server, '/shift', { 'x-theme': 'light', 'accept-language': 'en' })).headers['x-cache'], 'MISS');
  const darkAgain = await get(server, '/shift', { 'x-theme': 'dark', 'accept-language': 'fr' });
  t.is(darkAgain.headers['x-cache'], 'HIT', 'the language no longer counts, the theme does');
  t.regex(darkAgain.body.toString(), /\(dark\)/);
});
