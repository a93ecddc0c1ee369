/**
 * The shape shared by the native addon and its TypeScript twins, so that
 * `impl.squashHtml(buf)` works on either (as bufferutil's fallback.js does).
 */

/** Bytes to hash or squash: a Buffer, any TypedArray or DataView, or a string (taken as UTF-8). */
export type BinaryLike = Buffer | NodeJS.ArrayBufferView | string;

/** Options of {@link SquashHtml}; the rules are in docs/architecture.md, "The squasher". */
export interface SquashOptions {
  /** 0 copies the input, 1 and 2 squash white space (2's CSS/JS minification lives in the middleware). @defaultValue 1 */
  level?: number;
  /** Shorten links to this site in `a href` and `img src`. @defaultValue false */
  rewriteLinks?: boolean;
  /** The request's Host, with the port when the request named one. */
  host?: string;
  /** The request path, without the query. */
  path?: string;
  /**
   * The request's scheme (`ctx.protocol`). Links keep their scheme: an `http://` link is shortened only when this
   * is 'http', an `https://` link only when 'https'; a scheme-relative `//` link either way, or when this is absent.
   */
  scheme?: 'http' | 'https';
}

/** Streaming MD5, as `crypto.createHash('md5')` but limited to one digest. */
export interface Md5Hasher {
  /** Feeds more bytes; strings are hashed as UTF-8. @throws TypeError when `data` is not bytes or a string. */
  update(data: BinaryLike): this;
  /** The 16-byte digest. @throws Error when called a second time. */
  digest(): Buffer;
  /** The digest as lowercase hex or base64. */
  digest(encoding: 'hex' | 'base64'): string;
}

/** The squasher: bytes (or a string, as UTF-8) in, a new Buffer out, never longer than the input. */
export type SquashHtml = (input: BinaryLike, options?: SquashOptions) => Buffer;

/**
 * The squasher over a body that comes in pieces: the chunks fed, cut anywhere, give the bytes
 * {@link SquashHtml} gives the whole body (docs/decisions/0049-squashing-streams.md).
 */
export interface HtmlSquashStream {
  /** Squashes the next piece; returns the bytes it decides (possibly none). @throws TypeError when `chunk` is not bytes or a string; Error after finish(). */
  feed(chunk: BinaryLike): Buffer;
  /** The body ends: returns the bytes held back. @throws Error when called a second time. */
  finish(): Buffer;
  /** Bytes held back now. */
  readonly held: number;
}

/** Constructor of an {@link HtmlSquashStream}, with the options of {@link SquashHtml}. */
export interface HtmlSquashStreamConstructor {
  new (options?: SquashOptions): HtmlSquashStream;
  /** The most bytes a stream holds back between calls. */
  readonly maxHeld: number;
}

/** What both the addon and the twins provide. */
export interface CoreImplementation {
  /** Lowercase hex MD5 of `data`. @throws TypeError when `data` is not bytes or a string. */
  md5(data: BinaryLike): string;
  /** Constructor of a streaming MD5. */
  Md5: new () => Md5Hasher;
  /** The HTML squasher: bytes in, bytes out, never longer. */
  squashHtml: SquashHtml;
  /** The HTML squasher over a body in pieces. */
  SquashStream: HtmlSquashStreamConstructor;
}

/**
 * The flock(2) primitives. They never throw for an operating-system error:
 * failures come back as a negative errno, so the lock layer can turn them into
 * the `[null, message]` of the lock protocol.
 */
export interface FlockPrimitives {
  /** Opens (creating, mode 0600) with O_RDWR|O_CREAT|O_CLOEXEC|O_NOFOLLOW. Returns the fd, or -errno. */
  openLockFile(path: string): number;
  /** flock(LOCK_EX|LOCK_NB): 0 taken, 1 busy (EWOULDBLOCK), or -errno. The fd stays open either way. */
  tryLock(fd: number): number;
  /** flock(LOCK_UN): 0 or -errno. */
  unlock(fd: number): number;
  /** close(2): 0 or -errno. */
  closeFd(fd: number): number;
  /** Convenience for the hot path: open + tryLock, closing the fd unless it was taken. */
  acquireLockFile(path: string): LockAttempt;
  /** The C library's text for an errno. */
  strerror(errno: number): string;
}

/**
 * One acquire attempt, as a number so the hot path allocates nothing:
 * `fd >= 0` taken; {@link LOCK_BUSY} busy (fd already closed);
 * otherwise `-errno` of the open (`stage` open) or of flock, encoded as
 * `-errno` for open failures and `-(errno + LOCK_STAGE_FLOCK)` for flock failures.
 */
export type LockAttempt = number;
/** Returned by acquireLockFile when another descriptor holds the lock. */
export const LOCK_BUSY = -1_000_000;
/** Offset that marks an errno as coming from flock(2) rather than open(2). */
export const LOCK_STAGE_FLOCK = 100_000;

/** The raw addon: the core implementation, the flock primitives and the stamp of its sources. */
export interface RawAddon extends CoreImplementation, FlockPrimitives {
  readonly sourceStamp: string;
}
