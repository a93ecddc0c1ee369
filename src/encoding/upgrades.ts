/**
 * Hot upgrades: a body seen again is recompressed at its coding's smallest
 * setting, and the representation memo then serves those bytes instead of
 * the cold ones (adaptive.ts). An upgrade never runs on a request's path:
 * the request that asks for it is answered with the cold bytes at once, and
 * the upgrade starts from `setImmediate` once that response is sent, in the
 * niced thread of upgrade-thread.ts, never awaited by anyone.
 *
 * Bounded so that it can never cost the requests anything that matters:
 * - size: bodies above {@link upgradeMaxSize} keep their cold bytes;
 * - concurrency: one upgrade at a time per process;
 * - queue: at most {@link queuedMax} bodies and {@link queuedMaxBytes}
 *   bytes wait; beyond that a request is simply not upgraded this time, and
 *   its next sighting asks again;
 * - memory: the upgraded bytes are kept in the memo, so its byte budget
 *   counts them, and an upgrade the memo evicts is redone on a later
 *   sighting. A failed upgrade, or one no smaller than the cold bytes, is
 *   remembered as "no gain" there, so it is not retried.
 */
import { upgradeChannel, type UpgradeMessage } from '../base/channels.ts';
import type { ServerResponse } from 'node:http';
import { finished } from 'node:stream';
import type { DecisionLog } from '../base/decision-log.ts';
import type { RepresentationMemo } from './memo.ts';
import type { Coding } from '../http/negotiate.ts';
import { UpgradeThread } from './upgrade-thread.ts';

/**
 * 4 MiB: br 11 is slow enough that a body this large keeps the thread busy
 * for seconds already, while a page that large gains no more than a small
 * one. Larger bodies would make every other upgrade wait that much longer,
 * and would take a large share of the default memo each
 * (docs/decisions/0023-adaptive-compression-by-body-temperature.md).
 */
export const upgradeMaxSize = 4 * 1024 * 1024;

/** Bodies waiting for their upgrade, at most. */
export const queuedMax = 32;

/** Bytes of bodies waiting or under way, at most: two of the largest. */
export const queuedMaxBytes = 2 * upgradeMaxSize;

interface Job {
  readonly key: string;
  readonly md5: string;
  readonly entity: Buffer;
  readonly coding: Coding;
  readonly level: number;
  /** Bytes of the cold representation: the upgrade must beat them to be kept. */
  readonly coldSize: number;
}

// One thread for every middleware of the process: at most one upgrade runs at a time anyway.
let sharedThread: UpgradeThread | undefined;

/** The upgrade queue of one `buffer()` middleware. */
/** Publishes what became of an upgrade on `koa-buffer:upgrade`, when anyone listens. */
function published(
  result: UpgradeMessage['result'],
  coding: string,
  level: number,
  size: number,
  done?: Pick<UpgradeMessage, 'compressedSize' | 'seconds'>,
): void {
  if (upgradeChannel.hasSubscribers)
    upgradeChannel.publish({ result, coding, level, size, ...done } satisfies UpgradeMessage);
}

export class Upgrades {
  readonly #memo: RepresentationMemo;
  readonly #log: DecisionLog;
  readonly #queue: Job[] = [];
  /** Keys waiting or under way, so a body is upgraded once however many requests ask. */
  readonly #keys = new Set<string>();
  #bytes = 0;
  #running = false;

  constructor(memo: RepresentationMemo, log: DecisionLog) {
    this.#memo = memo;
    this.#log = log;
  }

  /** Whether the upgrade of entity `md5` to `coding` at `level` waits or runs. */
  waits(md5: string, coding: Coding, level: number): boolean {
    return this.#keys.has(`${md5}\0${coding}\0${level}`);
  }

  /** Bytes of the bodies waiting or under way (at most {@link queuedMaxBytes}). */
  get bytes(): number {
    return this.#bytes;
  }

  /** Bodies waiting or under way. */
  get pending(): number {
    return this.#keys.size;
  }

  /**
   * Asks for the entity `md5` in `coding` at `level` to be made and kept in
   * the memo, off the request path.
   *
   * @param response - the response that asked: the queue starts once it is sent (or its client has gone)
   * @returns true when the upgrade waits or runs (the cold answer holds until it is done), false when it was refused
   */
  request(
    md5: string,
    entity: Buffer,
    coding: Coding,
    level: number,
    coldSize: number,
    response?: ServerResponse,
  ): boolean {
    if (!this.#memo.enabled || entity.length > upgradeMaxSize) return false;
    const key = `${md5}\0${coding}\0${level}`;
    if (this.#keys.has(key)) return true;
    if (this.#queue.length >= queuedMax || this.#bytes + entity.length > queuedMaxBytes) {
      this.#log.stats.upgrades.dropped++;
      published('dropped', coding, level, entity.length);
      return false;
    }
    this.#log.stats.upgrades.queued++;
    this.#queue.push({ key, md5, entity, coding, level, coldSize });
    this.#keys.add(key);
    this.#bytes += entity.length;
    this.#log.debug('log_upgrade_queued', { size: entity.length, coding, level, pending: this.#keys.size });
    if (!this.#running) {
      this.#running = true;
      const start = (): void => void setImmediate(() => void this.#drain());
      if (response && !response.writableFinished && !response.destroyed) finished(response, start);
      else start();
    }
    return true;
  }

  /** Runs the queue one job at a time; never throws. */
  async #drain(): Promise<void> {
    sharedThread ??= new UpgradeThread();
    for (let job = this.#queue.shift(); job !== undefined; job = this.#queue.shift()) {
      const started = performance.now();
      try {
        const bytes = await sharedThread.compress(job.entity, job.coding, job.level);
        const smaller = bytes.length < job.coldSize;
        this.#memo.remember(job.md5, job.coding, job.level, smaller ? bytes : null);
        this.#log.stats.upgrades.done++;
        published('done', job.coding, job.level, job.entity.length, {
          compressedSize: bytes.length,
          seconds: (performance.now() - started) / 1000,
        });
        this.#log.debug('log_upgraded', {
          size: job.entity.length,
          compressedSize: bytes.length,
          coding: job.coding,
          level: job.level,
          coldSize: job.coldSize,
          memoSize: this.#memo.size,
        });
      } catch (error) {
        this.#memo.remember(job.md5, job.coding, job.level, null);
        this.#log.stats.upgrades.failed++;
        published('failed', job.coding, job.level, job.entity.length);
        this.#log.error('log_upgrade_failed', {
          size: job.entity.length,
          coding: job.coding,
          level: job.level,
          error: (error as Error)?.message ?? String(error),
        });
      } finally {
        this.#keys.delete(job.key);
        this.#bytes -= job.entity.length;
      }
    }
    this.#running = false;
  }
}
