/**
 * The options of `buffer()` and `bufferSection()`, resolved from their
 * schema rows (schema.ts), and the names the rest of koa-buffer imports
 * them by: the types, the defaults, validation and the per-response view.
 */
import { shownValue } from '../base/describe.ts';
import { BufferOptionError } from '../base/errors.ts';
import { defaultLogger, type Logger } from '../base/logger.ts';
import { builtinMessages, isMessageOverrides, Messages } from '../base/messages.ts';
import { isNil, isPlainObject } from './checks.ts';
import type { ResolvedOptions } from './option-types.ts';
import type { PerResponseRow, ResolveFrom, Row } from './row.ts';
import { namesIn, rowOf, schema } from './schema.ts';
import { checkEach, checkTogether, problemOf, unknownOptionArgs } from './validate.ts';

// The contracts of the `cache` and `cacheLock` options are declared once, beside their implementations.
export type { CacheStore } from '../base/store.ts';
export type { CacheLock } from '../locks/protocol.ts';
export type { EncodingName, Flag } from './checks.ts';
export type { BufferOptions, ResolvedOptions, SectionOptions } from './option-types.ts';
export { defaultCacheLockTimeout, defaultMemoMaxSize } from './schema.ts';
export {
  perResponseListMax,
  perResponseRefusal,
  readOverride,
  readOverrideValue,
  responseOptions,
  type Refusal,
  type ResponseOverride,
} from './overlay.ts';

/** What a response with no per-response values has overridden. */
const nothingOverridden: ReadonlySet<string> = new Set();

const rows: ReadonlyArray<readonly [string, Row]> = Object.entries(schema);

/**
 * Validates `options` and resolves them against the defaults.
 *
 * @param options - the argument of buffer(); undefined means no options
 * @returns the resolved options
 * @throws BufferOptionError for the first problem, in the order validate.ts describes
 */
export function resolveOptions(options: unknown = {}): ResolvedOptions {
  if (!isPlainObject(options)) throw new BufferOptionError('options_not_hash', { value: shownValue(options) });
  // Messages are adopted first, so that the errors below are worded with them.
  const messages = new Messages(isMessageOverrides(options.messages) ? options.messages : {});
  checkEach(options, messages);
  checkTogether(options, messages);
  const logger = isNil(options.logger) ? defaultLogger : (options.logger as Logger);

  const resolved: Record<string, unknown> = {};
  for (const [name, row] of rows) {
    const given = Object.hasOwn(options, name);
    const value = given ? options[name] : undefined;
    resolved[name] = row.resolve
      ? row.resolve(value, { given, default: row.default, options, messages, logger } satisfies ResolveFrom<unknown>)
      : isNil(value)
        ? row.default
        : value;
  }
  resolved.overridden = nothingOverridden;
  resolved.varyByRefused = false;
  return resolved as unknown as ResolvedOptions;
}

/** The options a section may declare. */
const declarable = namesIn('section');

/**
 * Validates the declarations of a bufferSection. In a declaration `undefined`
 * means "not declared" ("undef in options" in the Perl original), so such keys are dropped.
 *
 * @throws BufferOptionError `unknown_option` for a key that is not declarable, or the key's own problem
 */
export function resolveSection(declared: unknown): Partial<ResolvedOptions> {
  if (!isPlainObject(declared)) throw new BufferOptionError('options_not_hash', { value: shownValue(declared) });
  const out: Partial<Record<string, unknown>> = {};
  for (const name of Object.keys(declared).sort()) {
    if (!declarable.has(name))
      throw new BufferOptionError('unknown_option', unknownOptionArgs(name, declarable, builtinMessages));
    const value = declared[name];
    const row = rowOf(name) as PerResponseRow<unknown, unknown, 'section'>;
    if (!row.check.ok(value)) {
      const { key, args } = problemOf(row.check, name, value);
      throw new BufferOptionError(key, args);
    }
    if (value === undefined || value === null) continue;
    out[name] = row.perResponse(value, row.default);
  }
  return out as Partial<ResolvedOptions>;
}
