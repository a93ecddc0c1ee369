/**
 * The per-response view of the options: `bufferSection` declarations and
 * `ctx.state.buffer` laid over the `buffer()` options. A per-response value
 * is held to the same check as in `buffer()` (its schema row's), and fails
 * closed: one `buffer()` would refuse is left out with a refusal, and the
 * configured value applies (docs/decisions/0038-per-response-overrides-fail-closed.md).
 */
import type { ResolvedOptions } from './option-types.ts';
import type { PerResponseRow } from './row.ts';
import { namesIn, rowOf, schema } from './schema.ts';
import { builtinMessages } from '../base/messages.ts';
import { checkTogetherPerResponse, problemOf, unknownOptionArgs, type OptionProblem } from './validate.ts';

/** `ctx.state.buffer` read as the README says: off, nothing set, or an object of overrides. */
export type ResponseOverride =
  { readonly off: true } | { readonly off: false; readonly values: Record<string, unknown> | undefined };

// Shared answers: reading the override is on every request's path and allocates nothing in the usual cases.
const turnedOff: ResponseOverride = Object.freeze({ off: true });
const nothingSet: ResponseOverride = Object.freeze({ off: false, values: undefined });

/**
 * Reads `ctx.state.buffer`: 0, false and '' turn koa-buffer off; undefined and null set nothing; an object overrides.
 *
 * @throws whatever a revoked proxy throws when asked whether it is an array
 */
export function readOverride(value: unknown): ResponseOverride {
  if (value === undefined || value === null) return nothingSet;
  if (value === 0 || value === false || value === '') return turnedOff;
  if (typeof value === 'object' && !Array.isArray(value))
    return { off: false, values: value as Record<string, unknown> };
  return nothingSet;
}

/** Entries a per-response list may hold: a longer one (a proxy may claim 2^32 - 1) is refused before it is read. */
export const perResponseListMax = 10_000;

/** A per-response value that could not be used, for the log line. */
export interface Refusal {
  /** The option's name; undefined when the whole override could not be read. */
  readonly name: string | undefined;
  /** The value as read; undefined when reading it threw. */
  readonly value: unknown;
  /** The catalog key of what `buffer()` would say of the value, or `override_unreadable` when reading it threw. */
  readonly key: string;
  /** What reading threw. */
  readonly error?: unknown;
  /** More placeholders of the problem's message, for a check that looks at two options. */
  readonly args?: Readonly<Record<string, unknown>>;
}

/** The options a per-response value may set: those a misspelt name there is compared with. */
const settable: readonly string[] = [...namesIn('section'), ...namesIn('response')];

/**
 * The problem `buffer()` would report for option `name` set to `value`
 * (its catalog key, and the placeholders a check that looks at two options
 * adds), or undefined when it would take it, for a per-response value:
 * there `undefined` means off or none, except for varyBy. Never throws: a
 * value whose check throws (a proxy) is refused.
 *
 * @param name - an option name
 * @param value - the value, as read once (see {@link readOverrideValue})
 * @param base - the `buffer()` options, for the checks that look at two options
 */
export function perResponseRefusal(name: string, value: unknown, base?: ResolvedOptions): OptionProblem | undefined {
  const check = rowOf(name)?.check;
  if (check === undefined)
    return { key: 'unknown_option', args: unknownOptionArgs(name, settable, base?.messages ?? builtinMessages) };
  // Per response, undefined means off or none, where buffer() refuses it too; but no varyBy is a key for everyone.
  if (value === undefined) return name === 'varyBy' ? { key: schema.varyBy.check.key } : undefined;
  try {
    if (!check.ok(value)) return problemOf(check, name, value);
    return checkTogetherPerResponse(name, value, base);
  } catch {
    return { key: check.key };
  }
}

/**
 * Reads `source[name]` once, as the value every later look sees: a list is
 * copied (a proxy could answer a second reading differently), and so are
 * the levels of compressionLevels. Other objects keep their identity (a
 * store, a function).
 *
 * @returns the value, or what reading it threw
 */
export function readOverrideValue(source: object, name: string): { value: unknown } | { error: unknown } {
  try {
    const value: unknown = (source as Record<string, unknown>)[name];
    if (Array.isArray(value)) {
      const length = value.length;
      if (!(length <= perResponseListMax)) return { error: new RangeError(`a list of ${length} entries`) };
      const copy: unknown[] = [];
      for (let i = 0; i < length; i++) copy.push(value[i]);
      return { value: copy };
    }
    if (name === 'compressionLevels' && value !== null && typeof value === 'object')
      return { value: Object.fromEntries(Object.entries(value)) };
    return { value };
  } catch (error) {
    return { error };
  }
}

/** The options the per-response layers may not change: read once, when buffer() runs. */
const registrationOnly = namesIn('registration');

/**
 * The options for one response: the `buffer()` options, then the innermost
 * section declarations, then `ctx.state.buffer`, each laid over the previous
 * one key deep. A value of `ctx.state.buffer` its option would refuse in
 * `buffer()` is left out (the configured value applies) and handed to
 * `refused`; a refused varyBy sets `varyByRefused`, so the request
 * bypasses the cache. Never throws.
 *
 * @param base - the `buffer()` options
 * @param section - the section declarations, validated when the section was made
 * @param override - `ctx.state.buffer` when it is an object
 * @param refused - told of each value left out
 */
export function responseOptions(
  base: ResolvedOptions,
  section: Partial<ResolvedOptions> | undefined,
  override: Record<string, unknown> | undefined,
  refused: (refusal: Refusal) => void = () => undefined,
): ResolvedOptions {
  if (section === undefined && override === undefined) return base;
  const merged: ResolvedOptions = { ...base, ...section };
  if (!override) return merged;
  let names: string[];
  try {
    names = Object.keys(override);
  } catch (error) {
    refused({ name: undefined, value: undefined, key: 'override_unreadable', error });
    return merged;
  }
  let overridden: Set<string> | undefined;
  for (const name of names) {
    // Read once, when buffer() runs; a per-response value is not looked at.
    if (registrationOnly.has(name)) continue;
    const read = readOverrideValue(override, name);
    const problem = 'error' in read ? { key: 'override_unreadable' } : perResponseRefusal(name, read.value, base);
    if (problem !== undefined) {
      if (name === 'varyBy') merged.varyByRefused = true;
      const value = 'value' in read ? read.value : undefined;
      refused({ name, value, key: problem.key, error: (read as { error?: unknown }).error, args: problem.args });
      continue;
    }
    const value = (read as { value: unknown }).value;
    // A name that is no registration option and was not refused has a per-response row.
    const row = rowOf(name) as PerResponseRow<unknown, unknown, 'section' | 'response'>;
    (merged as unknown as Record<string, unknown>)[name] = row.perResponse(value, row.default);
    if (value !== undefined && value !== null) (overridden ??= new Set()).add(name);
  }
  if (overridden !== undefined) merged.overridden = overridden;
  return merged;
}
