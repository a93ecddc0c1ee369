/**
 * Memo answers: a body the representation memo recognised (a page rendered
 * again with the same bytes) is answered as the pipeline answered it last
 * time, by the memo's entity and the request's Accept-Encoding
 * (prepared-answer.ts says how and when). Without it a repeated page paid
 * OPTIMISE, COMPRESS and VALIDATE again for a known answer; giving the
 * answer again is what brought the CPU of a repeated page down
 * (docs/decisions/0035-repeated-page-against-bare-koa-rendering.md).
 *
 * The caller checks what the request brings beyond Accept-Encoding with
 * the one rule for answering again (inputs.ts). Last-Modified can move while the entity stays (an
 * edited template whose output did not change): the caller passes the one
 * the pipeline would set now, and an answer that set another is not given.
 *
 * The answers hang off the memo's entity in a WeakMap, so they go when the
 * memo drops the entity. Their bodies are the memo's own coding entries; one
 * the memo evicted lives on until its entity goes too.
 */
import type { Context } from 'koa';
import type { KnownEntity } from '../../encoding/memo.ts';
import { encodingsPerBody, given, startRecording, type Prepared, type Recording } from './prepared-answer.ts';

/** Accept-Encoding values longer than this are answered afresh (browsers send a few dozen bytes). */
const encodingsLongest = 256;

/** The remembered answers of one middleware's memo. */
export class MemoAnswers {
  readonly #byEntity = new WeakMap<KnownEntity, Map<string, Prepared>>();

  /**
   * Gives the remembered answer for `known` and returns it (the pipeline is
   * skipped), or returns the recording of this run of the pipeline, to be
   * ended once its steps are done.
   *
   * @param ctx - the request, whose body the memo recognised as `known`
   * @param known - the memo's entity
   * @param lastModified - the Last-Modified the pipeline would set now (undefined for none)
   */
  answer(ctx: Context, known: KnownEntity, lastModified: string | undefined): Prepared | Recording {
    const encodings = ctx.request.headers['accept-encoding'] ?? '';
    const prepared = this.#byEntity.get(known)?.get(encodings);
    return (
      given(ctx, prepared?.lastModified === lastModified ? prepared : undefined) ??
      startRecording(ctx, (made) => this.#keep(known, encodings, made))
    );
  }

  #keep(known: KnownEntity, encodings: string, prepared: Prepared): void {
    // Answers are not charged to the memo's budget: a long header (any client may send one) is not remembered.
    if (encodings.length > encodingsLongest) return;
    let byEncodings = this.#byEntity.get(known);
    if (byEncodings === undefined) this.#byEntity.set(known, (byEncodings = new Map()));
    if (byEncodings.size >= encodingsPerBody && !byEncodings.has(encodings)) return;
    byEncodings.set(encodings, prepared);
  }
}
