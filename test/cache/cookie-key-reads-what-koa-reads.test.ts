/**
 * A `cookie:NAME` key reads the cookie the way the application reads it:
 * Koa's `ctx.cookies.get` (the `cookies` package). Over real HTTP, with
 * generated Cookie headers full of what two readers may take differently
 * (spaces and tabs around names and `=`, quotes, empty values, a name given
 * twice, case variants, signed cookies and their `.sig`, several Cookie
 * header lines that Node joins), every request either bypasses the cache
 * (`detail=COOKIE`) or is keyed on exactly what `ctx.cookies.get` returns,
 * and every body, hits included, shows what the application reads for the
 * request it answers.
 */
import test from 'ava';
import Cookies from 'cookies';
import fc from 'fast-check';
import Keygrip from 'keygrip';
import Koa, { type Context } from 'koa';
import { cacheKeyOf, keyMaterial } from '../../src/cache/key.ts';
import { buffer } from '../../src/buffer.ts';
import { md5 } from '../../src/native/exports.ts';
import { logOnFailure } from '../helpers/log-on-failure.ts';
import { requestWithHeaderLines } from '../helpers/header-lines.ts';
import { recordingLogger, serve } from '../helpers/serve.ts';

const keys = ['first secret', 'older secret'];
const grip = new Keygrip(keys);

/** What the pages echo: each name read unsigned, and the session read signed, as koa-session reads it. */
const names = ['session', 'koa.sess'] as const;

/** The values the property compares, as JSON (null for undefined). */
interface Reading {
  session: string | null;
  'koa.sess': string | null;
  signed: string | null;
}

/** The Cookie header a Koa app sees for these lines: Node trims each line's white space and joins them with '; '. */
function asReceived(lines: readonly string[]): string | undefined {
  return lines.length === 0 ? undefined : lines.map((l) => l.replace(/^[ \t]+|[ \t]+$/g, '')).join('; ');
}

/** What the real `cookies` package reads from a Cookie header, with Koa's keys. */
function reading(cookie: string | undefined): Reading {
  const request = { headers: cookie === undefined ? {} : { cookie }, connection: {}, socket: {} };
  // A signed read that fails clears the signature through the response; it is not the application's, so it is dropped.
  const response = { getHeader: () => undefined, setHeader: () => undefined };
  const jar = new Cookies(request as never, response as never, { keys });
  return {
    session: jar.get('session', { signed: false }) ?? null,
    'koa.sess': jar.get('koa.sess', { signed: false }) ?? null,
    signed: jar.get('koa.sess', { signed: true }) ?? null,
  };
}

function readingIn(ctx: Context): Reading {
  return {
    session: ctx.cookies.get('session', { signed: false }) ?? null,
    'koa.sess': ctx.cookies.get('koa.sess', { signed: false }) ?? null,
    signed: ctx.cookies.get('koa.sess', { signed: true }) ?? null,
  };
}

/**
 * The varyBy values the key material holds, read back from its end: the
 * material is length-prefixed fields (`-` for an absent value), and each
 * varyBy entry is its name, its value, and for a cookie possibly more fields
 * (a signature) before the next entry's name.
 */
function keyedValues(material: string, prefix: string, varyBy: readonly string[]): Map<string, string | undefined> {
  let at = prefix.length;
  const next = (): string | undefined => {
    if (material[at] === '-') {
      at++;
      return undefined;
    }
    const colon = material.indexOf(':', at);
    const length = Number(material.slice(at, colon));
    at = colon + 1 + length;
    return material.slice(colon + 1, at);
  };
  const values = new Map<string, string | undefined>();
  varyBy.forEach((entry, i) => {
    const name = next();
    if (name !== entry) throw new Error(`key material out of step: ${name} for ${entry}`);
    values.set(entry, next());
    const following = varyBy[i + 1];
    const more = (): boolean =>
      at < material.length && (following === undefined || !material.startsWith(`${following.length}:${following}`, at));
    while (more()) next();
  });
  return values;
}

// --- generated Cookie headers -------------------------------------------------

const value = fc.constantFrom(
  '',
  'alice',
  'bob',
  'ATTACKER',
  '"alice"',
  '"',
  '""',
  '"bob',
  'a b',
  'x=y',
  ' alice',
  'alice ',
  'eyJ1c2VyIjoiYWxpY2UifQ==',
  'eyJ1c2VyIjoiQVRUQUNLRVIifQ==',
);
const name = fc.constantFrom('session', 'session', 'koa.sess', 'koa.sess', 'koa.sess.sig', 'Session', 'sessionx', 'a');
const space = fc.constantFrom('', '', '', ' ', '  ', '\t', ' \t');

/** One `name=value` pair in some spelling; a `.sig` is often a valid signature of a value. */
const pair = fc
  .record({
    name,
    value,
    before: space,
    aroundEquals: fc.tuple(space, space),
    quotedName: fc.integer({ min: 0, max: 9 }).map((n) => n === 0),
    signs: value,
    validSignature: fc.boolean(),
    noEquals: fc.integer({ min: 0, max: 19 }).map((n) => n === 0),
  })
  .map((p) => {
    let text: string = p.value;
    if (p.name === 'koa.sess.sig' && p.validSignature) text = grip.sign(`koa.sess=${p.signs}`);
    const spelled = p.quotedName ? `"${p.name}"` : p.name;
    if (p.noEquals) return `${p.before}${spelled}`;
    return `${p.before}${spelled}${p.aroundEquals[0]}=${p.aroundEquals[1]}${text}`;
  });

const separator = fc.constantFrom(';', '; ', '; ', '; ', ';\t', ' ;', ',', ', ');

/** One Cookie header line: pairs joined by separators. */
const line = fc
  .array(fc.tuple(pair, separator), { minLength: 1, maxLength: 5 })
  .map((pairs) => pairs.map(([p, s], i) => (i === 0 ? p : s + p)).join(''));

/** A request's Cookie header lines: none, one (mostly), or several, which Node joins with '; '. */
const cookieLines = fc.oneof(
  { arbitrary: fc.constant<string[]>([]), weight: 1 },
  { arbitrary: line.map((l) => [l]), weight: 6 },
  { arbitrary: fc.array(line, { minLength: 2, maxLength: 3 }), weight: 2 },
  // The plain honest requests, so that hits happen often.
  {
    arbitrary: fc
      .constantFrom('session=alice', 'session=bob', 'koa.sess=eyJ1c2VyIjoiYWxpY2UifQ==', '_ga=1; session=alice')
      .map((l) => [l]),
    weight: 3,
  },
);

test('cookie:NAME keys on exactly what ctx.cookies.get reads, or bypasses with detail=COOKIE, whatever the Cookie header holds; every hit shows what its own request reads (property over real HTTP, fixed seed)', async (t) => {
  const varyBy = ['cookie:session', 'cookie:koa.sess'];
  const problems: string[] = [];
  const app = new Koa();
  app.keys = keys;
  app.use(buffer({ cache: true, varyBy, logger: recordingLogger() }));
  app.use(async (ctx) => {
    if (await ctx.bufferIsCached()) return;
    const status = ctx.response.get('cache-status');
    const read = readingIn(ctx);
    const sent = ctx.get('x-lines');
    if (ctx.request.headers.cookie !== asReceived(JSON.parse(sent) as string[]))
      problems.push(`Node joined ${sent} as ${JSON.stringify(ctx.request.headers.cookie)}`);
    if (!status.includes('detail=COOKIE')) {
      const material = keyMaterial(ctx, varyBy);
      if (typeof material !== 'string') problems.push(`not bypassed, but no key material: ${status}`);
      else {
        const key = cacheKeyOf(ctx, { cacheKey: undefined, varyBy });
        if (key !== `buffer:${md5(material)}`) problems.push(`the key ${String(key)} is not made of its material`);
        const keyed = keyedValues(material, keyMaterial(ctx, []) as string, varyBy);
        for (const n of names)
          if ((keyed.get(`cookie:${n}`) ?? null) !== read[n])
            problems.push(
              `${JSON.stringify(ctx.get('cookie'))}: the key holds ${n}=${JSON.stringify(keyed.get(`cookie:${n}`))}, ctx.cookies.get reads ${JSON.stringify(read[n])}`,
            );
      }
    }
    ctx.type = 'json';
    ctx.body = read;
  });
  const server = await serve(t, app);
  const outcomes = new Map<string, number>();
  logOnFailure(t, () => JSON.stringify(Object.fromEntries(outcomes)));
  await fc.assert(
    fc.asyncProperty(cookieLines, async (lines) => {
      const response = await requestWithHeaderLines(server.port, '/page', [
        ['X-Lines', JSON.stringify(lines)],
        ...lines.map((l) => ['Cookie', l] as const),
      ]);
      const status = response.headers['cache-status'] ?? '';
      const outcome = status.includes('detail=COOKIE') ? 'bypass' : (response.headers['x-cache'] ?? 'none');
      outcomes.set(outcome, (outcomes.get(outcome) ?? 0) + 1);
      if (response.status !== 200) problems.push(`${response.status} for ${JSON.stringify(lines)}`);
      else if (outcome !== 'bypass') {
        const got = JSON.parse(response.body.toString()) as Reading;
        const expected = reading(asReceived(lines));
        if (JSON.stringify(got) !== JSON.stringify(expected))
          problems.push(
            `${outcome} for ${JSON.stringify(lines)} shows ${JSON.stringify(got)}, its request reads ${JSON.stringify(expected)}`,
          );
      }
    }),
    { seed: 2323, numRuns: 1500 },
  );
  t.deepEqual(problems.slice(0, 6), [], 'no request keyed on another value than the application reads');
  t.true((outcomes.get('HIT') ?? 0) > 200, 'requests shared entries, so the keys were put to the test');
  t.true((outcomes.get('bypass') ?? 0) > 50, 'headers the two readings could take differently bypassed');
  t.true((outcomes.get('MISS') ?? 0) > 10, 'and the others were keyed');
});

test('plain cookie keys on the whole Cookie header: every hit shows what its own request reads (property over real HTTP, fixed seed)', async (t) => {
  const problems: string[] = [];
  const app = new Koa();
  app.keys = keys;
  app.use(buffer({ cache: true, varyBy: ['cookie'], logger: recordingLogger() }));
  app.use(async (ctx) => {
    if (await ctx.bufferIsCached()) return;
    ctx.type = 'json';
    ctx.body = readingIn(ctx);
  });
  const server = await serve(t, app);
  let hits = 0;
  await fc.assert(
    fc.asyncProperty(cookieLines, async (lines) => {
      const response = await requestWithHeaderLines(
        server.port,
        '/page',
        lines.map((l) => ['Cookie', l] as const),
      );
      if (response.headers['x-cache'] === 'HIT') hits++;
      const expected = reading(asReceived(lines));
      if (response.body.toString() !== JSON.stringify(expected))
        problems.push(`${JSON.stringify(lines)} got ${response.body.toString()}, reads ${JSON.stringify(expected)}`);
    }),
    { seed: 2324, numRuns: 600 },
  );
  t.deepEqual(problems.slice(0, 6), []);
  t.true(hits > 100, 'requests shared entries');
});
