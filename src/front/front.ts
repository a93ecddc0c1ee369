/**
 * `front(app, options)`: a request listener placed before Koa
 * (`http.createServer(front(app, { paths: ['/blog'] }))`) that answers the
 * cache hits of public pages itself and hands every other request to Koa
 * unchanged. Koa's own machinery (a context per request, the middleware
 * chain, its respond) is about half of what a hit costs inside Koa; a front
 * answers as a reverse proxy in front of Node would
 * (docs/decisions/0051-a-front-for-public-hits.md).
 *
 * It answers before any middleware, authentication included, so it starts
 * only with an explicit list of the path prefixes or hosts it may answer.
 * Within them it answers a request only when all of this holds:
 *
 * - GET or HEAD, with a Host, an origin-form target, and no Cookie,
 *   Authorization, Range, Cache-Control, Pragma or Available-Dictionary;
 * - the middleware sent this host, URL and Accept-Encoding a cache hit
 *   before, with final bytes, to a request with the same values of every
 *   header the key and the response's Vary depend on (learn.ts says what is
 *   never learned);
 * - a lookup of that entry now finds it fresh, the same entry, with the
 *   rules a hit inside Koa meets: expiry, purges (from any process), the
 *   deploy check; and NO_CACHE / NO_STORE are not set.
 *
 * Its answer is the head and body that hit went out with, with Age and
 * Cache-Status made now, or the 304 the middleware would send. Anything it
 * cannot show is the same goes to Koa, which may teach it the answer.
 */
import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import type { TLSSocket } from 'node:tls';
import type Koa from 'koa';
import { describeValue } from '../base/describe.ts';
import { BufferOptionError } from '../base/errors.ts';
import { isThenable } from '../base/thenable.ts';
import { environmentSwitches } from '../cache/bypass.ts';
import { hitStatus } from '../cache/cache-status.ts';
import { lookup, type Lookup } from '../cache/hit/lookup.ts';
import { ageOf } from '../cache/hit/replay.ts';
import { remainingMs } from '../cache/entry.ts';
import { notModifiedReason } from '../http/conditional.ts';
import { headerText } from '../http/headers.ts';
import type { Shared } from '../pipeline/work.ts';
import { answerKey, FrontAnswers, sameEntry, type FrontAnswer } from './answers.ts';
import { markForLearning } from './learn.ts';
import { resolveFrontOptions, type FrontOptions, type FrontScope } from './options.ts';
import { sharedOf } from './link.ts';

export type { FrontOptions } from './options.ts';

/**
 * A request listener that answers public cache hits before Koa runs, and
 * hands everything else to `app.callback()`.
 *
 * @param app - the Koa application, with `buffer({ cache: … })` mounted by `app.use`
 * @param options - `paths` (path prefixes) and/or `hosts` it may answer: at least one is required
 * @returns a listener for `http.createServer` (or `https`)
 * @throws BufferOptionError naming what is wrong: no scope, a bad option, no buffer() middleware, no cache
 * @example
 * const app = new Koa();
 * app.use(buffer({ cache: true }));
 * app.use(router.routes());
 * http.createServer(front(app, { paths: ['/blog', '/docs'] })).listen(3000);
 */
export function front(app: Koa, options: FrontOptions): RequestListener {
  const resolved = resolveFrontOptions(options);
  const shared = bufferOf(app, resolved.buffer);
  const handler = app.callback();
  const answers = new FrontAnswers(resolved.maxBytes);
  const { stats } = shared.log;
  stats.budgets.front = () => ({ bytes: answers.bytes, limit: answers.maxBytes });
  const { generate304, trustLastModified } = shared.config;

  const toKoa = (req: IncomingMessage, res: ServerResponse, key: string | undefined): void => {
    if (key !== undefined) markForLearning(req, { answers, key });
    void handler(req, res);
  };

  /** {@link give}, where anything thrown (a bug; an answer Node refuses) goes to Koa or cuts the response, never up. */
  const safely: Give = (req, res, key, answer, seen, now) => {
    try {
      give(req, res, key, answer, seen, now);
    } catch (error) {
      answers.delete(key);
      shared.log.error('log_front_failed', { error });
      if (res.headersSent) res.destroy();
      else toKoa(req, res, undefined);
    }
  };

  /** Answers with `answer` when the lookup `seen` at `now` found its entry still the same; else hands over to Koa. */
  const give: Give = (req, res, key, answer, seen, now) => {
    if (!('found' in seen) || !sameEntry(answer, seen.found)) {
      // Expired, purged, rebuilt, older than the code: Koa answers, and a new hit teaches the front again.
      answers.delete(key);
      return toKoa(req, res, key);
    }
    const entry = seen.found;
    const headers = req.headers;
    let head = answer.head;
    let status = 200;
    if (headers['if-none-match'] !== undefined || headers['if-modified-since'] !== undefined) {
      if (!generate304) return toKoa(req, res, undefined);
      const reason = notModifiedReason({
        ifNoneMatch: headers['if-none-match'],
        ifModifiedSince: headers['if-modified-since'],
        etag: answer.etag,
        lastModified: answer.lastModified,
        trustLastModified,
      });
      if (reason !== undefined) {
        head = answer.notModifiedHead;
        status = 304;
      }
    }
    // The last four items are Age and Cache-Status; writeHead reads the array before it returns.
    const at = head.length;
    head[at - 3] = String(ageOf(entry, now));
    head[at - 1] = hitStatus(remainingMs(entry, now));
    res.writeHead(status, head as string[]);
    stats.requests.hit++;
    stats.frontHits++;
    if (status === 304) {
      stats.notModified++;
      res.end();
      return;
    }
    stats.sent(answer.coding, answer.entityLength, answer.body.length);
    if (req.method === 'HEAD') res.end();
    else res.end(answer.body);
  };

  return function frontListener(req: IncomingMessage, res: ServerResponse): void {
    const host = req.headers.host;
    if (host === undefined || !mayAnswer(req, host, resolved.scope)) return void handler(req, res);
    const url = req.url!;
    const key = answerKey(host, url, req.headers['accept-encoding']);
    const answer = answers.get(key);
    if (answer === undefined || !sameInputs(answer, req)) return toKoa(req, res, key);
    const now = Date.now();
    // The switches that turn the cache off: they bypass it inside Koa, so nothing is learned meanwhile.
    if (environmentSwitches(now) !== undefined) return toKoa(req, res, undefined);
    let seen: Lookup | Promise<Lookup>;
    try {
      seen = lookup(answer.slot, now);
    } catch {
      return toKoa(req, res, key);
    }
    if (isThenable(seen))
      return void (seen as Promise<Lookup>).then(
        (found) => safely(req, res, key, answer, found, Date.now()),
        () => toKoa(req, res, key),
      );
    safely(req, res, key, answer, seen, now);
  };
}

/** What answers a request the front found a learned answer for, once the store was asked. */
type Give = (
  req: IncomingMessage,
  res: ServerResponse,
  key: string,
  answer: FrontAnswer,
  seen: Lookup,
  now: number,
) => void;

/** True when the request is one a front may answer at all: method, headers, target and scope. */
function mayAnswer(req: IncomingMessage, host: string, scope: FrontScope): boolean {
  const method = req.method;
  if (method !== 'GET' && method !== 'HEAD') return false;
  const headers = req.headers;
  if (
    headers.cookie !== undefined ||
    headers.authorization !== undefined ||
    headers.range !== undefined ||
    headers['cache-control'] !== undefined ||
    headers.pragma !== undefined ||
    headers['available-dictionary'] !== undefined
  )
    return false;
  const url = req.url;
  // The key holds host, path and query; a target in absolute form or with a fragment carries more.
  if (url === undefined || url.charCodeAt(0) !== 0x2f || url.includes('#')) return false;
  return scope.covers(host, url);
}

/** True when the request brings what the answer's request brought, wherever the key or Vary could see it. */
function sameInputs(answer: FrontAnswer, req: IncomingMessage): boolean {
  if (((req.socket as TLSSocket | undefined)?.encrypted === true) !== answer.encrypted) return false;
  const { compared, values } = answer;
  const headers = req.headers;
  for (let i = 0; i < compared.length; i++) {
    if (headerText(headers[compared[i]!]) !== values[i]) return false;
  }
  return true;
}

/** The shared parts of the buffer() middleware the front answers for. */
function bufferOf(app: Koa, named: unknown): Shared {
  if (app === null || typeof app !== 'object' || !Array.isArray((app as { middleware?: unknown }).middleware))
    throw new BufferOptionError('front_app', { value: describeValue(app) });
  let shared: Shared | undefined;
  if (named !== undefined) {
    shared = sharedOf(named);
    if (shared === undefined) throw new BufferOptionError('front_no_buffer');
  } else {
    const found = app.middleware.map((mw) => sharedOf(mw)).filter((one) => one !== undefined);
    if (found.length === 0) throw new BufferOptionError('front_no_buffer');
    if (found.length > 1) throw new BufferOptionError('front_many_buffers', { count: found.length });
    shared = found[0]!;
  }
  if (shared.cache === undefined || shared.config.cache === undefined) throw new BufferOptionError('front_no_cache');
  return shared;
}
