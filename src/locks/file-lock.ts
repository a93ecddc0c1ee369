/**
 * FileLock: the flock(2) lock backend (docs/decisions/0010-locks.md),
 * for the worker processes of one host. One empty file per key,
 * `dir/md5(utf8(key)).lock`; the lock lives as long as the descriptor held
 * in the guard, so a process that dies frees its locks at once.
 */
import { spawn } from 'node:child_process';
import { accessSync, constants as fsConstants, fstatSync, statSync, unlinkSync } from 'node:fs';
import { constants } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { BufferOptionError } from '../base/errors.ts';
import type { Messages } from '../base/messages.ts';
import { flock } from '../native/core.ts';
import { md5 } from '../native/exports.ts';
import { LOCK_BUSY, LOCK_STAGE_FLOCK, type FlockPrimitives } from '../native/types.ts';
import { errorText, shownValue } from '../base/describe.ts';
import { type MessagesOption, keyProblem, messagesFrom } from './checks.ts';
import { type DirProblem, ensureLockDir } from './lock-dir.ts';
import type { AcquireResult, LockBackend, ReleaseResult } from './protocol.ts';

/**
 * flock(1) of util-linux, found once. A blocking flock(2) cannot run on the
 * event loop, and in a worker thread it could not be abandoned: a thread
 * blocked in the kernel ignores Worker.terminate(), and process exit waits
 * for it. A child process blocked in flock(2) dies at SIGKILL. Fixed paths
 * rather than $PATH: a library must not run whatever a search path names.
 */
let flockProgram: string | null | undefined;
function flockCommand(): string | null {
  if (flockProgram === undefined) {
    flockProgram = null;
    for (const candidate of ['/usr/bin/flock', '/bin/flock', '/usr/local/bin/flock']) {
      try {
        accessSync(candidate, fsConstants.X_OK);
        flockProgram = candidate;
        break;
      } catch {
        // not here
      }
    }
  }
  return flockProgram;
}

/**
 * Blocks in flock(LOCK_EX) on `fd` in a flock(1) child, which shares the
 * open file description, so the lock it takes is ours once it exits 0. Gives
 * up after `ms` by killing the child. Resolves only once the child is gone,
 * so nothing but `fd` can be left holding the lock: 'taken' when it is held
 * on `fd` (taken just before the deadline included), 'timeout', or 'failed'
 * when flock(1) could not run or was killed by someone else.
 */
function blockingFlock(program: string, fd: number, ms: number): Promise<'taken' | 'timeout' | 'failed'> {
  return new Promise((resolve) => {
    // -w as well: an orphan left by a killed waiter gives up on its own.
    const seconds = (Math.ceil(ms) / 1000 + 1).toFixed(3);
    let late = false;
    const child = spawn(program, ['-x', '-w', seconds, '3'], { stdio: ['ignore', 'ignore', 'ignore', fd] });
    const timer = setTimeout(
      () => {
        late = true;
        child.kill('SIGKILL');
      },
      Math.max(0, ms),
    );
    const done = (outcome: 'taken' | 'timeout' | 'failed'): void => {
      clearTimeout(timer);
      resolve(outcome);
    };
    child.once('error', () => done('failed'));
    child.once('exit', (code) => done(code === 0 ? 'taken' : late ? 'timeout' : 'failed'));
  });
}

/** Options of {@link FileLock}. */
export interface FileLockOptions {
  /**
   * The directory of the lock files, shared by every process that must exclude the others. Created (mode 0700)
   * when missing; refused when it is a symbolic link, owned by another user than this one or root, or writable
   * by its group or others without the sticky bit.
   */
  dir: string;
  /** Message overrides, or a {@link Messages}. */
  messages?: MessagesOption;
  /**
   * Remove a key's lock file when its lock is released, so files of
   * one-off keys (a cache key per URL) do not pile up. Safe against racing
   * acquirers: one that locked a file checks that its path still names the
   * file it locked, and tries again otherwise (see
   * docs/decisions/0024-lock-files-removed-on-release.md).
   * @defaultValue false
   */
  removeOnRelease?: boolean;
}

const { ENOENT, ENOTDIR } = constants.errno;

/** How many times an acquire tries again when the file it locked was removed meanwhile, before it answers busy. */
const removedRetries = 16;

/**
 * The guard of a {@link FileLock}: it holds the open descriptor that holds
 * the lock. Opaque: give it back to `release`.
 */
export class FileLockGuard {
  /** @internal */
  constructor(
    /** @internal The descriptor; -1 once released. */ public fd: number,
    /** @internal */ readonly path: string,
  ) {}
}

/**
 * Closes the descriptor of a guard dropped without release, as Perl closes
 * the handle of a guard that goes out of scope. `release`
 * unregisters the guard, so a descriptor number the kernel has since given to
 * another file is never closed by mistake.
 */
let finalizer: FinalizationRegistry<number> | undefined;

/** The guard of a held descriptor, closed by the finalizer if dropped. */
function guardOf(fd: number, path: string): FileLockGuard {
  const guard = new FileLockGuard(fd, path);
  (finalizer ??= new FinalizationRegistry((held) => flock().closeFd(held))).register(guard, fd, guard);
  return guard;
}

/** True when `path` still names the file open at `fd` (same device and inode). */
function stillNamed(path: string, fd: number): boolean {
  try {
    const held = fstatSync(fd, { bigint: true });
    const named = statSync(path, { bigint: true });
    return held.ino === named.ino && held.dev === named.dev;
  } catch {
    return false; // ENOENT: removed since
  }
}

/**
 * The flock lock backend: exclusive, non-blocking, freed by the operating
 * system when its process dies. Always release what you acquire; a dropped
 * guard is closed only when the garbage collector gets to it.
 *
 * @example
 * const locks = new FileLock({ dir: '/run/myapp/locks' });
 * const [guard, error] = locks.acquire('nightly-report');
 * if (error !== undefined) throw new Error(error);
 * if (guard === null) process.exit(0); // another copy is running
 * try { buildReport(); } finally { locks.release(guard); }
 *
 * @example Spreading the lock files over sub-directories:
 * class ShardedLock extends FileLock {
 *   protected override pathFor(key: string): string {
 *     const digest = md5(key);
 *     const sub = join(this.dir, digest.slice(0, 2));
 *     mkdirSync(sub, { recursive: true, mode: 0o700 });
 *     return join(sub, `${digest}.lock`);
 *   }
 * }
 */
export class FileLock implements LockBackend<FileLockGuard> {
  /** The directory of the lock files. */
  readonly dir: string;

  readonly #messages: Messages;
  readonly #flock: FlockPrimitives;
  readonly #prefix: string;
  /** Recent keys' lock file paths, so a hot key is hashed once. */
  readonly #paths = new Map<string, string>();
  /** See {@link FileLockOptions.removeOnRelease}. */
  readonly removeOnRelease: boolean;
  /**
   * Takes the lock of `key`, waiting up to `ms` milliseconds, woken by the
   * holder's release (or death) through a blocking flock in a flock(1)
   * child process. Present only where flock(1) is installed; the waiting
   * {@link Lock} polls otherwise.
   */
  readonly waitForRelease?: (key: string, ms: number) => Promise<AcquireResult<FileLockGuard>>;

  /**
   * Creates `dir` and its missing parents (mode 0700) and checks it is a
   * writable directory that nobody else can tamper with: not a symbolic
   * link, owned by this user or root, not writable by its group or others
   * unless sticky (see lock-dir.ts). A directory removed later is made
   * again, and checked again, by the next acquire that misses it.
   *
   * @param options - `dir` (required) and `messages`
   * @throws BufferOptionError `option_cache_lock_dir` when `dir` is not a non-empty string,
   *   `lock_dir_create_failed` when it cannot be created, `lock_dir_not_writable` when it is
   *   not a directory this process may create files in, `lock_dir_symlink`, `lock_dir_foreign` or
   *   `lock_dir_shared` when others could replace its files, `option_messages` for bad `messages`
   * @throws Error with code `KB_NATIVE_UNAVAILABLE` when the native addon is not loaded (flock has no twin)
   */
  constructor(options: FileLockOptions) {
    const given = (options ?? {}) as Partial<FileLockOptions>;
    this.#messages = messagesFrom(given.messages);
    const dir = given.dir;
    if (typeof dir !== 'string' || dir === '')
      throw new BufferOptionError('option_cache_lock_dir', { name: 'dir', value: shownValue(dir) }, this.#messages);
    this.#flock = flock();
    const problem = this.#ensureDir(dir);
    if (problem !== undefined) throw new BufferOptionError(problem.key, problem.args, this.#messages);
    if (given.removeOnRelease !== undefined && typeof given.removeOnRelease !== 'boolean')
      throw new BufferOptionError(
        'option_flag',
        { name: 'removeOnRelease', value: shownValue(given.removeOnRelease) },
        this.#messages,
      );
    this.removeOnRelease = given.removeOnRelease ?? false;
    this.dir = dir;
    this.#prefix = dir.endsWith('/') ? dir : `${dir}/`;
    const program = flockCommand();
    if (program !== null) this.waitForRelease = (key, ms) => this.#waitForRelease(program, key, ms);
  }

  /**
   * The lock file of `key`: `dir/md5(utf8(key)).lock`. Override it in a
   * subclass to lay the files out differently; hash the key as UTF-8, and
   * create any directory you add. A throw here becomes `[null, message]`.
   *
   * @param key - the key given to `acquire`
   * @returns the path of the lock file
   */
  protected pathFor(key: string): string {
    let path = this.#paths.get(key);
    if (path === undefined) {
      path = `${this.#prefix}${md5(key)}.lock`;
      // Hot keys come back again and again (a page being rebuilt, a cron job); hashing
      // them each time is a twentieth of an acquire. Long keys are rare: not kept.
      if (key.length <= 256) {
        if (this.#paths.size >= 1024) this.#paths.clear();
        this.#paths.set(key, path);
      }
    }
    return path;
  }

  /**
   * Tries, without waiting, to take the lock of `key`. Synchronous; never throws.
   *
   * @param key - any string, the empty string and emoji included
   * @returns `[guard, undefined]` when taken; `[null, undefined]` when busy — held by any
   *   descriptor, in this process or another, this very FileLock included; `[null, message]`
   *   when the key is not a string (`lock_key_undefined`, `lock_key_invalid`), the file cannot
   *   be opened (`lock_open_failed`) or flock fails (`lock_failed`)
   */
  acquire(key: string): AcquireResult<FileLockGuard> {
    const problem = keyProblem(key, this.#messages);
    if (problem !== undefined) return [null, problem];
    let path: string;
    try {
      path = this.pathFor(key);
    } catch (error) {
      return [null, this.#messages.text('lock_path_failed', { key, error: errorText(error) })];
    }
    let attempt: number;
    let recreated = false;
    for (let tries = 0; ; tries++) {
      try {
        attempt = this.#flock.acquireLockFile(path);
      } catch (error) {
        // Only a path the binding cannot take (a subclass returning a non-string, a NUL byte) lands here.
        return [null, this.#messages.text('lock_open_failed', { path: String(path), error: errorText(error) })];
      }
      if ((attempt === -ENOENT || attempt === -ENOTDIR) && !recreated) {
        // The directory was removed under us (a tmp cleaner, an operator): made again, checked again, once.
        recreated = true;
        const problem = this.#ensureDir(this.dir);
        if (problem !== undefined) return [null, this.#messages.text(problem.key, problem.args)];
        tries--;
        continue;
      }
      if (attempt < 0 || !this.removeOnRelease || stillNamed(path, attempt)) break;
      // The holder before us removed the file between our open and our flock: we hold a lock nobody else
      // can see. Let it go and lock whatever the path names now.
      this.#flock.unlock(attempt);
      this.#flock.closeFd(attempt);
      if (tries >= removedRetries) return [null, undefined];
    }
    if (attempt >= 0) return [guardOf(attempt, path), undefined];
    if (attempt === LOCK_BUSY) return [null, undefined];
    if (-attempt >= LOCK_STAGE_FLOCK) {
      return [
        null,
        this.#messages.text('lock_failed', { path, error: this.#flock.strerror(-attempt - LOCK_STAGE_FLOCK) }),
      ];
    }
    return [null, this.#messages.text('lock_open_failed', { path, error: this.#flock.strerror(-attempt) })];
  }

  /**
   * Unlocks and closes the lock file of a guard. The lock is gone afterwards
   * whatever the answer, since the descriptor is closed.
   *
   * @param guard - what `acquire` returned; `null`, `undefined` or a released guard is ignored
   * @returns `[true, undefined]`, or `[false, message]` (`unlock_failed`) when unlocking or closing failed,
   *   or (`lock_guard_invalid`) when `guard` is not a FileLock guard
   */
  release(guard: FileLockGuard | null | undefined): ReleaseResult {
    if (guard === null || guard === undefined) return [true, undefined];
    if (!(guard instanceof FileLockGuard)) return [false, this.#messages.text('lock_guard_invalid')];
    const fd = guard.fd;
    if (fd < 0) return [true, undefined];
    guard.fd = -1;
    finalizer?.unregister(guard);
    // Removed while still locked: an acquirer that opened it already finds, once it locks it, that the path
    // no longer names it (or names a newer file) and tries again.
    if (this.removeOnRelease) {
      try {
        unlinkSync(guard.path);
      } catch {
        // Gone already, or the directory is read-only now: the file stays, which is harmless.
      }
    }
    const unlocked = this.#flock.unlock(fd);
    const closed = this.#flock.closeFd(fd);
    const failed = unlocked < 0 ? unlocked : closed;
    if (failed < 0)
      return [false, this.#messages.text('unlock_failed', { path: guard.path, error: this.#flock.strerror(-failed) })];
    return [true, undefined];
  }

  async #waitForRelease(program: string, key: string, ms: number): Promise<AcquireResult<FileLockGuard>> {
    const deadline = performance.now() + ms;
    for (;;) {
      // A try first: the key may be free already, and its answer carries every failure message.
      const tried = this.acquire(key);
      if (tried[0] !== null || tried[1] !== undefined) return tried;
      const left = deadline - performance.now();
      if (left <= 0) return [null, undefined];
      const path = this.pathFor(key); // cached by the acquire above, which also proved it does not throw
      const fd = this.#flock.openLockFile(path);
      if (fd < 0) return [null, this.#messages.text('lock_open_failed', { path, error: this.#flock.strerror(-fd) })];
      const outcome = await blockingFlock(program, fd, left);
      // A holder that removed the file on release freed a lock on a file nobody else sees any more: try the
      // path again rather than keep it.
      if (outcome === 'taken' && (!this.removeOnRelease || stillNamed(path, fd))) return [guardOf(fd, path), undefined];
      if (outcome === 'taken') this.#flock.unlock(fd);
      this.#flock.closeFd(fd);
      if (outcome === 'timeout') return this.acquire(key);
      // flock(1) could not run this time: poll until the next try rather than spin.
      if (outcome === 'failed') await sleep(Math.min(50, Math.max(0, deadline - performance.now())));
    }
  }

  /** Makes the directory when missing (0700) and checks it is safe: see lock-dir.ts. */
  #ensureDir(dir: string): DirProblem | undefined {
    const found = ensureLockDir(dir);
    if (found === undefined || 'key' in found) return found;
    return { key: 'lock_dir_create_failed', args: { dir, error: this.#osText(found.createError) } };
  }

  /** The C library's text for a Node fs error, as Perl's `$!` shows it. */
  #osText(error: unknown): string {
    const errno = (error as { errno?: unknown }).errno;
    return typeof errno === 'number' && errno < 0 ? this.#flock.strerror(-errno) : errorText(error);
  }
}
