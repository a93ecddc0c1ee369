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
  ? { md5: addon.md5, Md5: addon.Md5, squashHtml: addon.squashHtml, SquashStream: addon.SquashStream }
  : undefined;

/** What koa-buffer uses: native when available, else the twins. */
export const core: CoreImplementation = native ?? twins;

/** Which implementation {@link core} is. */
export const coreKind: 'native' | 'twin' = native ? 'native' : 'twin';

/**
 * The native flock primitives.
 *
 * @throws Error with code `KB_NATIVE_UNAVAILABLE` when the addon is not loaded, or was built
 *   without them (Windows builds leave flock(2) out: see docs/decisions/0014-filelock-on-windows.md)
 */
export function flock(): FlockPrimitives {
  if (addon && typeof (addon as Partial<FlockPrimitives>).acquireLockFile === 'function') return addon;
  const instead = 'use RedisLock (across hosts) or MemoryLock (one process) instead';
  let message: string;
  if (addon) {
    message = `koa-buffer: FileLock needs flock(2), which the native addon has no ${process.platform} build of; ${instead}`;
  } else if (process.env.KOA_BUFFER_NATIVE === '0') {
    message = `koa-buffer: FileLock needs the native addon, which KOA_BUFFER_NATIVE=0 turned off; unset it, or ${instead}`;
  } else {
    message =
      `koa-buffer: FileLock needs the native addon, which did not load (${addonUnavailableReason}). ` +
      `Install Python 3, make and a C++ compiler and run \`npm rebuild koa-buffer\`, or ${instead}`;
  }
  const error = new Error(message) as Error & { code: string };
  error.code = 'KB_NATIVE_UNAVAILABLE';
  throw error;
}

export { twins };
