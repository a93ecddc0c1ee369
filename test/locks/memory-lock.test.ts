import test from 'ava';
import { setTimeout as sleep } from 'node:timers/promises';
import { BufferOptionError } from '../../src/base/errors.ts';
import { MemoryLock } from '../../src/locks/memory-lock.ts';
import { Messages } from '../../src/base/messages.ts';

test('a free key is taken, and a second acquire of it is busy even from the same object', (t) => {
  const locks = new MemoryLock();
  const [guard, error] = locks.acquire('report');
  t.truthy(guard, 'the first acquire takes the lock');
  t.is(error, undefined);
  t.deepEqual(locks.acquire('report'), [null, undefined], 'the same object sees busy: not re-entrant');
  t.truthy(locks.acquire('other')[0], 'another key is another lock');
});

test('release frees the key; release of null, undefined or a released guard is ignored', (t) => {
  const locks = new MemoryLock();
  const [guard] = locks.acquire('k');
  t.deepEqual(locks.release(guard), [true, undefined]);
  t.deepEqual(locks.release(guard), [true, undefined], 'a second release is harmless');
  t.deepEqual(locks.release(null), [true, undefined]);
  t.deepEqual(locks.release(undefined), [true, undefined]);
  t.truthy(locks.acquire('k')[0], 'the key is free again');
});

test('a released guard cannot free the next holder of its key', (t) => {
  const locks = new MemoryLock();
  const [first] = locks.acquire('k');
  locks.release(first);
  const [second] = locks.acquire('k');
  t.deepEqual(locks.release(first), [true, undefined]);
  t.deepEqual(locks.acquire('k'), [null, undefined], 'the second holder still holds it');
  t.deepEqual(locks.release(second), [true, undefined]);
});

test('a lock taken with a ttl frees itself when the ttl runs out, and its late release says it was lost', async (t) => {
  const locks = new MemoryLock();
  const [guard] = locks.acquire('k', { ttl: 0.05 });
  t.deepEqual(locks.acquire('k'), [null, undefined], 'held before the ttl');
  await sleep(70);
  const [next] = locks.acquire('k');
  t.truthy(next, 'free after the ttl');
  const [ok, error] = locks.release(guard);
  t.false(ok, 'the first owner is told it lost the lock');
  t.regex(error!, /no longer held/);
  t.deepEqual(locks.acquire('k'), [null, undefined], 'and it did not free the new owner');
});

test('expire extends a held lock and refuses a lost one', async (t) => {
  const locks = new MemoryLock();
  const [guard] = locks.acquire('k', { ttl: 0.05 });
  t.deepEqual(locks.expire(guard!, 0.5), [true, undefined]);
  await sleep(80);
  t.deepEqual(locks.acquire('k'), [null, undefined], 'still held past the first ttl');
  t.deepEqual(locks.expire(guard!, 0.01), [true, undefined], 'a ttl can be shortened too');
  await sleep(30);
  const [ok, error] = locks.expire(guard!, 1);
  t.false(ok, 'a lock whose ttl ran out cannot be extended');
  t.regex(error!, /no longer held/);
});

test('bad keys, ttls and guards come back as messages, never as throws', (t) => {
  const locks = new MemoryLock({ messages: { lock_key_undefined: 'kein Schlüssel' } });
  t.deepEqual(
    locks.acquire(undefined as unknown as string),
    [null, 'kein Schlüssel'],
    'the override words the message',
  );
  t.deepEqual(locks.acquire(42 as unknown as string), [null, 'cache key must be a string, not number']);
  for (const ttl of [0, -1, Number.NaN, Infinity, '5' as unknown as number]) {
    const [guard, error] = locks.acquire('k', { ttl });
    t.is(guard, null);
    t.regex(error!, /ttl must be a positive number/, `ttl ${String(ttl)} is refused`);
  }
  const [foreign] = new MemoryLock().acquire('k');
  t.deepEqual(locks.release(foreign), [
    false,
    'release or expire was given something that is not a guard of this lock',
  ]);
  const [guard] = locks.acquire('k');
  t.regex(locks.expire(guard!, 0)[1]!, /ttl must be a positive number/);
});

test('the empty string, emoji and a 100 KB key are distinct keys', (t) => {
  const locks = new MemoryLock();
  const big = 'x'.repeat(100 * 1024);
  for (const key of ['', '🔒🦊', big]) t.truthy(locks.acquire(key)[0], `key of length ${key.length} is taken`);
  for (const key of ['', '🔒🦊', big])
    t.deepEqual(locks.acquire(key), [null, undefined], `key of length ${key.length} is busy`);
  t.truthy(locks.acquire(`${big}y`)[0], 'a key differing in its last character is another lock');
  t.is(locks.size, 4);
});

test('messages accept a Messages instance, and a bad messages option throws', (t) => {
  const locks = new MemoryLock({ messages: new Messages({ lock_key_undefined: 'no key' }) });
  t.deepEqual(locks.acquire(null as unknown as string), [null, 'no key']);
  const error = t.throws(() => new MemoryLock({ messages: 'nope' as unknown as Messages }), {
    instanceOf: BufferOptionError,
  });
  t.is(error?.key, 'option_messages');
});
