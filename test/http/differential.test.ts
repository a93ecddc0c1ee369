/**
 * koa-buffer keeps three small hand-written helpers on its hot path
 * (http/negotiate.ts, vary.ts, conditional.ts): negotiation is remembered
 * per header value and allocates nothing on a repeat, and the other two work
 * on the headers Node already holds. These properties compare each one with
 * the library Koa's ecosystem uses, on generated inputs:
 * negotiator (as koa-compress calls it, with the server preference), vary,
 * and fresh (as koa-conditional-get reaches it through ctx.fresh).
 *
 * Inputs are well-formed: on malformed q-values (`q=2`, `q=abc`) koa-buffer
 * drops the entry where negotiator reads it with parseFloat, and `x-gzip`
 * is a synonym of gzip here only; the negotiation tests cover those.
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
    { numRuns: 5000 },
  );
  t.pass();
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
    { numRuns: 3000 },
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
    { numRuns: 5000 },
  );
  t.pass();
});
