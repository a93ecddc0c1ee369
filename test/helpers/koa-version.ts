/**
 * The Koa the suite runs on. koa-buffer supports Koa 2.13 and later and Koa
 * 3, and .ci/run runs the whole suite on each; the few tests where Koa 2
 * itself answers differently (not koa-buffer) assert Koa 2's answer there.
 */
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';

// From Koa's entry file, lib/application.js: Koa 2.13 exports no ./package.json.
const koaRoot = join(createRequire(import.meta.url).resolve('koa'), '..', '..');

/** Koa's version, as its package.json says. */
export const koaVersion = (JSON.parse(readFileSync(join(koaRoot, 'package.json'), 'utf8')) as { version: string })
  .version;

/** Koa's major version: 2 or 3. */
export const koaMajor = Number(koaVersion.split('.')[0]);
