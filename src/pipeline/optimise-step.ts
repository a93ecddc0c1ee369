/**
 * OPTIMISE: the body as bytes, squashed when it is HTML and optimisation is
 * on, unless the memo recognises it (then its entity and digest are known
 * and nothing is redone). Large bodies are converted and hashed a slice per
 * turn of the event loop; squashing a large page runs off it (encoding/optimise.ts).
 */
import { optimiseHtml } from '../encoding/optimise.ts';
import { largeBody, nextTurn, utf8InSlices } from '../native/slices.ts';
import { chooseVariant, digestInSlices, largeEntity, recall, squashed, type Step } from './work.ts';

export const optimise: Step = async (work, shared) => {
  const { ctx, options } = work;
  if (work.recalled) return true;
  const wanted = squashed(work);
  const level = options.optimiseContent === 2 ? 2 : 1;
  if (work.recalled === undefined) {
    chooseVariant(work, wanted);
    const known = recall(work, shared);
    if (known instanceof Promise ? await known : known) return true;
  }
  const { source } = work;
  // A large string's UTF-8 is made in slices, a turn apart.
  const raw =
    typeof source !== 'string' ? source : source.length > largeBody ? await utf8InSlices(source) : Buffer.from(source);
  work.entity = raw;
  if (wanted) {
    if (raw.length > largeEntity) await nextTurn(); // encoding and squashing a large page are two long calls: not in one turn
    work.entity = await optimiseHtml(raw, {
      level,
      rewriteLinks: options.rewriteLinks,
      host: ctx.request.host,
      path: ctx.request.path,
      scheme: ctx.protocol,
      logger: shared.log.logger,
      messages: shared.log.messages,
      debug: shared.log.debugEnabled,
    });
  }
  work.payload = work.entity;
  if (work.entity.length > largeEntity && (options.generateEtag || shared.memo.enabled))
    await digestInSlices(work, shared);
  // A new body at an address whose body changes on every request: the memo would keep it for nothing.
  // Cache entries are keyed pages, and large entities are hashed above: both keep the memo's path.
  else
    work.changing =
      shared.memo.enabled && !work.cache?.replayed && !work.cache?.builds && shared.changing.skipsMemo(ctx.request.url);
  return true;
};
