/**
 * Validation of the `buffer()` options, as the Perl original does it:
 * option names are checked in ASCII order, unknown ones at their place in
 * it, only the first problem is reported, and the checks that look at
 * several options come last. Each option's own check is its schema row's.
 */
import { shownKey, shownValue } from '../base/describe.ts';
import { BufferOptionError } from '../base/errors.ts';
import type { MessageArgs, Messages } from '../base/messages.ts';
import type { CacheLock } from '../locks/protocol.ts';
import { canonicalCoding } from '../http/negotiate.ts';
import { isNil } from './checks.ts';
import { nearestName } from './nearest.ts';
import type { ResolvedOptions } from './option-types.ts';
import type { Check } from './row.ts';
import { rowOf, schema } from './schema.ts';

/** A problem with an option: the catalog key and the placeholders of its message. */
export interface OptionProblem {
  readonly key: string;
  readonly args?: MessageArgs;
}

/**
 * The placeholders every option error fills: the option's name and the
 * value it was given, shown short and without secrets (base/describe.ts).
 */
export const optionArgs = (name: string, value: unknown, more?: MessageArgs): MessageArgs => ({
  name,
  value: shownValue(value),
  ...more,
});

/**
 * The placeholders of `unknown_option`: the name as given (quoted when it is
 * no identifier) and, when one of `known` is close enough to be what was
 * meant, the hint naming it.
 */
export function unknownOptionArgs(name: string, known: Iterable<string>, messages: Messages): MessageArgs {
  const suggestion = nearestName(name, known);
  return {
    name: shownKey(name),
    hint: suggestion === undefined ? '' : messages.text('unknown_option_hint', { suggestion }),
  };
}

/**
 * The problem `check` reports for `value` of option `name`, which it
 * refused: its own reason's message when one applies, else its key.
 */
export function problemOf(check: Check, name: string, value: unknown): OptionProblem {
  const reason = check.reason?.args(value);
  if (reason !== undefined) return { key: check.reason!.key, args: optionArgs(name, value, reason) };
  return { key: check.key, args: optionArgs(name, value, { problem: check.problem?.(value) }) };
}

/** The first problem among the named options, checked in ASCII order; throws it. */
export function checkEach(options: Record<string, unknown>, messages: Messages): void {
  // Array#sort compares UTF-16 code units, which for ASCII names is ASCII order.
  for (const name of Object.keys(options).sort()) {
    const check = rowOf(name)?.check;
    const value = options[name];
    if (check === undefined)
      throw new BufferOptionError('unknown_option', unknownOptionArgs(name, Object.keys(schema), messages), messages);
    if (!check.ok(value)) {
      const { key, args } = problemOf(check, name, value);
      throw new BufferOptionError(key, args, messages);
    }
  }
}

/** The checks that look at more than one option, after all the others. */
export function checkTogether(options: Record<string, unknown>, messages: Messages): void {
  if (!isNil(options.cacheLock) && !isNil(options.cacheLockDir))
    throw new BufferOptionError('lock_options_combined', {}, messages);
  const cacheLockTimeout = isNil(options.cacheLockTimeout)
    ? schema.cacheLockTimeout.default
    : (options.cacheLockTimeout as number);
  const ttl = (options.cacheLock as CacheLock | undefined)?.ttl;
  if (typeof ttl === 'number' && ttl <= cacheLockTimeout)
    throw new BufferOptionError('lock_ttl_too_short', { ttl, timeout: cacheLockTimeout }, messages);
  for (const coding of (options.encodings as string[] | undefined) ?? []) {
    if (!canonicalCoding(coding))
      throw new BufferOptionError('unknown_encoding', optionArgs('encodings', options.encodings, { coding }), messages);
  }
  if (options.adaptiveCompression && !isNil(options.compressionLevels))
    throw new BufferOptionError('adaptive_levels_combined', {}, messages);
}

/**
 * The checks of {@link checkTogether} that apply to one per-response value,
 * where the other option is the configured one: the problem, or undefined.
 * The value passed its own check.
 */
export function checkTogetherPerResponse(
  name: string,
  value: unknown,
  base?: ResolvedOptions,
): OptionProblem | undefined {
  if (name === 'encodings') {
    const coding = (value as string[]).find((e) => !canonicalCoding(e));
    if (coding !== undefined) return { key: 'unknown_encoding', args: { coding } };
  }
  const ttl = base?.cacheLock?.ttl;
  if (name === 'cacheLockTimeout' && typeof ttl === 'number' && typeof value === 'number' && ttl <= value)
    return { key: 'lock_ttl_too_short', args: { ttl, timeout: value } };
  return undefined;
}
