/**
 * The implementations every squash and md5 test runs against, as bufferutil
 * runs its suite on `use(native)` and `use(fallback)`. The native entry is
 * missing only when the addon is disabled (KOA_BUFFER_NATIVE=0) or absent.
 */
import { native, twins } from '../../src/native/core.ts';
import type { CoreImplementation } from '../../src/native/types.ts';

export const impls: Array<[name: 'native' | 'twin', impl: CoreImplementation]> = native
  ? [
      ['native', native],
      ['twin', twins],
    ]
  : [['twin', twins]];

export { native, twins };
