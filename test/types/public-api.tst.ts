/**
 * The public types as an ES module application sees them, imported by name.
 * Each `not` case is a mistake the types must catch before it reaches run
 * time, where the same mistake is a BufferOptionError or a TypeError.
 */
import type Koa from 'koa';
import {
  buffer,
  bufferSection,
  BufferOptionError,
  FileLock,
  Lock,
  md5,
  Md5,
  MemoryLock,
  RedisLock,
  squashHtml,
  type BufferOptions,
  type FileLockGuard,
  type LockBackend,
  type LockResult,
  type Md5Hasher,
  type SectionOptions,
} from 'koa-buffer';
import { describe, expect, test } from 'tstyche';

describe('buffer()', () => {
  test('returns a Koa middleware and takes its options object', () => {
    expect(buffer()).type.toBeAssignableTo<Koa.Middleware>();
    expect(buffer).type.toBeCallableWith({ optimiseContent: 1, cache: true, cacheDuration: '10 minutes' });
    expect(buffer).type.toBeCallableWith({ cacheLock: new FileLock({ dir: '/var/lock/app' }), cacheLockTimeout: 5 });
    expect(buffer).type.toBeCallableWith({ cacheKey: (ctx: Koa.Context) => ctx.path });
  });

  test('refuses misspelt keys and values of the wrong type', () => {
    expect(buffer).type.not.toBeCallableWith({ optimiseContent: 3 });
    expect(buffer).type.not.toBeCallableWith({ cacheDuraton: 10 });
    expect(buffer).type.not.toBeCallableWith({ cacheLockTimeout: '10' });
    expect(buffer).type.not.toBeCallableWith({ cache: false });
  });

  test('every option is optional', () => {
    expect<BufferOptions>().type.toBeAssignableFrom({});
  });
});

describe('bufferSection()', () => {
  test('declares the four per-route options', () => {
    expect(
      bufferSection({ compressContent: false, optimiseContent: 2, rewriteLinks: 0, trustLastModified: true }),
    ).type.toBeAssignableTo<Koa.Middleware>();
    expect<keyof SectionOptions>().type.toBe<
      'compressContent' | 'optimiseContent' | 'rewriteLinks' | 'trustLastModified'
    >();
  });

  test('refuses an option that only buffer() takes', () => {
    expect(bufferSection).type.not.toBeCallableWith({ cache: true });
  });
});

describe('md5 and Md5', () => {
  test('md5 hashes bytes or a string to hex', () => {
    expect(md5('text')).type.toBe<string>();
    expect(md5).type.toBeCallableWith(Buffer.from('bytes'));
    expect(md5).type.toBeCallableWith(new Uint16Array(2));
    expect(md5).type.not.toBeCallableWith(42);
  });

  test('Md5 chains update() and ends with a Buffer or an encoded string', () => {
    const hasher = new Md5();
    expect(hasher).type.toBe<Md5Hasher>();
    expect(hasher.update('a').update(new Uint8Array(1))).type.toBe<Md5Hasher>();
    expect(hasher.digest()).type.toBe<Buffer>();
    expect(hasher.digest('hex')).type.toBe<string>();
    expect(hasher.digest('base64')).type.toBe<string>();
    expect(hasher.digest).type.not.toBeCallableWith('latin1');
  });
});

describe('squashHtml', () => {
  test('takes bytes or a string and the squash options, and returns a Buffer', () => {
    expect(squashHtml('<p> a </p>')).type.toBe<Buffer>();
    expect(squashHtml).type.toBeCallableWith(Buffer.from('<p> a </p>'), {
      level: 2,
      rewriteLinks: true,
      host: 'example.com:8080',
      path: '/a/b',
    });
    expect(squashHtml).type.not.toBeCallableWith('<p>', { level: 'high' });
    expect(squashHtml).type.not.toBeCallableWith('<p>', { host: 8080 });
  });
});

describe('BufferOptionError', () => {
  test('is an Error with a catalog key and a fixed code', () => {
    const error = new BufferOptionError('option_cache_lock_dir');
    expect(error).type.toBeAssignableTo<Error>();
    expect(error.key).type.toBe<string>();
    expect(error.code).type.toBe<'KB_OPTION_INVALID'>();
  });
});

describe('locks', () => {
  test('FileLock needs a dir and answers synchronously', () => {
    const locks = new FileLock({ dir: '/var/lock/app' });
    expect(FileLock).type.not.toBeConstructableWith({});
    expect(locks.acquire('key')).type.not.toBeAssignableTo<Promise<unknown>>();
    expect(locks.acquire('key')[0]).type.toBe<FileLockGuard | null>();
    expect(locks).type.toBeAssignableTo<LockBackend<FileLockGuard>>();
  });

  test('MemoryLock takes a ttl, RedisLock a client source', () => {
    expect(new MemoryLock().acquire).type.toBeCallableWith('key', { ttl: 30 });
    expect(RedisLock).type.toBeConstructableWith({ redis: 'redis://127.0.0.1:6379', ttl: 60 });
    expect(RedisLock).type.not.toBeConstructableWith({ ttl: 60 });
  });

  test('Lock waits on any backend and answers [elapsed, error]', async () => {
    const lock = new Lock(new MemoryLock(), { timeout: 5, step: 0.001, ratio: 2, maxStep: 0.5, exptime: 30 });
    expect(lock.lock('nightly-report')).type.toBe<Promise<LockResult>>();
    const [elapsed, error] = await lock.lock('nightly-report');
    if (error === undefined) expect(elapsed).type.toBe<number>();
    expect(Lock).type.not.toBeConstructableWith(new MemoryLock(), { timeout: '5' });
  });
});
