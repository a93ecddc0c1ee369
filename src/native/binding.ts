/**
 * Loads the native addon once per process.
 *
 * `node-gyp-build` looks for a local build (`build/Release`) and then the
 * committed `prebuilds/`; `PREBUILDS_ONLY=1` makes it skip the local build.
 * `KOA_BUFFER_NATIVE=0` skips the addon altogether, so the bench suite and the
 * tests can run the TypeScript twins on purpose. An addon that fails to load
 * costs one warning naming the reason, and the twins take over (bufferutil).
 */
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import type { RawAddon } from './types.ts';

/** The package root: this file sits two levels down in both `src/` and `dist/`. */
export const packageRoot = fileURLToPath(new URL('../..', import.meta.url));

function load(): { addon: RawAddon | undefined; reason: string | undefined } {
  if (process.env.KOA_BUFFER_NATIVE === '0') {
    return { addon: undefined, reason: 'disabled by KOA_BUFFER_NATIVE=0' };
  }
  try {
    const require = createRequire(import.meta.url);
    const nodeGypBuild = require('node-gyp-build') as (dir: string) => RawAddon;
    return { addon: nodeGypBuild(packageRoot), reason: undefined };
  } catch (error) {
    const reason = error instanceof Error ? error.message.split('\n')[0] : String(error);
    process.emitWarning(
      `koa-buffer: the native addon could not be loaded (${reason}); using the TypeScript twins, ` +
        'and FileLock is unavailable. To build it from source, install Python 3, make and a C++ compiler ' +
        'and run `npm rebuild koa-buffer`.',
      { code: 'KB_NATIVE_UNAVAILABLE' },
    );
    return { addon: undefined, reason };
  }
}

const loaded = load();

/** The raw addon, or undefined when it is disabled or failed to load. */
export const addon: RawAddon | undefined = loaded.addon;

/** Why {@link addon} is undefined, for error messages. */
export const addonUnavailableReason: string | undefined = loaded.reason;
