/**
 * The coding choice, one for both paths (the buffered steps and the stream
 * path): whether this response may be compressed at all (the switches an
 * application sets, its media type), then which coding the client gets
 * among those offered, by its q-values and the server's order, for a body
 * large enough to be worth it, in a coding this process can make.
 */
import type { Context } from 'koa';
import type { ResolvedOptions } from '../config/options.ts';
import { codingAvailable } from '../http/codings.ts';
import { negotiate, type Coding } from '../http/negotiate.ts';
import { addVary } from '../http/vary.ts';
import { compressionRefusal } from './switches.ts';

/** The coding chosen, or identity with the reason (for the debug log). */
export type Choice =
  | { readonly coding: Coding; readonly reason?: undefined }
  | { readonly coding: 'identity'; readonly reason: string; readonly unavailable?: Coding };

/**
 * Why this response is sent as it is (undefined when it may be compressed);
 * a compressible one gets `Vary: Accept-Encoding` whatever coding it is then sent in.
 */
export function compressible(ctx: Context, options: ResolvedOptions, type: string): string | undefined {
  const refusal = compressionRefusal(ctx, options, type);
  if (refusal === undefined) addVary(ctx, 'Accept-Encoding');
  return refusal;
}

/**
 * The coding the client gets among `offered`, for a body of `length` bytes
 * (undefined when not known yet, as for a stream that declared none).
 * `unavailable` names a coding chosen that this process cannot make (zstd
 * without zstd-napi): identity then.
 */
export function chooseCoding(
  ctx: Context,
  options: ResolvedOptions,
  offered: readonly Coding[],
  length: number | undefined,
): Choice {
  const { coding, reason } = negotiate(ctx.request.headers['accept-encoding'], offered);
  if (coding === 'identity') return { coding, reason: reason ?? 'identity' };
  if (length !== undefined && length < options.minCompressSize)
    return { coding: 'identity', reason: `smaller than minCompressSize (${options.minCompressSize})` };
  if (!codingAvailable(coding))
    return { coding: 'identity', reason: `${coding} is not available`, unavailable: coding };
  return { coding };
}
