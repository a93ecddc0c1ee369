/**
 * Putting a replayed Buffer into Koa's response at the cost of an
 * assignment. Koa's body setter, given a Buffer under an explicit status and
 * a Content-Type, does nothing but set Content-Length, yet it allocated on
 * every call and lowercased each name it checked: twice per cache hit (the
 * entity replayed, then the prepared answer's bytes), a large share of the
 * hit's own time (docs/decisions/0009-hit-path-is-measured.md).
 *
 * The shortcut writes `_body`, the field Koa's body getter and setter use
 * (in Koa 2 as in Koa 3), and sets Content-Length as the setter would. It
 * is taken only when the field shows itself to be the getter's, before and
 * after the write, and the old body is nothing the setter must clean up;
 * any other response gets the setter.
 */
import type { Context } from 'koa';

/** Koa's response, with the field its body accessors read and write. */
type KoaResponse = Context['response'] & { _body?: unknown };

/**
 * Sets `body` on the response, as `ctx.response.body = body` would.
 *
 * @param ctx - a request whose status the caller has set explicitly (so the setter would leave it)
 * @param body - the bytes to send
 */
export function setBufferBody(ctx: Context, body: Buffer): void {
  const response = ctx.response as KoaResponse;
  const res = ctx.res;
  const previous = response._body;
  const plain =
    previous === undefined || previous === null || Buffer.isBuffer(previous) || typeof previous === 'string';
  if (plain && previous === response.body && res.hasHeader('content-type')) {
    response._body = body;
    if (response.body === body) {
      if (!res.hasHeader('transfer-encoding')) res.setHeader('content-length', String(body.length));
      return;
    }
    response._body = previous;
  }
  response.body = body;
}
