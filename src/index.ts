/**
 * koa-buffer: a Koa middleware that squashes HTML, compresses responses
 * (br, zstd, gzip), adds ETag and Last-Modified, answers 304 Not Modified and
 * keeps slow pages in a server-side cache that exactly one request builds —
 * within one process, across the worker processes of a host (flock) and
 * across hosts (Redis). Its locks are also a library of their own.
 *
 * @packageDocumentation
 */
export { BufferOptionError } from './base/errors.ts';
export { Messages, defaultMessages } from './base/messages.ts';
export type {
  MessageKey,
  MessageOverride,
  MessageOverrides,
  MessageArgs,
  PluralMessage,
  GenderMessage,
} from './base/messages.ts';
export type { Logger } from './base/logger.ts';
export { md5, Md5, squashHtml } from './native/exports.ts';
export type { BinaryLike, SquashOptions, Md5Hasher } from './native/types.ts';
export { buffer } from './buffer.ts';
export { front } from './front/front.ts';
export type { FrontOptions } from './front/front.ts';
export type { BufferMiddleware } from './buffer.ts';
export { prometheusContentType } from './observe/prometheus.ts';
export { clusterMetrics, clusterStats } from './observe/cluster.ts';
export type { ClusterStats } from './observe/cluster.ts';
export type { StatsSnapshot, HistogramSnapshot, Budget, CallCounts, CodingCounts } from './base/stats.ts';
export { bufferSection } from './config/section.ts';
export type { BufferOptions, SectionOptions, CacheStore, CacheLock, EncodingName, Flag } from './config/options.ts';
export type { DictionaryRuleOption } from './config/dictionaries.ts';
export type { LastModifiedOption, LastModifiedValue, MtimeCache } from './http/last-modified.ts';
export type { MediaTypeList, MediaTypeOption, MediaTypePredicate } from './http/media-types.ts';
// Re-exporting from switches.ts also carries its augmentation of Koa's context (ctx.compress) into the declarations.
export type { CompressSwitch } from './pipeline/switches.ts';
// Re-exporting from pipeline/state.ts also carries its augmentation of Koa's context (ctx.bufferIsCached) into the declarations.
export type { StoreableResponse, BufferIsCachedOptions } from './pipeline/state.ts';
export { FileLock, RedisLock, MemoryLock, Lock } from './locks/index.ts';
export type {
  FileLockGuard,
  FileLockOptions,
  RedisLockGuard,
  RedisLockOptions,
  RedisLockClient,
  RedisSource,
  MemoryLockGuard,
  MemoryLockOptions,
  LockOptions,
  LockResult,
  UnlockResult,
  LockBackend,
  AcquireResult,
  ReleaseResult,
  AcquireOptions,
  WaitOptions,
} from './locks/index.ts';
