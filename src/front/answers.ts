/**
 * What a front (front.ts) answers from: the head and body a cache hit went
 * out with through Koa, after every middleware had run, with what the
 * answer depends on, so the front can tell when a request would get the very
 * same answer. Bounded in bytes (bodies counted, though the memo usually
 * holds the same bytes).
 */
import type { CacheEntry } from '../cache/entry.ts';
import type { Slot } from '../cache/hit/lookup.ts';

/** One learned answer. */
export interface FrontAnswer {
  /** Where the entry lives: a request is answered only while a lookup there finds the same entry fresh. */
  readonly slot: Slot;
  readonly created: number;
  readonly length: number;
  /** Request headers the key and the response's Vary depend on, and their values in the request it was learned from. */
  readonly compared: readonly string[];
  readonly values: readonly (string | undefined)[];
  /** Whether the request came over TLS: the key holds the scheme. */
  readonly encrypted: boolean;
  /**
   * The head as sent, flat (`[name, value, …]`, as `res.writeHead` takes it),
   * ending in Age and Cache-Status, whose values are written per answer.
   */
  readonly head: unknown[];
  /** The head of a 304 to it: without Content-Type, Content-Length and Content-Encoding, as Koa sends one. */
  readonly notModifiedHead: unknown[];
  readonly etag: string | undefined;
  readonly lastModified: string | undefined;
  readonly body: Buffer;
  /** The coding sent and the entity's length, for the counters of bytes per coding. */
  readonly coding: string;
  readonly entityLength: number;
}

/**
 * Learned answers by host, URL and Accept-Encoding. A plain Map, oldest
 * learned first out when the bytes go over the budget: a front answer is
 * on the path of every request it takes, where an LRU's bookkeeping on
 * each read cost more than the rest of the lookup.
 */
export class FrontAnswers {
  readonly #answers = new Map<string, FrontAnswer>();
  #bytes = 0;
  readonly maxBytes: number;

  constructor(maxBytes: number) {
    this.maxBytes = maxBytes;
  }

  /** Bytes held. */
  get bytes(): number {
    return this.#bytes;
  }

  get(key: string): FrontAnswer | undefined {
    return this.#answers.get(key);
  }

  set(key: string, answer: FrontAnswer): void {
    const size = sizeOf(key, answer);
    // An answer larger than the whole budget is not kept.
    if (size > this.maxBytes) return;
    this.delete(key);
    this.#answers.set(key, answer);
    this.#bytes += size;
    for (const [oldest, kept] of this.#answers) {
      if (this.#bytes <= this.maxBytes) break;
      this.#answers.delete(oldest);
      this.#bytes -= sizeOf(oldest, kept);
    }
  }

  delete(key: string): void {
    const known = this.#answers.get(key);
    if (known === undefined) return;
    this.#answers.delete(key);
    this.#bytes -= sizeOf(key, known);
  }
}

/** What an answer is charged: its body (the memo usually holds the same bytes), its key, and about 64 bytes a header. */
function sizeOf(key: string, answer: FrontAnswer): number {
  return answer.body.length + key.length * 2 + answer.head.length * 64 + 256;
}

/** The key of a request's answer: host, URL and Accept-Encoding, each as sent. */
export function answerKey(host: string, url: string, acceptEncoding: string | undefined): string {
  return `${host}\n${url}\n${acceptEncoding ?? ''}`;
}

/** True when `answer` was learned from an entry that may still be this one. */
export function sameEntry(answer: FrontAnswer, entry: CacheEntry): boolean {
  return entry.created === answer.created && entry.body.length === answer.length;
}
