/**
 * The lock directory's safety checks
 * (docs/decisions/0042-lock-directory-others-cannot-tamper-with.md). Whoever may replace the files in the
 * directory, or the directory itself, decides who holds every lock: so the
 * directory must be a real directory (not a symbolic link someone could
 * point elsewhere), owned by this user or root, and writable by nobody else
 * unless it has the sticky bit (as /tmp and /run/lock have), where others
 * may add files but not remove or rename ours.
 */
import { accessSync, constants, lstatSync, mkdirSync, type Stats } from 'node:fs';
import type { MessageArgs, MessageKey } from '../base/messages.ts';

/** S_ISVTX: in a directory, only a file's owner may remove or rename it. */
const stickyBit = 0o1000;

/** Why a lock directory is refused: a catalog key and its arguments. */
export interface DirProblem {
  readonly key: MessageKey;
  readonly args: MessageArgs;
}

/** The path as lstat must see it: without trailing slashes, which would follow a final symbolic link. */
function withoutTrailingSlash(dir: string): string {
  const trimmed = dir.replace(/\/+$/, '');
  return trimmed === '' ? '/' : trimmed;
}

/**
 * Checks an existing lock directory.
 *
 * @param dir - the directory as given
 * @param stats - its lstat, when the caller has it
 * @returns undefined when it is safe to use, else why not
 */
export function dirProblem(dir: string, stats: Stats = lstatSync(withoutTrailingSlash(dir))): DirProblem | undefined {
  if (stats.isSymbolicLink()) return { key: 'lock_dir_symlink', args: { dir } };
  if (!stats.isDirectory()) return { key: 'lock_dir_not_writable', args: { dir } };
  const uid = process.geteuid?.();
  if (uid !== undefined && stats.uid !== uid && stats.uid !== 0)
    return { key: 'lock_dir_foreign', args: { dir, owner: stats.uid, uid } };
  if ((stats.mode & 0o022) !== 0 && (stats.mode & stickyBit) === 0) {
    const who = (stats.mode & 0o002) !== 0 ? 'everyone' : 'its group';
    return { key: 'lock_dir_shared', args: { dir, who, mode: (stats.mode & 0o7777).toString(8).padStart(4, '0') } };
  }
  try {
    accessSync(dir, constants.W_OK | constants.X_OK);
  } catch {
    return { key: 'lock_dir_not_writable', args: { dir } };
  }
  return undefined;
}

/** The answer of {@link ensureLockDir}: nothing when usable, else the problem, or the OS error of mkdir. */
export type EnsureResult = undefined | DirProblem | { readonly createError: unknown };

/**
 * Makes `dir` (and its missing parents, mode 0700) when it is missing, then
 * checks it with {@link dirProblem}. Never throws.
 *
 * @param dir - the lock directory
 */
export function ensureLockDir(dir: string): EnsureResult {
  let stats: Stats;
  try {
    stats = lstatSync(withoutTrailingSlash(dir));
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT' && (error as NodeJS.ErrnoException).code !== 'ENOTDIR')
      return { createError: error };
    try {
      mkdirSync(dir, { recursive: true, mode: 0o700 });
      stats = lstatSync(withoutTrailingSlash(dir));
    } catch (created) {
      return { createError: created };
    }
  }
  if (!stats.isDirectory() && !stats.isSymbolicLink())
    return { createError: Object.assign(new Error('File exists'), { code: 'EEXIST', errno: -17 }) };
  try {
    return dirProblem(dir, stats);
  } catch (error) {
    return { createError: error };
  }
}
