/**
 * Merging a field name into the response's Vary header (RFC 9110 12.5.5)
 * without duplicates, and leaving `Vary: *` as it is.
 */
import type { Context } from 'koa';
import { responseHeader } from './headers.ts';

/**
 * Adds `field` to the Vary header of `ctx` unless it, or `*`, is already there.
 *
 * @param ctx - the Koa context whose response is changed
 * @param field - a header name, e.g. `Accept-Encoding`
 */
export function addVary(ctx: Context, field: string): void {
  const current = responseHeader(ctx, 'Vary') ?? '';
  if (current.trim() === '') {
    ctx.response.set('Vary', field);
    return;
  }
  const wanted = field.toLowerCase();
  for (const name of current.split(',')) {
    const token = name.trim().toLowerCase();
    if (token === '*' || token === wanted) return;
  }
  ctx.response.set('Vary', `${current}, ${field}`);
}
