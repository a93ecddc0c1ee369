/**
 * Prepared answers: the pipeline's own answer to a body it has seen,
 * remembered and given again when the same body comes back in a request
 * that would go through the pipeline with exactly the same inputs, so the
 * answer costs a few header sets instead of CHECK, OPTIMISE, COMPRESS and
 * VALIDATE. Two owners use it: cache hits (pipeline/replay/prepared-hits.ts, by key
 * and entry) and bodies the representation memo recognised
 * (pipeline/replay/memo-answers.ts, by the memo's entity).
 *
 * Nothing here decides anything the pipeline decides: the first time, the
 * whole pipeline runs, and what it changed (headers set or removed, the
 * final body) is recorded beside the response as it stood when the pipeline
 * began. A later request takes the shortcut only when the owner has checked
 * what the request brings (same Accept-Encoding, no conditional header, the
 * `buffer()` options unchanged by sections and `ctx.state.buffer`, and the
 * owner's own conditions) and its response agrees with the recorded one in
 * everything the pipeline reads or writes: status, and the headers in
 * `responseHeaderInputs` (inputs.ts) and in what the pipeline changed. Other headers (a
 * request id set by an outer middleware) are not the pipeline's business:
 * they are neither compared nor touched, so they stay this request's own.
 */
import type { Context } from 'koa';
import { setBufferBody } from '../../http/koa-body.ts';
import { responseHeaderInputs } from './inputs.ts';

/** What a prepared answer reads of the request's state. */
export interface PreparedState {
  /**
   * Set for a cold answer while a smaller one is being made: true while it
   * still is. A function that answers false at once marks an answer that
   * must not be given again (an upgrade the pipeline could not queue yet).
   */
  readonly upgradeWaits: (() => boolean) | undefined;
}

type Value = number | string | readonly string[] | undefined;

/** One remembered answer. */
export interface Prepared {
  readonly status: number;
  /** Names the response must agree on, and their values when the pipeline began. */
  readonly watched: readonly string[];
  readonly before: readonly Value[];
  /** What the pipeline set (name, value) and removed. */
  readonly set: ReadonlyArray<readonly [string, number | string | readonly string[]]>;
  readonly removed: readonly string[];
  /** The Last-Modified the pipeline set, if it set one. */
  readonly lastModified: Value;
  /** The body it sent, and its coding ('identity' for none). */
  readonly body: Buffer;
  readonly coding: string;
  /** For cold bytes sent while their upgrade waited: true while it still waits; the answer is stale after. */
  readonly upgradeWaits: (() => boolean) | undefined;
}

/** The response as it stood when the pipeline began: every header, names and values, in Node's order. */
type Snapshot = Map<string, Value>;

function sameValue(a: Value, b: Value): boolean {
  if (a === b) return true;
  if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) return false;
  return a.every((item, i) => item === b[i]);
}

/** At most this many Accept-Encoding values are remembered per body: browsers send a handful. */
export const encodingsPerBody = 16;

/** True when `known` may answer this response: still current, and its watched headers agree; allocates nothing. */
function applies(ctx: Context, known: Prepared): boolean {
  if (known.status !== ctx.response.status) return false;
  if (known.upgradeWaits !== undefined && !known.upgradeWaits()) return false;
  const res = ctx.res;
  for (let i = 0; i < known.watched.length; i++) {
    if (!sameValue(known.before[i], res.getHeader(known.watched[i]!) as Value)) return false;
  }
  return true;
}

/** Gives the remembered answer: the headers the pipeline removed and set, and its body. */
function replay(ctx: Context, known: Prepared): void {
  const res = ctx.res;
  for (let i = 0; i < known.removed.length; i++) res.removeHeader(known.removed[i]!);
  setBufferBody(ctx, known.body);
  for (let i = 0; i < known.set.length; i++) res.setHeader(known.set[i]![0], known.set[i]![1]);
}

/** Every response header, taken when the pipeline begins. */
function snapshot(ctx: Context): Snapshot {
  const all: Snapshot = new Map();
  const headers = ctx.res.getHeaders();
  for (const name in headers) all.set(name, headers[name] as Value);
  return all;
}

/**
 * After the pipeline: what it did to a plain 200 with a Buffer body, as an
 * answer for the same inputs; undefined when there is nothing to remember
 * (another status, a body that is not bytes).
 *
 * @param before - the snapshot taken when the pipeline began
 */
function recorded(ctx: Context, state: PreparedState, before: Snapshot): Prepared | undefined {
  if (ctx.status !== 200 || !Buffer.isBuffer(ctx.body)) return undefined;
  // A dictionary offer is judged on each response's head as sent (dictionaries.ts): never given again unjudged.
  if (ctx.res.hasHeader('use-as-dictionary')) return undefined;
  const after = snapshot(ctx);
  const set: Array<[string, number | string | readonly string[]]> = [];
  for (const [name, value] of after)
    if (value !== undefined && !sameValue(before.get(name), value)) set.push([name, value]);
  // Koa's body setter sets Content-Length from the body when no Transfer-Encoding is left: not twice.
  const lengthAt = set.findIndex(([name]) => name === 'content-length');
  if (lengthAt >= 0 && !after.has('transfer-encoding') && Number(set[lengthAt]![1]) === ctx.body.length)
    set.splice(lengthAt, 1);
  const removed = [...before.keys()].filter((name) => !after.has(name));
  const watched = [...new Set([...responseHeaderInputs, ...set.map(([name]) => name), ...removed])];
  return {
    status: 200,
    watched,
    before: watched.map((name) => before.get(name)),
    set,
    removed,
    lastModified: set.find(([name]) => name === 'last-modified')?.[1],
    body: ctx.body,
    coding: typeof after.get('content-encoding') === 'string' ? (after.get('content-encoding') as string) : 'identity',
    upgradeWaits: state.upgradeWaits,
  };
}

/**
 * Gives `known` when it answers this response, and returns it (the
 * pipeline is then skipped); undefined when there is none or it does not apply.
 */
export function given(ctx: Context, known: Prepared | undefined): Prepared | undefined {
  if (known === undefined || !applies(ctx, known)) return undefined;
  replay(ctx, known);
  return known;
}

/** True for an answer given, false for the recording of a run to come. */
export function isGiven(answer: Prepared | Recording): answer is Prepared {
  return 'status' in answer;
}

/** A run of the pipeline being recorded: the response as it stood when it began, and where the answer goes. */
export interface Recording {
  readonly before: Snapshot;
  /** Stores the new answer where its owner finds it again. */
  readonly keep: (prepared: Prepared) => void;
}

/** Starts recording the run of the pipeline about to begin; `keep` gets its answer (see {@link endRecording}). */
export function startRecording(ctx: Context, keep: (prepared: Prepared) => void): Recording {
  return { before: snapshot(ctx), keep };
}

/**
 * After the steps ran to their end: hands what they did to the recording's
 * owner, when it ended in a plain 200 with bytes. Not called when a step threw.
 */
export function endRecording(ctx: Context, state: PreparedState, recording: Recording): void {
  const prepared = recorded(ctx, state, recording.before);
  if (prepared !== undefined) recording.keep(prepared);
}
