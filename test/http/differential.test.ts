/**
 * koa-buffer keeps three small hand-written helpers on its hot path
 * (http/negotiate.ts, vary.ts, conditional.ts): negotiation is remembered
 * per header value and allocates nothing on a repeat, and the other two work
 * on the headers Node already holds. These properties compare each one with
 * the library Koa's ecosystem uses, on generated inputs:
 * negotiator (as koa-compress calls it, with the server preference, and as
 * Koa's own ctx.acceptsEncodings calls it), vary, and fresh (as
 * koa-conditional-get reaches it through ctx.fresh).
 *
 * Inputs are well-formed: on malformed q-values (`q=2`, `q=abc`, `q = 1`)
 * koa-buffer drops the entry where negotiator reads it with parseFloat; the
 * negotiation tests cover those. Where Koa's negotiator and koa-buffer differ
 * on well-formed headers, the test against it says which way and why.
 */
import { createRequire } from 'node:module';
import test from 'ava';
import fc from 'fast-check';
import http from 'node:http';
import net from 'node:net';
import Koa from 'koa';
import { notModifiedReason } from '../../src/http/conditional.ts';
import { negotiate, type Coding } from '../../src/http/negotiate.ts';
import { addVary } from '../../src/http/vary.ts';

const require = createRequire(import.meta.url);
const fresh = require('fresh') as (request: Record<string, string>, response: Record<string, string>) => boolean;
const vary = require('vary') as { append(header: string, field: string): string };

// The negotiator koa-compress depends on (1.x, with the `preferred` order), not Koa's older copy.
const fromCompress = createRequire(require.resolve('koa-compress'));
const Negotiator = fromCompress('negotiator') as new (request: { headers: Record<string, string> }) => {
  encoding(available: string[], options?: { preferred?: string[] }): string | undefined;
};
// The negotiator Koa's ctx.acceptsEncodings reaches through accepts (0.6), which has no `preferred`.
const fromAccepts = createRequire(createRequire(require.resolve('koa')).resolve('accepts'));
const KoaNegotiator = fromAccepts('negotiator') as new (request: { headers: Record<string, string> }) => {
  encodings(available: string[]): string[];
};

const qvalue = fc.oneof(
  fc.constant(''),
  fc.constantFrom('0', '1', '0.5', '0.001', '1.0', '0.8', '0.80', '0.999').map((q) => `;q=${q}`),
);
const name = fc.constantFrom('br', 'zstd', 'gzip', 'deflate', 'identity', '*', 'compress', 'BR', 'Gzip');
const acceptEncoding = fc
  .array(fc.tuple(name, qvalue), { maxLength: 6 })
  .map((entries) => entries.map(([n, q]) => `${n}${q}`).join(', '));
const offered = fc.subarray(['br', 'zstd', 'gzip', 'deflate'] as Coding[]);

test('negotiate() picks what negotiator picks with the same server preference', (t) => {
  fc.assert(
    fc.property(acceptEncoding, offered, (header, codings) => {
      const ours = negotiate(header, codings).coding;
      const available = [...codings, 'identity'];
      const theirs = new Negotiator({ headers: { 'accept-encoding': header } }).encoding(available, {
        preferred: available,
      });
      // negotiator answers undefined when nothing is acceptable; koa-buffer then sends identity anyway.
      return ours === (theirs ?? 'identity');
    }),
    { seed: 12_531, numRuns: 5000 },
  );
  t.pass();
});

/** One generated Accept-Encoding entry: the coding's name as sent, its weight, and how `q` is spelled. */
interface Entry {
  name: string;
  q: string | undefined;
  upperQ: boolean;
  space: string;
}

const entry = fc.record({
  name: fc.constantFrom(
    'br',
    'zstd',
    'gzip',
    'deflate',
    'identity',
    '*',
    'compress',
    'x-gzip',
    'BR',
    'Gzip',
    'X-GZIP',
    'Identity',
  ),
  q: fc.option(fc.constantFrom('0', '1', '0.5', '0.5', '0.001', '1.0', '0.8', '0.80', '0.999', '0.000'), {
    nil: undefined,
  }),
  upperQ: fc.integer({ min: 0, max: 7 }).map((n) => n === 0),
  space: fc.constantFrom('', ' ', '\t'),
});

/** The header for `entries`; `asKoaReads` spells it the way Koa's negotiator understands what koa-buffer does. */
function acceptEncodingOf(entries: readonly Entry[], asKoaReads: boolean): string {
  return entries
    .map(({ name, q, upperQ, space }) => {
      const coding = asKoaReads && name.toLowerCase() === 'x-gzip' ? 'gzip' : name;
      return q === undefined ? coding : `${coding}${space};${space}${upperQ && !asKoaReads ? 'Q' : 'q'}=${q}`;
    })
    .join(', ');
}

/**
 * The weight the client gives `coding` (RFC 9110 12.5.3): its own entries'
 * highest q, else `*`'s; identity, listed by neither, as much as the weakest
 * coding listed (as both negotiators take it).
 */
function weight(entries: readonly Entry[], coding: string): number {
  const q = (e: Entry) => Number(e.q ?? 1);
  const named = (n: string) =>
    entries.filter((e) => (e.name.toLowerCase() === 'x-gzip' ? 'gzip' : e.name.toLowerCase()) === n);
  const own = named(coding);
  if (own.length > 0) return Math.max(...own.map(q));
  const star = named('*');
  if (star.length > 0) return Math.max(...star.map(q));
  if (coding !== 'identity') return 0;
  return Math.min(1, ...entries.map(q).filter((n) => n > 0));
}

test("negotiate() picks what Koa's ctx.acceptsEncodings (negotiator 0.6) picks, ties aside (property, fixed seed)", (t) => {
  // Where the two differ on a well-formed header, and why koa-buffer does what it does:
  // - ties: among codings the client weighs alike, Koa's negotiator takes an exact name before `*`,
  //   then the one the client listed first; koa-buffer takes the server's order (the `encodings`
  //   option, identity last). RFC 9110 12.5.3 says the client's preference with q-values only (its
  //   list order means nothing), so among equals the choice is the server's, as koa-compress makes
  //   it with negotiator 1.x's `preferred`. The property checks that both choices weigh the same.
  // - `x-gzip`: koa-buffer takes it as gzip (RFC 9110 8.4.1.3: a recipient SHOULD consider x-gzip
  //   equivalent to gzip); Koa's negotiator as a coding of its own. It is given gzip instead.
  // - `Q=0.5`: the weight's `q` is case-insensitive (RFC 9110 12.4.2, written as an ABNF string, and
  //   5.6.6: parameter names are case-insensitive); Koa's negotiator reads only a lowercase `q`,
  //   and weighs `Q=0` as 1. It is given `q=` instead.
  let ties = 0;
  let agreed = 0;
  fc.assert(
    fc.property(
      fc.array(entry, { maxLength: 6 }),
      fc.shuffledSubarray(['br', 'zstd', 'gzip', 'deflate'] as Coding[]),
      (entries, offered) => {
        const header = acceptEncodingOf(entries, false);
        const ours = negotiate(header, offered).coding;
        const available = [...offered, 'identity'];
        // No acceptable coding: Koa's negotiator answers nothing, koa-buffer sends identity anyway.
        const theirs =
          new KoaNegotiator({ headers: { 'accept-encoding': acceptEncodingOf(entries, true) } }).encodings(
            available,
          )[0] ?? 'identity';
        if (ours === theirs) {
          agreed++;
          return true;
        }
        // A tie: both choices weigh the same, the highest, and koa-buffer's is the server's first of those.
        const best = Math.max(...available.map((c) => weight(entries, c)));
        const tied = available.filter((c) => weight(entries, c) === best);
        if (best > 0 && tied.includes(theirs) && tied[0] === ours) {
          ties++;
          return true;
        }
        return false;
      },
    ),
    { seed: 12_532, numRuns: 10_000 },
  );
  t.true(agreed > 5000, `most choices were the same (${agreed})`);
  t.true(ties > 500, `and ties, broken by the server's order, came up often (${ties})`);
});

const fieldName = fc.constantFrom('Accept-Encoding', 'accept-encoding', 'Cookie', 'Origin', 'Accept-Language');
const listed = fc.oneof(fieldName, fc.constant('*'));
const varyHeader = fc.oneof(
  fc.constant(undefined),
  fc.array(listed, { maxLength: 4 }).map((names) => names.join(', ')),
);

test('addVary() leaves the same Vary as the vary package', (t) => {
  const app = new Koa();
  fc.assert(
    fc.property(varyHeader, fieldName, (current, field) => {
      const req = new http.IncomingMessage(new net.Socket());
      const ctx = app.createContext(req, new http.ServerResponse(req));
      if (current !== undefined) ctx.res.setHeader('Vary', current);
      addVary(ctx, field);
      const ours = (ctx.res.getHeader('Vary') as string | undefined) ?? '';
      const theirs = vary.append(current ?? '', field);
      // Compared as lists: the same field names, in the same order, whatever the spacing; a list
      // holding `*` means "every field" (RFC 9110 12.5.5) however vary and addVary spell it.
      const list = (v: string) => {
        const names = v
          .split(',')
          .map((s) => s.trim().toLowerCase())
          .filter(Boolean);
        return names.includes('*') ? ['*'] : names;
      };
      return JSON.stringify(list(ours)) === JSON.stringify(list(theirs));
    }),
    { seed: 12_533, numRuns: 3000 },
  );
  t.pass();
});

const opaque = fc.constantFrom('"a"', '"b"', '"abc-br"', '""', '"x,y"');
const etag = fc.tuple(fc.boolean(), opaque).map(([weak, tag]) => (weak ? `W/${tag}` : tag));
const ifNoneMatch = fc.oneof(
  fc.constant('*'),
  fc.array(etag, { minLength: 1, maxLength: 3 }).map((tags) => tags.join(', ')),
);
const date = fc.integer({ min: 1_600_000_000, max: 1_600_000_100 }).map((s) => new Date(s * 1000).toUTCString());

test('notModifiedReason() agrees with fresh on If-None-Match alone and on If-Modified-Since alone', (t) => {
  fc.assert(
    fc.property(
      fc.oneof(
        fc.record({ inm: ifNoneMatch, ims: fc.constant(undefined) }),
        fc.record({ inm: fc.constant(undefined), ims: date }),
      ),
      fc.option(etag, { nil: undefined }),
      fc.option(date, { nil: undefined }),
      ({ inm, ims }, tag, lastModified) => {
        // A quoted tag with a comma inside: fresh splits it at the comma, RFC 9110 8.8.3 does not.
        if ((inm ?? '').includes('x,y') || (tag ?? '').includes('x,y')) return true;
        const ours =
          notModifiedReason({
            ifNoneMatch: inm,
            ifModifiedSince: ims,
            etag: tag,
            lastModified,
            trustLastModified: true,
          }) !== undefined;
        const request: Record<string, string> = {};
        if (inm !== undefined) request['if-none-match'] = inm;
        if (ims !== undefined) request['if-modified-since'] = ims;
        const response: Record<string, string> = {};
        if (tag !== undefined) response.etag = tag;
        if (lastModified !== undefined) response['last-modified'] = lastModified;
        return ours === fresh(request, response);
      },
    ),
    { seed: 12_534, numRuns: 5000 },
  );
  t.pass();
});
