/** The TypeScript twins of the native cores, assembled into one implementation. */
import type { CoreImplementation } from '../types.ts';
import { md5, Md5 } from './md5.ts';
import { SquashStream, squashHtml } from './squash-html.ts';

/** The twins as one implementation, with the same names, signatures and bytes as the addon. */
export const twins: CoreImplementation = { md5, Md5, squashHtml, SquashStream };
