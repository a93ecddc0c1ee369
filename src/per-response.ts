/**
 * The options of one response, resolved in this one place: the `buffer()`
 * options, then the innermost `bufferSection` declarations, then
 * `ctx.state.buffer`. `ctx.bufferIsCached()` resolves them when the action
 * asks, and the middleware again once the action is done (sections and
 * `ctx.state.buffer` may have changed in between); each result is held on the
 * request state, where the cache and the pipeline read it.
 */
import type { Context } from 'koa';
import { readOverride, responseOptions, type ResolvedOptions } from './options.ts';
import { sectionDeclarations } from './section.ts';

/** The part of the request state this reads and writes. */
interface OptionsHolder {
  readonly config: ResolvedOptions;
  options: ResolvedOptions | undefined;
}

/**
 * Resolves the options of the response now and holds them on the state.
 * Allocates nothing when neither a section nor `ctx.state.buffer` sets any.
 *
 * @param ctx - the request
 * @param state - its koa-buffer state
 * @returns the options; undefined when `ctx.state.buffer` turns koa-buffer off for this response
 */
export function resolveResponseOptions(ctx: Context, state: OptionsHolder): ResolvedOptions | undefined {
  const override = readOverride((ctx.state as Record<string, unknown> | undefined)?.buffer);
  state.options = override.off ? undefined : responseOptions(state.config, sectionDeclarations(ctx), override.values);
  return state.options;
}
