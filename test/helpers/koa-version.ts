/**
 * The Koa the suite runs on. koa-buffer supports Koa 2.13 and later and Koa
 * 3, and .ci/run runs the whole suite on each; the few tests where Koa 2
 * itself answers differently (not koa-buffer) assert Koa 2's answer there.
 */
import { createRequire } from 'node:module';

/** Koa's version, as its package.json says. */
export const koaVersion = (createRequire(import.meta.url)('koa/package.json') as { version: string }).version;

/** Koa's major version: 2 or 3. */
export const koaMajor = Number(koaVersion.split('.')[0]);
