/**
 * The option types, derived from the schema rows: what `buffer()` and
 * `bufferSection()` take, and what the pipeline reads.
 *
 * `BufferOptions` is a homomorphic mapped type over the schema object, not a
 * written-out interface nor a generated one. TypeScript links each property
 * of such a type to the property it maps, so the TSDoc written on a row is
 * what an editor shows on `buffer({ cacheDuration`, in src/ and in the
 * emitted .d.ts alike; and a type that is computed cannot go stale, where a
 * generated interface would need its own `--check` and one more file to
 * commit with every option. The mapping must stay `[K in keyof Schema]`
 * written out: through an alias of the key union TypeScript no longer
 * links the properties, and the documentation is lost.
 */
import type { InOf, OutOf, Scope } from './row.ts';
import type { Schema } from './schema.ts';

/** Options of {@link buffer}; every one is optional. */
export type BufferOptions = { [K in keyof Schema]?: InOf<Schema[K]> };

/** The names of the options of one scope. */
type NamesIn<S extends Scope> = { [K in keyof Schema]: Schema[K]['scope'] extends S ? K : never }[keyof Schema];

/** The options a {@link bufferSection} may declare. */
export type SectionOptions = Pick<BufferOptions, NamesIn<'section'>>;

/** Each option as the pipeline reads it. */
type ResolvedValues = { [K in keyof Schema]: OutOf<Schema[K]> };

/** The options as the pipeline uses them: validated, defaulted and compiled. */
export interface ResolvedOptions extends ResolvedValues {
  /**
   * The options `ctx.state.buffer` set for this response to a value other
   * than undefined or null (a value set there wins over the response's own
   * Cache-Control); empty for the `buffer()` options.
   */
  overridden: ReadonlySet<string>;
  /** True when `ctx.state.buffer` set a varyBy that is not a list of header names: the request bypasses the cache. */
  varyByRefused: boolean;
}
