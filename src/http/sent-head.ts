/**
 * The response head as it is sent: what a cache must judge a response by.
 *
 * `buffer()` finishes its work when the action's continuation returns, but
 * the middleware mounted outside it runs after that: koa-session adds its
 * `Set-Cookie` there, a security middleware its `Cache-Control: private`, a
 * CORS middleware its `Vary: Origin`. A response judged storable inside
 * `buffer()` may be a private one by the time it leaves. Varnish judges the
 * backend's response as received, nginx the upstream's head as read; a
 * middleware's equivalent is the moment Koa ends the response, after every
 * middleware has returned
 * (docs/decisions/0036-storability-judged-on-the-head-as-sent.md).
 *
 * {@link beforeHeadIsSent} wraps `res.end` of one response (only the
 * responses a judge is registered for: a cache build, a dictionary offer),
 * runs the judges with the status and headers about to go out, lets them
 * still change headers and set Cache-Status, waits for what they start
 * (a store write: the builder's Cache-Status says whether it was stored),
 * then ends the response. A response that closes before it is ended (the
 * client left, so Koa never writes it) gets `undefined`: nothing of it may
 * be kept, since what the outer middleware would have added is unknown.
 */
import type { OutgoingHttpHeaders, ServerResponse } from 'node:http';

/** The head of a response as it goes out. */
export interface SentHead {
  /** The status being sent (an outer middleware may have changed it). */
  readonly status: number;
  /** Every header being sent, lowercased names, as Node holds them. */
  readonly headers: OutgoingHttpHeaders;
  /** True when the head had already gone out before the end (a streamed body): headers can no longer change. */
  readonly written: boolean;
}

/**
 * Judges one response's head: `undefined` when the response closed without
 * being sent. A returned Promise holds the end of the response until it
 * settles; it never rejects into the response (a rejection counts as done).
 */
export type HeadJudge = (head: SentHead | undefined) => void | Promise<unknown>;

/** The judges waiting on one response; the array goes when the head does. */
const judgesKey = Symbol('koa-buffer head judges');

/** Node's and HTTP/2's compatibility responses both have these. */
type Judged = Pick<ServerResponse, 'end' | 'getHeaders' | 'statusCode' | 'headersSent' | 'once' | 'destroyed'> & {
  [judgesKey]?: HeadJudge[];
  closed?: boolean;
};

/**
 * Runs `judge` just before `res` is ended (after every middleware has run),
 * or with `undefined` if it closes first. Registering on a response that
 * has already closed judges it `undefined` on the next microtask.
 *
 * @param res - the Node.js response (ctx.res)
 * @param judge - called once
 */
export function beforeHeadIsSent(res: ServerResponse, judge: HeadJudge): void {
  const judged = res as unknown as Judged;
  if (judged.destroyed || judged.closed === true) {
    queueMicrotask(() => void settle(judge, undefined));
    return;
  }
  const waiting = judged[judgesKey];
  if (waiting !== undefined) {
    waiting.push(judge);
    return;
  }
  const judges = [judge];
  judged[judgesKey] = judges;
  const end = judged.end;
  // An own property shadows the prototype's end for this response only; every other response pays nothing.
  judged.end = function endAfterJudges(this: Judged, ...args: unknown[]) {
    judged.end = end;
    const pending = take(judged);
    if (pending.length === 0) return Reflect.apply(end, this, args) as Judged;
    const head: SentHead = { status: judged.statusCode, headers: judged.getHeaders(), written: judged.headersSent };
    const started: Promise<unknown>[] = [];
    for (const one of pending) {
      const result = settle(one, head);
      if (result !== undefined) started.push(result);
    }
    if (started.length === 0) return Reflect.apply(end, this, args) as Judged;
    void Promise.allSettled(started).then(() => Reflect.apply(end, this, args));
    return this;
  } as Judged['end'];
  judged.once('close', () => {
    for (const one of take(judged)) void settle(one, undefined);
  });
}

/** The judges still waiting, removed from the response so each runs once. */
function take(res: Judged): HeadJudge[] {
  const judges = res[judgesKey];
  if (judges === undefined) return [];
  res[judgesKey] = [];
  return judges;
}

/** Runs one judge; a throw or a rejection is the judge's own to report, never the response's. */
function settle(judge: HeadJudge, head: SentHead | undefined): Promise<unknown> | undefined {
  try {
    const result = judge(head);
    return result instanceof Promise ? result.catch(() => undefined) : undefined;
  } catch {
    return undefined;
  }
}
