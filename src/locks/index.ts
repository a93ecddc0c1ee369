/**
 * The lock backends and the waiting Lock, in one place for
 * `src/index.ts` and for code that wants only the locks.
 */
export { FileLock, FileLockGuard } from './file-lock.ts';
export type { FileLockOptions } from './file-lock.ts';
export { RedisLock, RedisLockGuard } from './redis-lock.ts';
export type { RedisLockOptions, RedisLockClient, RedisSource } from './redis-lock.ts';
export { MemoryLock, MemoryLockGuard } from './memory-lock.ts';
export type { MemoryLockOptions } from './memory-lock.ts';
export { Lock } from './lock.ts';
export type { LockOptions, LockResult, UnlockResult } from './lock.ts';
export type {
  LockBackend,
  AcquireResult,
  ReleaseResult,
  AcquireOptions,
  WaitOptions,
  MaybePromise,
} from './protocol.ts';
export type { MessagesOption } from './checks.ts';
