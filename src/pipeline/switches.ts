/**
 * The per-response switches an application already sets for koa-compress and
 * that koa-buffer honours the same way: `ctx.compress` and the response's
 * `Cache-Control: no-transform` (RFC 9111 5.2.2.6: an intermediary, and so a
 * middleware between the action and the wire, must not change the content).
 */
import type { Context } from 'koa';
import type { ResolvedOptions } from '../config/options.ts';
import { parseCacheControl } from '../http/cache-control.ts';
import { responseHeader } from '../http/headers.ts';

declare module 'koa' {
  interface DefaultContext {
    /**
     * koa-compress's switch, honoured by koa-buffer: `false` never compresses
     * this response; `true` compresses it even when its media type is not in
     * `compressibleTypes`; unset leaves the choice to the options.
     */
    compress?: CompressSwitch;
  }
}

/** The values `ctx.compress` takes. */
export type CompressSwitch = boolean | undefined;

/** True when the response says `Cache-Control: no-transform`: neither squashed nor compressed. */
export function noTransform(ctx: Context): boolean {
  return parseCacheControl(responseHeader(ctx, 'Cache-Control')).directives.has('no-transform');
}

/**
 * Why this response must not be compressed, or undefined when it may be:
 * compressContent off, `ctx.compress === false`, no-transform, or a type outside
 * compressibleTypes that `ctx.compress === true` does not force.
 */
export function compressionRefusal(ctx: Context, options: ResolvedOptions, type: string): string | undefined {
  if (!options.compressContent) return 'compressContent is off';
  const forced = (ctx as { compress?: unknown }).compress;
  if (forced === false) return 'ctx.compress is false';
  if (noTransform(ctx)) return 'Cache-Control: no-transform';
  if (forced !== true && !options.compressibleTypes.matches(type)) return `${type} is not compressible`;
  return undefined;
}
