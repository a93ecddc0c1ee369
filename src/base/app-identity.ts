/**
 * The application's name in every key it writes to a shared store, so two
 * applications sharing one Redis never read each other's entries or
 * dictionaries, while the same application deployed at two paths (two
 * hosts, two releases side by side) shares one: the name in the nearest
 * package.json above the app script, and the script's path relative to it.
 * Without a package.json, the script's absolute path. The `cacheNamespace`
 * option replaces it.
 */
import { readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';

/** The nearest package.json with a name at or above `dir`: its folder and name. */
function nearestPackage(dir: string): { root: string; name: string } | undefined {
  for (let at = dir; ; at = dirname(at)) {
    try {
      const { name } = JSON.parse(readFileSync(join(at, 'package.json'), 'utf8')) as { name?: unknown };
      if (typeof name === 'string' && name !== '') return { root: at, name };
    } catch {
      // No package.json here, or one that is not JSON: look further up.
    }
    if (dirname(at) === at) return undefined;
  }
}

/**
 * The default namespace of the script `script` (the app script,
 * `process.argv[1]`): `<package name>:<script path relative to the package>`,
 * or the script's path when no package.json names it.
 */
export function defaultNamespace(script: string | undefined = process.argv[1]): string {
  if (script === undefined || script === '') return '';
  const path = resolve(script);
  const found = nearestPackage(dirname(path));
  return found === undefined ? path : `${found.name}:${relative(found.root, path).split('\\').join('/')}`;
}

/** This process's default namespace, worked out once. */
export const appIdentity: string = defaultNamespace();
