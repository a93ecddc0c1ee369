/**
 * The shape of one row of the option schema (schema.ts): everything koa-buffer
 * knows of an option, so that the types, the defaults, the validation, the
 * per-response overlay and the reference pages are all read from one place.
 */
import type { Logger } from '../base/logger.ts';
import type { MessageArgs, MessageKey, Messages } from '../base/messages.ts';

/**
 * Where an option may be set. `'registration'`: read once, when `buffer()`
 * runs; a per-response value is not looked at (it sizes a store, a memo or a
 * timer that exists once). `'section'`: also declarable by `bufferSection`,
 * and settable per response. `'response'`: settable per response by
 * `ctx.state.buffer`.
 */
export type Scope = 'registration' | 'section' | 'response';

/** What `buffer()` accepts of one option, and what it says of anything else. */
export interface Check {
  /** The catalog key of the problem. */
  readonly key: MessageKey;
  /** True when `value` is acceptable (undefined included where it is). */
  readonly ok: (value: unknown) => boolean;
  /** What is wrong with a value `ok` refuses, for options with an inner shape (the `%{problem}` of the message). */
  readonly problem?: (value: unknown) => string | undefined;
  /**
   * A reason `ok` refuses some values for that has a message of its own
   * (a duration that reads like milliseconds): `args` answers that
   * message's placeholders for a value it applies to, else undefined, and
   * `key` is the message reported instead of the check's.
   */
  readonly reason?: { readonly key: MessageKey; readonly args: (value: unknown) => MessageArgs | undefined };
}

/** What a resolver sees besides the value. */
export interface ResolveFrom<Out> {
  /** True when the option was given, even as undefined. */
  readonly given: boolean;
  /** The row's default. */
  readonly default: Out;
  /** Every option as given, all checks passed: for a default that depends on another option. */
  readonly options: Readonly<Record<string, unknown>>;
  /** The catalog, adopted before the checks so that their errors are worded with it. */
  readonly messages: Messages;
  readonly logger: Logger;
}

/** What every row holds. `In` is the type `buffer()` takes, `Out` the type the pipeline reads. */
interface RowOf<In, Out, S extends Scope> {
  readonly scope: S;
  /** One line for the README's table; the full text is the TSDoc on the row. */
  readonly doc: string;
  /** The value when the option is not given (and, unless `resolve` says otherwise, when given as undefined or null). */
  readonly default: Out;
  readonly check: Check;
  /**
   * The value as the pipeline uses it, from the value given (undefined when
   * not given) once every check passed. Without one, undefined and null
   * mean the default and any other value is used as it is.
   */
  readonly resolve?: (value: In | undefined | null, from: ResolveFrom<Out>) => Out;
}

export type RegistrationRow<In, Out> = RowOf<In, Out, 'registration'>;

export interface PerResponseRow<In, Out, S extends 'section' | 'response'> extends RowOf<In, Out, S> {
  /**
   * A per-response value as the pipeline uses it. The value passed the
   * check, or is undefined, which per response means off or none; the
   * conversion stays total all the same, as a per-response value comes from
   * application code at run time.
   *
   * @param fallback - the row's default, for a value that converts to nothing
   */
  readonly perResponse: (value: unknown, fallback: Out) => Out;
}

/** Any row. */
export type Row = RegistrationRow<any, any> | PerResponseRow<any, any, 'section' | 'response'>;

/** The type `buffer()` takes for the option of row `R`. */
export type InOf<R> = R extends RowOf<infer In, any, Scope> ? In : never;

/** The type the pipeline reads for the option of row `R`. */
export type OutOf<R> = R extends RowOf<any, infer Out, Scope> ? Out : never;

/** A row read once, when `buffer()` runs. */
export const registrationRow = <In, Out>(row: Omit<RegistrationRow<In, Out>, 'scope'>): RegistrationRow<In, Out> => ({
  scope: 'registration',
  ...row,
});

/** A row `bufferSection` may declare and `ctx.state.buffer` may set. */
export const sectionRow = <In, Out>(
  row: Omit<PerResponseRow<In, Out, 'section'>, 'scope'>,
): PerResponseRow<In, Out, 'section'> => ({ scope: 'section', ...row });

/** A row `ctx.state.buffer` may set. */
export const responseRow = <In, Out>(
  row: Omit<PerResponseRow<In, Out, 'response'>, 'scope'>,
): PerResponseRow<In, Out, 'response'> => ({ scope: 'response', ...row });
