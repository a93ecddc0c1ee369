/**
 * Picks the implementation the rest of koa-buffer uses: the addon when it
 * loaded, else the twins. flock has no twin, so {@link flock} throws
 * `KB_NATIVE_UNAVAILABLE` instead.
 */
import { addon, addonUnavailableReason } from './binding.ts';
import { twins } from './twins/index.ts';
import type { CoreImplementation, FlockPrimitives } from './types.ts';

/** The native implementation, when the addon loaded. */
export const native: CoreImplementation | undefined = addon
  ? { md5: addon.md5, Md5: addon.Md5, squashHtml: addon.squashHtml }
  : undefined;

/** What koa-buffer uses: native when available, else the twins. */
export const core: CoreImplementation = native ?? twins;

/** Which implementation {@link core} is. */
export const coreKind: 'native' | 'twin' = native ? 'native' : 'twin';

/** The native flock primitives. @throws Error with code `KB_NATIVE_UNAVAILABLE` when the addon is not loaded. */
export function flock(): FlockPrimitives {
  if (addon) return addon;
  const error = new Error(
    `koa-buffer: FileLock needs the native addon, which is unavailable (${addonUnavailableReason})`,
  ) as Error & { code: string };
  error.code = 'KB_NATIVE_UNAVAILABLE';
  throw error;
}

export { twins };
