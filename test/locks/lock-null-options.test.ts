/**
 * Found by test/security/hostile-options.test.ts: `new MemoryLock(null)` and
 * `new Lock(backend, null)` threw "Cannot read properties of null (reading
 * 'messages')", a TypeError that names nothing the caller did. null now
 * means no options, as it already did for FileLock; bad options still get
 * errors that name them. The same property found that a Lock option with no
 * usable toString (a null-prototype object) threw "Cannot convert object to
 * primitive value" while its error message was being built.
 */
import test from 'ava';
import { BufferOptionError } from '../../src/base/errors.ts';
import { Lock } from '../../src/locks/lock.ts';
import { MemoryLock } from '../../src/locks/memory-lock.ts';

test('null options mean no options for MemoryLock and Lock', async (t) => {
  const backend = new MemoryLock(null as never);
  const [guard] = backend.acquire('k');
  t.truthy(guard, 'a MemoryLock made with null works');
  backend.release(guard);
  const lock = new Lock(backend, null as never);
  const [elapsed, error] = await lock.lock('k');
  t.is(error, undefined, 'a Lock made with null works, with the default options');
  t.is(elapsed, 0);
  await lock.unlock();
});

test('bad options still name the problem', (t) => {
  t.is(
    t.throws(() => new MemoryLock({ messages: 3 } as never), { instanceOf: BufferOptionError })?.key,
    'option_messages',
  );
  t.regex(
    t.throws(() => new Lock(new MemoryLock(), { timeout: 'x' } as never), { instanceOf: TypeError })?.message ?? '',
    /^koa-buffer: Lock option timeout/,
  );
});

test('an option value that cannot be turned into a string still gets the named TypeError, not one from building the message', (t) => {
  const bare = Object.create(null) as object;
  const error = t.throws(() => new Lock(new MemoryLock(), { timeout: bare } as never), { instanceOf: TypeError });
  t.is(error?.message, 'koa-buffer: Lock option timeout must be a finite number of seconds, not [object Object]');
  const hostile = {
    toString: () => {
      throw new Error('no');
    },
  };
  t.is(
    t.throws(() => new Lock(new MemoryLock(), { step: hostile } as never))?.message,
    'koa-buffer: Lock option step must be a finite number of seconds, not [object Object]',
  );
});
