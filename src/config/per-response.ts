/**
 * The options of one response, resolved in this one place: the `buffer()`
 * options, then the innermost `bufferSection` declarations, then
 * `ctx.state.buffer`. `ctx.bufferIsCached()` resolves them when the action
 * asks, and the middleware again once the action is done (sections and
 * `ctx.state.buffer` may have changed in between); each result is held on the
 * request state, where the cache and the pipeline read it.
 *
 * Per-response values fail closed
 * (docs/decisions/0038-per-response-overrides-fail-closed.md): one `buffer()` would refuse is left out with one
 * log line and the configured value applies, a varyBy that is not a list
 * of header names makes the request bypass the cache, and nothing the
 * application put there (a getter or a proxy that throws) throws from here.
 */
import type { Context } from 'koa';
import { errorText, shownKey, shownValue } from '../base/describe.ts';
import {
  perResponseRefusal,
  readOverride,
  readOverrideValue,
  responseOptions,
  type Refusal,
  type ResolvedOptions,
} from './options.ts';
import { sectionDeclarations } from './section.ts';

/** The part of the request state this reads and writes. */
interface OptionsHolder {
  readonly config: ResolvedOptions;
  options: ResolvedOptions | undefined;
  /** The override whose refusals were logged, and their names: each is logged once per request, not per resolution. */
  refusalsLogged: { readonly from: unknown; readonly names: Set<string | undefined> } | undefined;
}

/** Where a per-response value was set, as log lines name it. */
const where = 'ctx.state.buffer';

/** Stands for `ctx.state.buffer` when reading it threw. */
const unreadable = Symbol('unreadable ctx.state.buffer');

/**
 * Resolves the options of the response now and holds them on the state.
 * Allocates nothing when neither a section nor `ctx.state.buffer` sets any.
 * Never throws.
 *
 * @param ctx - the request
 * @param state - its koa-buffer state
 * @returns the options; undefined when `ctx.state.buffer` turns koa-buffer off for this response
 */
export function resolveResponseOptions(ctx: Context, state: OptionsHolder): ResolvedOptions | undefined {
  let stash: unknown;
  let override: ReturnType<typeof readOverride>;
  try {
    stash = (ctx.state as Record<string, unknown> | undefined)?.buffer;
    override = readOverride(stash);
  } catch (error) {
    logRefusal(state, unreadable, { name: undefined, value: undefined, key: 'override_unreadable', error });
    state.options = responseOptions(state.config, sectionDeclarations(ctx), undefined);
    return state.options;
  }
  if (override.off) return (state.options = undefined);
  state.options = responseOptions(
    state.config,
    sectionDeclarations(ctx),
    override.values,
    override.values && ((refusal) => logRefusal(state, stash, refusal)),
  );
  return state.options;
}

/** Logs a refused value of `from` (the override object), unless this request logged it already. */
function logRefusal(state: OptionsHolder, from: unknown, refusal: Refusal): void {
  let logged = state.refusalsLogged;
  if (logged === undefined || logged.from !== from) state.refusalsLogged = logged = { from, names: new Set() };
  if (logged.names.has(refusal.name)) return;
  logged.names.add(refusal.name);
  const { logger, messages } = state.config;
  logger.warn(messages.text(refusalLine(refusal), refusalArgs(where, refusal, messages)));
}

/** The log line of a refusal. */
function refusalLine(refusal: Refusal): string {
  if (refusal.name === undefined) return 'log_override_unreadable';
  return refusal.name === 'varyBy' ? 'log_override_vary_by' : 'log_override_refused';
}

/** The placeholders of a refusal's log line: where it was set, the option, its value, and what is wrong with it. */
export function refusalArgs(
  setIn: string,
  refusal: Refusal,
  messages: ResolvedOptions['messages'],
): Record<string, string | undefined> {
  try {
    const error = refusal.error === undefined ? undefined : errorText(refusal.error);
    // Shown short and without secrets: a refused value may be a Redis URL with its password.
    const value = error === undefined ? shownValue(refusal.value) : 'unreadable';
    // A name that is no identifier is quoted: a key holding a line break must not forge a log line.
    const name = refusal.name === undefined ? undefined : shownKey(refusal.name);
    const problem = messages.text(refusal.key, { name, value, error, ...refusal.args });
    return { where: setIn, name, value, problem };
  } catch {
    // What was thrown cannot itself be described (a proxy): the line still names the option.
    const name = refusal.name === undefined ? undefined : shownKey(refusal.name);
    return { where: setIn, name, value: 'unreadable', problem: refusal.key };
  }
}

/** Per-call overrides of `ctx.bufferIsCached()`, as koa-cash's `ctx.cashed(maxAge)`. */
export interface BufferIsCachedOptions {
  /** Seconds or a duration string this response stays fresh in the cache, over `cacheDuration` and its Cache-Control. */
  cacheDuration?: number | string;
  /** Tags of this response's entry, kept in `ctx.state.buffer.cacheTags`. */
  cacheTags?: string[];
}

/** Where per-call overrides are set, as log lines name it. */
const setByCall = 'ctx.bufferIsCached()';

/**
 * Lays the per-call overrides of `ctx.bufferIsCached()` over
 * `ctx.state.buffer`, where every per-response option lives (and where the
 * tags are read from), unless that turns koa-buffer off for this response.
 * A value the option would refuse in `buffer()`, or any other argument, is
 * left out with one log line (a per-call value fails closed as every
 * per-response value does); nothing the argument or `ctx.state.buffer`
 * holds makes it throw.
 */
export function layCallOverrides(ctx: Context, overrides: unknown, config: ResolvedOptions): void {
  const { logger, messages } = config;
  const refuse = (problem: string): void => logger.warn(messages.text('cached_overrides', { problem }));
  try {
    if (overrides === null || typeof overrides !== 'object' || Array.isArray(overrides))
      return refuse('the argument is not an object');
    const accepted: Record<string, unknown> = {};
    for (const name of Object.keys(overrides)) {
      if (name !== 'cacheDuration' && name !== 'cacheTags') {
        refuse(`${JSON.stringify(name)} is not one of them`);
        continue;
      }
      const read = readOverrideValue(overrides, name);
      const problem = 'error' in read ? { key: 'override_unreadable' } : perResponseRefusal(name, read.value, config);
      if (problem !== undefined) {
        const refusal = {
          name,
          value: 'value' in read ? read.value : undefined,
          key: problem.key,
          error: (read as { error?: unknown }).error,
          args: problem.args,
        };
        logger.warn(messages.text('log_override_refused', refusalArgs(setByCall, refusal, messages)));
      } else if ((read as { value: unknown }).value !== undefined) accepted[name] = (read as { value: unknown }).value;
    }
    const stash: unknown = ctx.state.buffer;
    if (stash === 0 || stash === false || stash === '') return; // koa-buffer is off for this response
    const values = stash !== null && typeof stash === 'object' ? (stash as Record<string, unknown>) : {};
    ctx.state.buffer = { ...values, ...accepted };
  } catch (error) {
    // The argument or ctx.state.buffer fought back (a throwing getter, a proxy): none of it is used.
    logger.warn(
      messages.text(
        'log_override_unreadable',
        refusalArgs(setByCall, { name: undefined, value: undefined, key: 'override_unreadable', error }, messages),
      ),
    );
  }
}
