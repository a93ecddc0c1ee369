/**
 * `bufferSection(declared)`: options declared once for every route beneath a
 * middleware (an `@koa/router` prefix, a `router.use`, a mounted sub-app),
 * the Koa counterpart of route defaults in the Perl original. Only the options that
 * describe a section's content are declarable.
 */
import type { Context, Middleware } from 'koa';
import { resolveSection, type ResolvedOptions, type SectionOptions } from './options.ts';

/** The declarations on the context, under a private symbol (docs/decisions/0009-hit-path-is-measured.md says why not a WeakMap). */
const declarationsKey = Symbol('koa-buffer section declarations');
type WithDeclarations = Context & { [declarationsKey]?: Partial<ResolvedOptions> };

/**
 * The declarations in force for a request: those of every section it went
 * through, the innermost winning key by key; undefined when there were none.
 */
export function sectionDeclarations(ctx: Context): Partial<ResolvedOptions> | undefined {
  return (ctx as WithDeclarations)[declarationsKey];
}

/**
 * Declares options for every route beneath the returned middleware. Nested
 * sections merge key by key and the innermost declaration wins;
 * `ctx.state.buffer` still overrides them for one response.
 *
 * @param declared - any of `compressContent`, `optimiseContent`, `rewriteLinks`, `trustLastModified`;
 *   a key set to `undefined` is not declared
 * @returns a Koa middleware
 * @throws BufferOptionError `unknown_option` for any other key, or the option's own problem (e.g. `option_optimise_content`)
 * @example
 * const docs = new Koa();
 * docs.use(bufferSection({ optimiseContent: 1 }));
 * docs.use(renderDocs);
 * app.use(buffer());
 * app.use(mount('/docs', docs));
 */
export function bufferSection(declared: SectionOptions): Middleware {
  const resolved = resolveSection(declared);
  return async function bufferSectionMiddleware(ctx, next) {
    const outer = (ctx as WithDeclarations)[declarationsKey];
    (ctx as WithDeclarations)[declarationsKey] = outer ? { ...outer, ...resolved } : resolved;
    await next();
  };
}
