/**
 * Answers a request from the cache: a stored entry replayed (status, headers,
 * entity), or the 503 for a request whose wait failed. Both then go
 * through the rest of the pipeline like any response: the entity is
 * compressed for this client and gets its own ETag and 304.
 */
import type { Context } from 'koa';
import type { Messages } from '../../base/messages.ts';
import { entryProblem, type CacheEntry } from '../entry.ts';
import { setBufferBody } from '../../http/koa-body.ts';

/**
 * Puts `entry` into the response and marks the request replayed (OPTIMISE
 * and STORE skip it): its status, its body, and each of its headers this
 * response does not carry already. `x-cache: HIT`; the caller sets Cache-Status.
 * All or nothing: the entry is checked whole first (entry.ts, `entryProblem`),
 * so one that cannot be replayed leaves the response and the request as they were.
 *
 * @param ctx - the request to answer
 * @param visit - its visit to the cache, marked replayed
 * @param entry - a fresh entry; its body is shared, never written to
 * @throws TypeError naming what is wrong when the entry cannot be replayed, before anything is set
 */
export function replayEntry(ctx: Context, visit: { replayed: boolean }, entry: CacheEntry): void {
  const problem = entryProblem(entry);
  if (problem !== undefined) throw new TypeError(`cannot replay a cache entry with ${problem}`);
  visit.replayed = true;
  const { res, response } = ctx;
  if (res.headersSent) return; // someone answered already: nothing can be replayed
  // Through ctx.response, not ctx's delegating accessors: the same setters, one call less each on every hit.
  response.status = entry.status;
  // A header this request already carries (set by an outer middleware for every request: a request id,
  // CORS) is this request's own; the entry's copy is the builder's instance of it.
  for (const name in entry.headers) if (!res.hasHeader(name)) res.setHeader(name, entry.headers[name]!);
  // How long the answer has been in a cache (RFC 9111 5.1), so no cache downstream keeps it past its lifetime.
  res.setHeader('age', String(ageOf(entry, Date.now())));
  // Lower case, as the entry's names are: Node lowercases every name it is given, and only such a name costs it nothing.
  res.setHeader('x-cache', 'HIT');
  // After the headers: Koa gives a Buffer body a binary Content-Type only when none is set.
  setBufferBody(ctx, entry.body);
}

/** The largest Age a cache may send (RFC 9111 1.2.2: 2^31 seconds stands for "longer"). */
const ageMax = 2 ** 31;

/**
 * The entry's age in whole seconds at `now`: the Age the response carried
 * when it was stored (from a cache upstream, or the action's own), plus the
 * time it has spent in this cache (RFC 9111 4.2.3, with no response delay:
 * the action's response is made in this process).
 */
export function ageOf(entry: CacheEntry, now: number): number {
  const given = entry.headers.age;
  const initial = typeof given === 'string' && /^\d+$/.test(given.trim()) ? Number(given.trim()) : 0;
  const resident = Math.max(0, Math.floor((now - entry.created) / 1000));
  return Math.min(ageMax, initial + resident);
}

/**
 * The answer to a request whose wait failed (docs/decisions/0011-waiters-503-or-their-own-build.md): 503 Service
 * Unavailable, `Retry-After: 1`, and a text that says why as UTF-8 plain
 * text: `retry_later` when the build took too long, `retry_later_failed`
 * when it failed. Nothing else of a response the action may have begun is kept.
 *
 * @param ctx - the request to answer
 * @param messages - the catalog (the `messages` option)
 * @param text - which of the two texts
 */
export function retryLater(
  ctx: Context,
  messages: Messages,
  text: 'retry_later' | 'retry_later_failed' = 'retry_later',
): void {
  ctx.status = 503;
  ctx.set('Retry-After', '1');
  ctx.set('Content-Type', 'text/plain; charset=UTF-8');
  ctx.body = Buffer.from(messages.text(text), 'utf8');
}
