/**
 * No visitor ever sees another visitor's page (issue 7). Every page echoes
 * a secret of the visitor it was built for; random schedules of visitors
 * (fast-check, fixed seed) hit them all at once, so builders, waiters of a
 * flight and later hits mix, and every body must hold its own visitor's
 * secret and no other. The pages cover each way a response is someone's
 * own: a cookie in the key (varyBy), Set-Cookie, Cache-Control private and
 * no-store, Vary on a header outside the key, an Authorization header;
 * cookies and query strings are crafted from separator characters, to try
 * to make two visitors' keys collide.
 */
import fc from 'fast-check';
import test from 'ava';
import type { Context } from 'koa';
import { buffer } from '../../src/buffer.ts';
import { logOnFailure } from '../helpers/log-on-failure.ts';
import { serve, type RawResponse } from '../helpers/serve.ts';

const visitors = Array.from({ length: 6 }, (_, i) => `s3cr3t${i}x${(0x9e3779b1 * (i + 1)).toString(36)}`);
const secretPattern = /s3cr3t\dx[0-9a-z]+/g;

/** How each page learns its visitor and marks its response personal. */
const pages: Record<string, (ctx: Context) => string | undefined> = {
  // Keyed by the cookie (the default varyBy): safe to store, one entry per visitor.
  '/by-cookie': (ctx) => /sid=([^;]*)/.exec(ctx.get('cookie'))?.[1],
  '/set-cookie': (ctx) => {
    const secret = ctx.get('x-visitor');
    ctx.cookies.set('sid', secret, { httpOnly: true });
    return secret;
  },
  '/private': (ctx) => {
    ctx.set('Cache-Control', 'private, max-age=60');
    return ctx.get('x-visitor');
  },
  '/no-store': (ctx) => {
    ctx.set('Cache-Control', 'no-store');
    return ctx.get('x-visitor');
  },
  '/vary': (ctx) => {
    ctx.vary('X-Visitor');
    return ctx.get('x-visitor');
  },
  '/authorization': (ctx) => ctx.get('authorization').replace(/^Bearer /, ''),
  // Nobody's: one entry for all, and it must hold no secret.
  '/public': () => undefined,
};

/** Characters that separate fields in naive keys (a request path may not hold a raw space). */
const separators = ['a', ':', '1', '-', '&', '=', ';', ',', '|', '%', '0', '+'];
const crafted = fc.string({ unit: fc.constantFrom(...separators, ' '), maxLength: 6 });
const craftedQuery = fc.string({ unit: fc.constantFrom(...separators, '?', '/'), maxLength: 6 });

/** Mostly plain, so that visits share keys (hits, flights); sometimes crafted, to try to collide. */
const mostly = (plain: string, other: fc.Arbitrary<string>): fc.Arbitrary<string> =>
  fc.oneof({ arbitrary: fc.constant(plain), weight: 3 }, { arbitrary: other, weight: 1 });

const visit = fc.record({
  visitor: fc.nat({ max: visitors.length - 1 }),
  // The shared pages more often, so that flights and hits meet the personal ones.
  page: fc.constantFrom(...Object.keys(pages), '/by-cookie', '/by-cookie', '/public', '/public'),
  query: mostly('', craftedQuery),
  before: mostly('', crafted),
  after: mostly('', crafted),
});

for (const cacheWaitFailure of ['retry-later', 'run'] as const) {
  test(`random concurrent schedules never show one visitor another's secret (cacheWaitFailure '${cacheWaitFailure}', property, fixed seed)`, async (t) => {
    let runs = 0;
    const server = await serve(t, [
      buffer({ cache: true, cacheWaitFailure }),
      async (ctx) => {
        const page = pages[ctx.path];
        // Pages keyed by the URL alone, except /by-cookie (default varyBy: the cookie).
        if (ctx.path !== '/by-cookie') ctx.state.buffer = { varyBy: [] };
        // The public page is fresh for each schedule, so its flights are exercised as well as its hits.
        if (ctx.path === '/public') ctx.state.buffer = { varyBy: [], cacheDuration: 0.05 };
        if (await ctx.bufferIsCached()) return;
        runs++;
        // Long enough for concurrent requests of one key to meet in a flight.
        await new Promise((resolve) => setTimeout(resolve, 15));
        const secret = page?.(ctx) ?? 'none';
        ctx.type = 'html';
        ctx.body = `<p>page ${ctx.path} for ${secret}</p>`;
      },
    ]);

    const problems: string[] = [];
    const counts = { answered: 0, retryLater: 0, hits: 0, collapsed: 0 };
    await fc.assert(
      fc.asyncProperty(fc.array(visit, { minLength: 8, maxLength: 30 }), async (schedule) => {
        const responses = await Promise.all(
          schedule.map(async (v) => {
            const secret = visitors[v.visitor]!;
            const headers: Record<string, string> = {
              cookie: `${v.before}sid=${secret};${v.after}`,
              'x-visitor': secret,
              ...(v.page === '/authorization' ? { authorization: `Bearer ${secret}` } : {}),
            };
            return { v, secret, response: await server.request(`${v.page}?${v.query}`, { headers }) };
          }),
        );
        for (const { v, secret, response } of responses) check(v.page, secret, response);
      }),
      { seed: 77, numRuns: 25 },
    );

    function check(page: string, secret: string, response: RawResponse): void {
      const body = response.body.toString();
      const seen: string[] = body.match(secretPattern) ?? [];
      if (response.status === 503) {
        counts.retryLater++;
        if (seen.length > 0) problems.push(`${page}: a 503 holding ${seen.join(', ')}`);
        return;
      }
      counts.answered++;
      if (response.headers['cache-status']?.startsWith('koa-buffer; hit')) counts.hits++;
      if (response.headers['cache-status'] === 'koa-buffer; fwd=miss; collapsed') counts.collapsed++;
      if (response.status !== 200) problems.push(`${page}: status ${response.status}`);
      if (seen.some((s) => s !== secret)) problems.push(`${page}: ${secret} saw ${seen.join(', ')}`);
      else if (page === '/public' ? body !== '<p>page /public for none</p>' : !seen.includes(secret))
        problems.push(`${page}: ${secret} got ${JSON.stringify(body)}`);
      const cookie = response.headers['set-cookie'];
      if (cookie !== undefined && !cookie.includes(secret))
        problems.push(`${page}: ${secret} was handed the cookie ${cookie}`);
    }

    logOnFailure(
      t,
      `${counts.answered} pages (${counts.hits} hits, ${counts.collapsed} from another request's build), ${counts.retryLater} retry-later answers, ${runs} builds`,
    );
    t.deepEqual(problems.slice(0, 10), [], 'every visitor saw only its own secret');
    t.true(counts.answered > 300, 'the schedules were real');
    t.true(counts.hits > 20 && counts.collapsed > 5, 'stored pages and flights were in play');
    if (cacheWaitFailure === 'run')
      t.is(counts.retryLater, 0, "with 'run' a waiter whose build was personal runs the action itself");
  });
}
