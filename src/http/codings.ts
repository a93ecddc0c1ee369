/**
 * The content codings this process can make: which are available (zstd
 * needs zstd-napi, loaded once here for every user of it), the levels each
 * accepts, the default level of each, and the default offer. The options
 * check against these; the compressors and the dictionary coder use the
 * one loaded zstd.
 */
import { createRequire } from 'node:module';
import { allCodings, type Coding } from './negotiate.ts';

/** zstd-napi's binding, the streaming contexts. */
export type ZstdBinding = typeof import('zstd-napi/binding.js');
/** zstd-napi's module, the one-shot compressors. */
export type ZstdModule = typeof import('zstd-napi');

const require = createRequire(import.meta.url);

function loadZstd(): { zstd: ZstdModule; binding: ZstdBinding } | undefined {
  try {
    return { zstd: require('zstd-napi') as ZstdModule, binding: require('zstd-napi/binding') as ZstdBinding };
  } catch {
    return undefined;
  }
}

/** zstd-napi, its high-level module and its binding; undefined when it does not load (an optional dependency). */
export const zstdLib = loadZstd();

/** True when a coding can be produced in this process (br, gzip and deflate always; zstd when zstd-napi loads). */
export function codingAvailable(coding: Coding): boolean {
  return coding !== 'zstd' || zstdLib !== undefined;
}

/** The default level per coding. */
export const defaultLevels: Readonly<Record<Coding, number>> = { br: 4, zstd: 3, gzip: 6, deflate: 6 };

/** The levels each coding accepts. */
export const levelRange: Readonly<Record<Coding, readonly [number, number]>> = {
  br: [0, 11],
  zstd: [1, 22],
  gzip: [0, 9],
  deflate: [0, 9],
};

/**
 * The `encodings` of options that do not set it: every coding this process
 * can make. One array, so a response can tell the default (temperature
 * decides the order) from a user's list (their order wins).
 */
export const defaultEncodings: readonly Coding[] = Object.freeze(allCodings.filter(codingAvailable));
