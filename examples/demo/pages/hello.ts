/**
 * `/hello`: one page per language, cached per language.
 *
 * The language comes from a `lang` cookie, else from Accept-Language. The
 * cache key must therefore include both headers: `varyBy` is set for this
 * response through `ctx.state.buffer` (one `buffer()` serves the whole site;
 * the per-response object is how one route changes an option), and the
 * response says `Vary: Accept-Language, Cookie` so that browsers and proxies
 * keep the languages apart too.
 */
import type { Context } from 'koa';
import { escapeHtml, layout } from './layout.ts';

const greetings: Record<string, { hello: string; name: string }> = {
  en: { hello: 'Hello!', name: 'English' },
  fr: { hello: 'Bonjour !', name: 'Français' },
  de: { hello: 'Hallo!', name: 'Deutsch' },
  es: { hello: '¡Hola!', name: 'Español' },
  ja: { hello: 'こんにちは！', name: '日本語' },
};

/** The language of the page: the `lang` cookie when it names one we have, else the best Accept-Language match, else English. */
export function pickLanguage(ctx: Context): string {
  const cookie = ctx.cookies.get('lang');
  if (cookie !== undefined && cookie in greetings) return cookie;
  const ranked = (ctx.get('Accept-Language') || '')
    .split(',')
    .map((part, order) => {
      const [tag = '', ...params] = part.trim().split(';');
      const q = params.map((p) => /^\s*q=([0-9.]+)\s*$/.exec(p)?.[1]).find((v) => v !== undefined);
      return { lang: tag.trim().toLowerCase().split('-')[0]!, q: q === undefined ? 1 : Number(q), order };
    })
    .filter((choice) => choice.q > 0 && choice.lang in greetings)
    .sort((a, b) => b.q - a.q || a.order - b.order);
  return ranked[0]?.lang ?? 'en';
}

/** The /hello action. */
export async function helloPage(ctx: Context): Promise<void> {
  // The generated key joins the values of these request headers (the default is ['cookie']).
  ctx.state.buffer = { varyBy: ['cookie', 'accept-language'] };
  if (await ctx.bufferIsCached()) return;

  const lang = pickLanguage(ctx);
  const choices = Object.entries(greetings)
    .map(([code, g]) => `<li><a href="/hello/choose?lang=${code}" hreflang="${code}">${escapeHtml(g.name)}</a></li>`)
    .join('\n  ');
  ctx.vary('Accept-Language');
  ctx.vary('Cookie');
  ctx.set('Content-Language', lang);
  ctx.type = 'html';
  ctx.body = layout(
    greetings[lang]!.name,
    `<h1 lang="${lang}">${escapeHtml(greetings[lang]!.hello)}</h1>
<p>
  Built by worker <strong>${process.pid}</strong> at <time>${new Date().toISOString()}</time>
  for language <code>${lang}</code>. Each language (and each cookie) has its own cache entry:
  reload and this line stays; change your language and it is built again, once.
</p>
<p>Choose a language (sets a <code>lang</code> cookie), or <a href="/hello/choose">use your browser's</a>:</p>
<ul>
  ${choices}
</ul>`,
    lang,
  );
}

/** `/hello/choose?lang=xx`: remembers the choice in a cookie (none: forgets it) and goes back to /hello. */
export function chooseLanguage(ctx: Context): void {
  const lang = String(ctx.query.lang ?? '');
  if (lang in greetings) ctx.cookies.set('lang', lang, { httpOnly: true, sameSite: 'lax', overwrite: true });
  else ctx.cookies.set('lang', null);
  ctx.redirect('/hello');
}
