/**
 * COMPRESS: the coding this client gets (coding.ts, shared with the stream
 * path), and the bytes in it. Nothing is compressed when VALIDATE will
 * answer 304 for what the client holds; a compression dictionary coding is
 * tried first where a rule offers one; otherwise the memo's bytes, or a
 * compression now, shared by concurrent requests for the same new entity.
 * With adaptive compression a body seen for the first time gets its cold
 * coding, and one seen again queues its smallest encoding, off this
 * request's path (encoding/adaptive.ts, encoding/upgrades.ts).
 */
import {
  coldLevel,
  heldRepresentation,
  hotCoding,
  hotLevel,
  temperatureOrders,
  type Held,
} from '../encoding/adaptive.ts';
import { compress } from '../encoding/compress.ts';
import { upgradeMaxSize } from '../encoding/upgrades.ts';
import { isGetOrHead } from '../http/headers.ts';
import type { Coding } from '../http/negotiate.ts';
import { chooseCoding, compressible } from './coding.ts';
import { digest, type Shared, type Step, type Work } from './work.ts';

/**
 * The representation of the current content the client already holds, when
 * VALIDATE will answer 304 for it: If-None-Match names this entity in any
 * coding the client accepts (encoding/adaptive.ts), so nothing needs compressing,
 * whichever coding the server would prefer now.
 */
function clientHolds(work: Work, shared: Shared): Held | undefined {
  const { ctx, options } = work;
  const ifNoneMatch = ctx.request.headers['if-none-match'];
  // A changing body's tag names the bytes sent (VALIDATE compares it as it is), not the entity.
  if (ifNoneMatch === undefined || !options.generate304 || !options.generateEtag || ctx.response.status !== 200)
    return undefined;
  if (work.changing) return undefined;
  if (!isGetOrHead(ctx.request.method) || ctx.res.hasHeader('ETag')) return undefined;
  const levels = options.compressionLevels;
  return heldRepresentation(
    ifNoneMatch,
    digest(work, shared),
    ctx.request.headers['accept-encoding'],
    options.encodings,
    options.adaptiveCompression ? (coding) => hotLevel(coding, levels) : undefined,
  );
}

/**
 * The entity in `coding`: from the memo, else compressed now (concurrent
 * requests for the same new entity share one compression). null when
 * compression does not make it smaller.
 */
async function encoded(work: Work, coding: Coding, level: number, shared: Shared): Promise<Buffer | null> {
  const memo = shared.memo.enabled && !work.changing;
  const key = memo ? `${digest(work, shared)}\0${coding}\0${level}` : '';
  if (memo) {
    const known = shared.memo.encoded(work.md5!, coding, level);
    if (known !== undefined) return known;
  }
  const run = async (): Promise<Buffer | null> => {
    const started = performance.now();
    const { bytes, mode } = await compress(work.entity, coding, level);
    const compression = shared.log.stats.compression;
    compression.calls++;
    compression.seconds += (performance.now() - started) / 1000;
    shared.log.debug('log_compressed', { size: work.entity.length, compressedSize: bytes.length, coding, level, mode });
    return bytes.length < work.entity.length ? bytes : null;
  };
  if (!memo) return run();
  let pending = shared.compressing.get(key);
  if (!pending) {
    pending = run().finally(() => shared.compressing.delete(key));
    shared.compressing.set(key, pending);
    shared.memo.remember(work.md5!, coding, level, await pending);
  }
  return pending;
}

/** The `upgradeWaits` of an answer that a prepared answer must not repeat: an upgrade is still to be asked for. */
const notFinal = (): boolean => false;

/** Bodies below this many bytes are compressed at the fixed level even when cold. */
const smallBody = 1024;

/**
 * Adaptive compression (encoding/adaptive.ts): the hot bytes when the memo
 * has them; else the cold bytes in `cold`, and when those were already in
 * the memo the body is hot, so its smallest encoding is queued, off this
 * request's path. null when compression does not make the body smaller.
 */
async function adaptiveEncoded(work: Work, cold: Coding, shared: Shared): Promise<Buffer | null> {
  const { ctx, options, state, entity } = work;
  // A small body costs microseconds at any usual level, and the cheapest levels may not shrink it at all
  // (87 bytes of HTML: br 2 gives 91, br 4 gives 76): it gets the fixed level.
  const coldAt =
    entity.length < smallBody ? options.compressionLevels[cold] : coldLevel(cold, options.compressionLevels);
  // Without the memo nothing is ever seen twice, and a changing body is never seen again: both stay cold.
  if (!shared.memo.enabled || work.changing) return encoded(work, cold, coldAt, shared);
  const md5 = digest(work, shared);
  const hot = hotCoding(ctx.request.headers['accept-encoding'], temperatureOrders(options.encodings));
  const hotAt = hot === undefined ? 0 : hotLevel(hot, options.compressionLevels);
  // A Buffer: upgraded; null: the upgrade gained nothing; undefined: not upgraded (yet).
  const hotBytes = hot === undefined ? null : shared.memo.encoded(md5, hot, hotAt);
  if (hotBytes) {
    work.coding = hot!;
    work.hotLevel = hotAt;
    return hotBytes;
  }
  const seen = shared.memo.encoded(md5, cold, coldAt) !== undefined;
  const bytes = await encoded(work, cold, coldAt, shared);
  // Seen before, so hot, and no upgrade known: ask for one. A prepared hit made of this answer lasts while it waits.
  const upgradable = hot !== undefined && hotBytes === undefined && (hot !== cold || hotAt !== coldAt);
  if (seen && upgradable && shared.upgrades.request(md5, entity, hot, hotAt, bytes?.length ?? entity.length, ctx.res))
    state.upgradeWaits = () => shared.upgrades.waits(md5, hot!, hotAt);
  // Not seen before, or the queue was full: a later request asks again, so this answer must not be given again.
  else if (upgradable && entity.length <= upgradeMaxSize) state.upgradeWaits = notFinal;
  return bytes;
}

export const compressStep: Step = async (work, shared) => {
  const { ctx, options } = work;
  const identity = (reason: string): true => {
    shared.log.debug('log_identity', { size: work.entity.length, reason });
    return true;
  };
  const refusal = compressible(ctx, options, work.type);
  if (refusal !== undefined) return identity(refusal);
  const rule = shared.dictionaries?.scope(ctx, work.type);
  if (rule !== undefined) shared.dictionaries!.offer(ctx, rule, work.entity, options);
  const held = clientHolds(work, shared);
  if (held) {
    // A 304 follows (VALIDATE), with the tag of what the client holds: nothing to compress.
    work.coding = held.coding;
    work.hotLevel = held.hotLevel;
    if (held.coding !== 'identity') ctx.response.set('Content-Encoding', held.coding);
    return true;
  }
  if (rule !== undefined && work.entity.length >= options.minCompressSize) {
    const level = options.compressionLevels.zstd;
    const coded = await shared.dictionaries!.encode(ctx, rule, work.entity, () => digest(work, shared), level);
    if (coded !== undefined) {
      work.coding = coded.tag;
      work.payload = coded.bytes;
      ctx.response.set('Content-Encoding', 'dcz');
      shared.log.debug('log_coding', { coding: 'dcz', size: work.payload.length });
      return true;
    }
  }
  const adaptive = options.adaptiveCompression;
  const offered = adaptive ? temperatureOrders(options.encodings).cold : options.encodings;
  const choice = chooseCoding(ctx, options, offered, work.entity.length);
  if (choice.coding === 'identity') {
    if (choice.unavailable !== undefined) shared.log.error('log_encoding_unavailable', { name: choice.unavailable });
    return identity(choice.reason);
  }
  const { coding } = choice;
  work.coding = coding;
  const bytes = adaptive
    ? await adaptiveEncoded(work, coding, shared)
    : await encoded(work, coding, options.compressionLevels[coding], shared);
  if (bytes === null) {
    work.coding = 'identity';
    work.hotLevel = undefined;
    return identity(`${coding} would not make it smaller`);
  }
  work.payload = bytes;
  ctx.response.set('Content-Encoding', work.coding);
  shared.log.debug('log_coding', { coding: work.coding, size: work.payload.length });
  return true;
};
