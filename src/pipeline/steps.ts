/**
 * Steps 2 to 6, top to bottom: OPTIMISE → COMPRESS → STORE → VALIDATE (304)
 * → SEND. STORE hands the optimised, uncompressed entity to the cache when
 * this request builds an entry (the cache judges it on the head as sent);
 * SEND puts the final bytes into the response, with Koa's Content-Length.
 */
import { store as storeInCache } from '../cache/seam.ts';
import { compressStep } from './compress-step.ts';
import { optimise } from './optimise-step.ts';
import { validate } from './validate-step.ts';
import type { Step } from './work.ts';

const store: Step = async (work) => {
  const { ctx, cache, state } = work;
  if (!cache?.builds || cache.replayed) return true;
  const headers = { ...ctx.response.headers } as Record<string, string | string[]>;
  delete headers['content-encoding'];
  delete headers['content-length'];
  await storeInCache(
    ctx,
    { status: ctx.response.status, headers, body: work.entity },
    { options: work.options, tagHeader: state.tagHeader },
  );
  return true;
};

const send: Step = (work, shared) => {
  // Koa sets Content-Length from a Buffer body, unless Transfer-Encoding is set.
  work.ctx.response.remove('Transfer-Encoding');
  work.ctx.response.body = work.payload;
  shared.log.stats.sent(work.coding, work.entity.length, work.payload.length);
  return true;
};

/** The steps after CHECK, in order; a step that returns false ends the response (a 304). */
export const steps: readonly Step[] = [optimise, compressStep, store, validate, send];
