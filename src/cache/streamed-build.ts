/**
 * A build whose body is a stream: its entity is collected while it is sent
 * (at most `cacheMaxSize` bytes; past that the collection is dropped and the
 * build refused as TOO-LARGE), and judged, like a buffered build, on the
 * head as sent, when the response ends. Only a stream that ended on its own
 * is stored: one that failed, or whose client left, ends its flight as an
 * abandoned build, so no waiter and no later visitor is handed a truncated
 * page. Its waiters wait for the end of the stream, within
 * `cacheLockTimeout`, as for any build.
 */
import type { Context } from 'koa';
import { beforeHeadIsSent } from '../http/sent-head.ts';
import { abandoned, refused, stored, type Handover } from './build.ts';
import { notStorableAsSent, notStorableReason, type StoreableResponse } from './storable.ts';
import type { Visit } from './visit.ts';

/** What the stream path feeds a streamed build: every chunk of the entity, then its end. */
export interface StreamCollector {
  /** One chunk of the uncompressed entity, in order. */
  take(chunk: Buffer): void;
  /** The source ended on its own: what was taken is the whole entity. */
  end(): void;
}

const empty = Buffer.alloc(0);

/**
 * Hands over a build whose body is a stream. Undefined when this request
 * builds nothing, or when its status and headers already say it cannot be
 * stored (its waiters are then freed at once, as for a buffered build).
 *
 * @param response - the status and headers the action left, without Content-Encoding and Content-Length
 */
export function handOverStream(
  ctx: Context,
  visit: Visit,
  response: Omit<StoreableResponse, 'body'>,
  handover: Handover,
): StreamCollector | undefined {
  const build = visit.build;
  if (build === undefined || build.handedOver) return undefined;
  build.handedOver = true;
  const { options, runtime, slot } = visit;
  const early = notStorableReason({ ...response, body: empty }, options);
  if (early !== undefined) {
    void refused(ctx, visit, early, response.status);
    return undefined;
  }
  const chunks: Buffer[] = [];
  let bytes = 0;
  let state: 'open' | 'ended' | 'too-large' = 'open';
  beforeHeadIsSent(ctx.res, (head) => {
    if (head === undefined || state === 'open') {
      // The client left, or the source failed and the response was cut short: the page is not whole.
      runtime.log.debug('log_not_stored', { key: slot.key, url: slot.url, reason: abandoned });
      build.flight?.settle({ failure: abandoned });
      return undefined;
    }
    if (state === 'too-large') return refused(ctx, visit, 'TOO-LARGE', head.status);
    const whole: StoreableResponse = { ...response, body: Buffer.concat(chunks, bytes) };
    chunks.length = 0;
    const reason = notStorableAsSent(head, whole, options);
    if (reason !== undefined) return refused(ctx, visit, reason, head.status);
    return stored(ctx, visit, whole, head, handover);
  });
  return {
    take(chunk) {
      if (state !== 'open') return;
      bytes += chunk.length;
      if (bytes <= options.cacheMaxSize) chunks.push(chunk);
      else {
        state = 'too-large';
        chunks.length = 0;
      }
    },
    end() {
      if (state === 'open') state = 'ended';
    },
  };
}
