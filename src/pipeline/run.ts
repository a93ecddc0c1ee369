/**
 * The pipeline, once the action is done (docs/architecture.md, "The pipeline"):
 *
 *   an answer given again (a cache hit or a body the memo knows, for the
 *   very same inputs: replay/inputs.ts) → done
 *   CHECK → a stream: the stream path (stream.ts)
 *         → otherwise: OPTIMISE → COMPRESS → STORE → VALIDATE (304) → SEND
 *
 * Four kinds of answer, one rule for giving one again, one coding choice
 * (coding.ts) and one 304 check (conditional.ts) for both paths.
 */
import type { Context } from 'koa';
import { facts, type CacheFacts } from '../cache/seam.ts';
import { httpDate } from '../http/last-modified.ts';
import { mayAnswerAgain } from './replay/inputs.ts';
import { endRecording, isGiven, type Prepared, type Recording } from './replay/prepared-answer.ts';
import type { RequestState } from './state.ts';
import { steps } from './steps.ts';
import { respondWithStream } from './stream.ts';
import { generatedLastModified } from './validate-step.ts';
import { check, chooseVariant, recall, squashed, type Shared, type Work } from './work.ts';
import type { KnownEntity } from '../encoding/memo.ts';

/**
 * Reworks the response the action left, with its options as resolved after
 * it. Throws what a step throws (the caller marks the request failed).
 * Undefined, not a promise, when it is done at once (an answer given again,
 * a response CHECK leaves alone), so a prepared hit costs the caller no await.
 */
export function respond(ctx: Context, state: RequestState, shared: Shared): Promise<void> | undefined {
  const cache = shared.cache === undefined ? undefined : facts(ctx);
  let recording: Recording | undefined;
  // A cache hit the pipeline has answered before, for the very same inputs, is answered as it was then.
  if (cache?.hitKey !== undefined && mayAnswerAgain(ctx, state, shared.dictionaries)) {
    const entry = cache.hitEntry!;
    const prepared = shared.prepared.answer(ctx, cache.hitKey, entry);
    if (prepared !== undefined && isGiven(prepared)) {
      shared.log.stats.sent(prepared.coding, entry.body.length, prepared.body.length);
      state.answeredAgain = prepared;
      return undefined;
    }
    recording = prepared;
  }
  const work = check(ctx, state, cache, shared);
  return work === undefined ? undefined : rework(work, cache, recording, shared);
}

/** CHECK said yes: the stream path, an answer the memo knows, or the steps. */
async function rework(
  checked: Work,
  cache: CacheFacts | undefined,
  given: Recording | undefined,
  shared: Shared,
): Promise<void> {
  const { ctx, state } = checked;
  let work = checked;
  let recording = given;
  // A stream that may be coded with a dictionary is read whole, when small enough, and takes the steps.
  const whole = work.stream && (await shared.dictionaries?.whole(ctx, work.stream, work.type));
  if (whole) work = { ...work, source: whole, stream: undefined };
  if (work.stream) return respondWithStream(work.stream, work, shared);
  if (recording === undefined && answersFromMemo(cache, shared)) {
    const answered = answeredFromMemo(work, shared);
    const outcome = answered instanceof Promise ? await answered : answered;
    if (outcome !== undefined && isGiven(outcome)) {
      shared.log.stats.sent(outcome.coding, work.entity.length, outcome.body.length);
      return;
    }
    recording = outcome;
  }
  for (const step of steps) if (!(await step(work, shared))) break;
  if (recording !== undefined) endRecording(ctx, state, recording);
}

/** Memo answers are for responses the cache had no part in: a replayed entry or a build goes through the steps. */
function answersFromMemo(cache: CacheFacts | undefined, shared: Shared): boolean {
  return shared.memo.enabled && !cache?.replayed && !cache?.builds;
}

/**
 * A body the memo recognises, in a request whose inputs are those of the
 * last answer to it, gets that answer again (replay/memo-answers.ts): the
 * answer given; else the recording of this run, or undefined.
 */
function answeredFromMemo(
  work: Work,
  shared: Shared,
): Prepared | Recording | undefined | Promise<Prepared | Recording | undefined> {
  const { ctx, state, options } = work;
  if (!mayAnswerAgain(ctx, state, shared.dictionaries)) return undefined;
  chooseVariant(work, squashed(work));
  const found = recall(work, shared);
  return found instanceof Promise ? found.then(answerWith) : answerWith(found);

  function answerWith(
    known: KnownEntity | undefined,
  ): Prepared | Recording | undefined | Promise<Prepared | Recording> {
    if (known === undefined) return undefined;
    // The Last-Modified VALIDATE would set now: an answer that set another is out of date.
    const seconds = generatedLastModified(ctx, options);
    const answer = (at: number | undefined): Prepared | Recording =>
      shared.answers.answer(ctx, known, at === undefined ? undefined : httpDate(at));
    return seconds instanceof Promise ? seconds.then(answer) : answer(seconds);
  }
}
