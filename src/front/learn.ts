/**
 * How a front (front.ts) learns its answers: from Koa. A request the front
 * could not answer goes through the application as any other; when it turns
 * out to be a fresh cache hit that the pipeline answered again with final
 * bytes (replay/), the head is taken as it is sent, after every middleware
 * has run (http/sent-head.ts), and kept with what the answer depends on. The
 * front never decides what a response is: it only gives again, to a request
 * it can show is the same, what the middleware sent.
 *
 * Nothing is learned unless everything that could make the answer someone's
 * own is absent: the entry was built for a request without Cookie or
 * Authorization, this request had neither, the head sets no cookie, says
 * neither private nor no-store, has no `Vary: *`, and the key is the URL's own
 * (not a variant's, nor one a `cacheKey` function made from unknown inputs).
 */
import type { IncomingMessage } from 'node:http';
import type { TLSSocket } from 'node:tls';
import type { Context } from 'koa';
import { hitSlot } from '../cache/seam.ts';
import { notStorableAsSent, varyFields, type StorableOptions } from '../cache/storable.ts';
import { headerText } from '../http/headers.ts';
import { beforeHeadIsSent, type SentHead } from '../http/sent-head.ts';
import type { RequestState } from '../pipeline/state.ts';
import type { FrontAnswer, FrontAnswers } from './answers.ts';

/** Where a request the front handed to Koa files its answer, if it is one to learn. */
export interface FrontMark {
  readonly answers: FrontAnswers;
  readonly key: string;
}

const markKey = Symbol('koa-buffer front mark');

type Marked = IncomingMessage & { [markKey]?: FrontMark };

/** Marks a request the front hands to Koa as one whose answer it would learn. */
export function markForLearning(req: IncomingMessage, mark: FrontMark): void {
  (req as Marked)[markKey] = mark;
}

/** The mark of a request a front handed over; undefined for every other request (one property read). */
export function frontMarkOf(req: IncomingMessage): FrontMark | undefined {
  return (req as Marked)[markKey];
}

/**
 * Headers a front does not give again as they were: those Node or the
 * front writes per response, and those middleware commonly set per request
 * (an id, a timing), which would hand one request's value to every other.
 */
const perRequest = new Set([
  'age',
  'cache-status',
  'date',
  'connection',
  'keep-alive',
  'transfer-encoding',
  'x-request-id',
  'request-id',
  'x-correlation-id',
  'x-response-time',
  'server-timing',
  'traceparent',
  'tracestate',
]);

/** What a 304 does not carry (Koa removes the first three; the pipeline the coding). */
const notInNotModified = new Set(['content-type', 'content-length', 'transfer-encoding', 'content-encoding']);

/** Request headers whose values the key holds beyond host, URL and Accept-Encoding, whatever varyBy says. */
const alwaysCompared = ['x-forwarded-host', 'x-forwarded-proto'];

/**
 * Called by the middleware when a request a front marked is done with the
 * pipeline: learns its answer if it is a hit that may be given again.
 *
 * @param ctx - the request
 * @param state - its pipeline state (the answer given again, the options)
 * @param mark - where the front wants the answer
 */
export function learn(ctx: Context, state: RequestState, mark: FrontMark): void {
  const given = state.answeredAgain;
  // Cold bytes whose upgrade waits would be given after they stop being the right ones.
  if (given === undefined || given.upgradeWaits !== undefined) return;
  if (typeof state.config.cacheKey === 'function' || ctx.request.method !== 'GET') return;
  const hit = hitSlot(ctx);
  if (hit === undefined || hit.entry.origin?.anonymous !== true) return;
  const req = ctx.req;
  if (req.headers.cookie !== undefined || req.headers.authorization !== undefined) return;
  const body = given.body;
  beforeHeadIsSent(ctx.res, (head) => {
    // An outer middleware may have changed the status or the body, or the client left.
    if (head === undefined || head.written || head.status !== 200 || ctx.body !== body) return;
    const answer = answerOf(head, req, state.config, hit, given.coding, body);
    if (answer !== undefined) mark.answers.set(mark.key, answer);
  });
}

function answerOf(
  sent: SentHead,
  req: IncomingMessage,
  options: StorableOptions,
  hit: NonNullable<ReturnType<typeof hitSlot>>,
  coding: string,
  body: Buffer,
): FrontAnswer | undefined {
  const headers = sent.headers;
  // The cache's own judgement of a head as it leaves: a cookie, private, no-store, `Vary: *` are never shared.
  // (No-cache, which the pipeline tells browsers by default, says nothing about sharing.)
  if (notStorableAsSent(sent, { status: 200, body: hit.entry.body }, options) !== undefined) return undefined;
  const compared = [
    ...new Set([
      ...alwaysCompared,
      ...options.varyBy.filter((name) => name !== 'cookie' && !name.startsWith('cookie:')),
      ...varyFields(headers.vary as string | string[] | undefined),
    ]),
  ];
  const head: unknown[] = [];
  const notModifiedHead: unknown[] = [];
  for (const name in headers) {
    if (perRequest.has(name)) continue;
    const value = headers[name];
    if (value === undefined) continue;
    head.push(name, value);
    if (!notInNotModified.has(name)) notModifiedHead.push(name, value);
  }
  head.push('age', '', 'cache-status', '');
  notModifiedHead.push('age', '', 'cache-status', '');
  return {
    slot: hit.slot,
    created: hit.entry.created,
    length: hit.entry.body.length,
    compared,
    values: compared.map((name) => headerText(req.headers[name])),
    encrypted: (req.socket as TLSSocket | undefined)?.encrypted === true,
    head,
    notModifiedHead,
    etag: headerText(headers.etag),
    lastModified: headerText(headers['last-modified']),
    body,
    coding,
    entityLength: hit.entry.body.length,
  };
}
