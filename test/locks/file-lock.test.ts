/**
 * FileLock, every transition of a lock file, with real files and real child
 * processes. The numbers in the titles name the transitions: (1) acquire of a
 * free key, (2) release, (3) a guard dropped without release, (4) the holder
 * dies, (5) acquire fails, (6) acquire of a held key is busy, (7) release of
 * nothing, (8) a child process started while a lock is held.
 */
import test, { type ExecutionContext } from 'ava';
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  chmodSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readlinkSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setImmediate as tick } from 'node:timers/promises';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { BufferOptionError } from '../../src/base/errors.ts';
import { FileLock, type FileLockGuard } from '../../src/locks/file-lock.ts';
import { Messages } from '../../src/base/messages.ts';
import { flock } from '../../src/native/core.ts';
import { md5 } from '../../src/native/exports.ts';
import { asNobody, nobodyCanRead, runningAsRoot } from '../helpers/as-nobody.ts';
import { fixture, spawnChild, spawnProgram, type LineChild } from '../helpers/children.ts';

function tempDir(t: ExecutionContext): string {
  const dir = mkdtempSync(join(tmpdir(), 'kb-file-lock-'));
  t.teardown(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** A lock agent (support/lock-agent.ts) on `dir`, ready. */
async function agentOn(t: ExecutionContext, dir: string): Promise<LineChild> {
  const agent = spawnChild(t, fixture('../../support/lock-agent.ts'), ['file', dir]);
  await agent.waitForJson((m) => m.ready === true, 'the agent to start');
  return agent;
}

const utf8Md5 = (key: string): string => createHash('md5').update(key, 'utf8').digest('hex');

/** The descriptors of a process that point at `path`, from /proc. */
function descriptorsOf(pid: number | 'self', path: string): string[] {
  const dir = `/proc/${pid}/fd`;
  return readdirSync(dir).filter((fd) => {
    try {
      return readlinkSync(join(dir, fd)) === path;
    } catch {
      return false; // closed while we looked
    }
  });
}

// ---- new ----

test('new creates the directory and its missing parents with mode 0700', (t) => {
  const base = tempDir(t);
  const dir = join(base, 'a', 'b', 'locks');
  const lock = new FileLock({ dir });
  t.is(lock.dir, dir);
  for (const created of [join(base, 'a'), join(base, 'a', 'b'), dir]) {
    t.is(statSync(created).mode & 0o777, 0o700, `${created} is private`);
  }
});

test('new leaves the mode of an existing directory alone', (t) => {
  const dir = tempDir(t);
  chmodSync(dir, 0o755);
  new FileLock({ dir });
  t.is(statSync(dir).mode & 0o777, 0o755);
});

test('a dir that is not a non-empty string throws option_cache_lock_dir, in the words of messages', (t) => {
  for (const [dir, shown] of [
    [undefined, 'undefined'],
    [null, 'null'],
    ['', '""'],
    [42, '42'],
    [['x'], '["x"]'],
  ] as const) {
    const error = t.throws(() => new FileLock({ dir } as never), { instanceOf: BufferOptionError });
    t.is(error?.key, 'option_cache_lock_dir', `dir ${JSON.stringify(dir)}`);
    t.is(error?.message, `koa-buffer: dir must be a directory path, not ${shown}`);
  }
  t.throws(() => new FileLock(undefined as never), { instanceOf: BufferOptionError, message: /dir must be/ });
  const worded = t.throws(() => new FileLock({ dir: '', messages: { option_cache_lock_dir: 'Verzeichnis fehlt' } }));
  t.is(worded?.message, 'koa-buffer: Verzeichnis fehlt');
  const bad = t.throws(() => new FileLock({ dir: tempDir(t), messages: 7 as never }), {
    instanceOf: BufferOptionError,
  });
  t.is(bad?.key, 'option_messages');
});

test('a dir that cannot be created throws lock_dir_create_failed with the OS error', (t) => {
  const base = tempDir(t);
  const file = join(base, 'file');
  writeFileSync(file, '');
  const under = t.throws(() => new FileLock({ dir: join(file, 'locks') }), { instanceOf: BufferOptionError });
  t.is(under?.key, 'lock_dir_create_failed');
  t.is(under?.message, `koa-buffer: cannot create cacheLockDir '${join(file, 'locks')}': Not a directory`);
  const onFile = t.throws(() => new FileLock({ dir: file }), { instanceOf: BufferOptionError });
  t.is(onFile?.key, 'lock_dir_create_failed', 'a file in the way');
  t.regex(onFile!.message, /File exists$/);
});

test('a directory this process cannot write to throws lock_dir_not_writable', async (t) => {
  const dir = tempDir(t);
  const locked = join(dir, 'locked');
  mkdirSync(locked, { mode: 0o755 });
  let answer: Record<string, unknown>;
  if (runningAsRoot()) {
    // root writes anywhere. Ask as nobody (65534), who cannot write to root's 0755 directory;
    // where nobody cannot read this checkout (one under /root), ask as a root that lost
    // CAP_DAC_OVERRIDE (setpriv, util-linux), which the mode bits then bind too.
    chmodSync(dir, 0o755);
    const construct = fixture('lock-construct.ts');
    let child: LineChild;
    if (nobodyCanRead(construct)) {
      child = spawnChild(t, construct, [locked], asNobody());
    } else if (!spawnSync('setpriv', ['--version']).error) {
      t.log('nobody cannot read the checkout: asking as root without CAP_DAC_OVERRIDE');
      const drop = [
        '--bounding-set=-dac_override,-dac_read_search',
        process.execPath,
        '--import',
        'tsx/esm',
        construct,
        locked,
      ];
      child = spawnProgram(t, 'setpriv', drop);
    } else {
      t.log('skipped: nobody cannot read the checkout and setpriv is missing; install util-linux');
      t.pass();
      return;
    }
    answer = await child.waitForJson(() => true, 'the constructor’s answer');
  } else {
    chmodSync(locked, 0o555);
    t.teardown(() => chmodSync(locked, 0o755));
    try {
      new FileLock({ dir: locked });
      answer = { ok: true };
    } catch (error) {
      answer = { key: (error as BufferOptionError).key, message: (error as Error).message };
    }
  }
  t.is(answer.key, 'lock_dir_not_writable', JSON.stringify(answer));
  t.is(answer.message, `koa-buffer: cacheLockDir '${locked}' is not a writable directory`);
});

test('without the native addon, FileLock throws KB_NATIVE_UNAVAILABLE: flock has no twin', async (t) => {
  const child = spawnChild(t, fixture('lock-construct.ts'), [tempDir(t)], {
    env: { ...process.env, KOA_BUFFER_NATIVE: '0' },
  });
  const answer = await child.waitForJson(() => true, 'the constructor’s answer');
  t.is(answer.code, 'KB_NATIVE_UNAVAILABLE');
  t.regex(String(answer.message), /FileLock needs the native addon/);
});

// ---- (1) acquire: FREE → HELD ----

test('(1) acquire of a free key returns a guard and keeps dir/md5(utf8(key)).lock open, mode 0600', (t) => {
  const dir = tempDir(t);
  const lock = new FileLock({ dir });
  const [guard, error] = lock.acquire('nightly-report');
  t.truthy(guard);
  t.is(error, undefined);
  const path = join(dir, `${utf8Md5('nightly-report')}.lock`);
  t.true(existsSync(path), 'the lock file is at dir/md5(utf8(key)).lock');
  t.is(statSync(path).mode & 0o777, 0o600);
  t.is(statSync(path).size, 0, 'and empty');
  t.is(descriptorsOf('self', path).length, 1, 'one open descriptor holds it');
  t.deepEqual(lock.release(guard), [true, undefined]);
  t.true(existsSync(path), 'lock files are never deleted');
});

// ---- (6) busy, from any holder ----

test('(6) a held key is busy for the same object, another FileLock, and another process', async (t) => {
  const dir = tempDir(t);
  const lock = new FileLock({ dir });
  const [guard] = lock.acquire('k');
  t.deepEqual(lock.acquire('k'), [null, undefined], 'the same object: not re-entrant');
  t.deepEqual(new FileLock({ dir }).acquire('k'), [null, undefined], 'another object on the same dir');
  const agent = await agentOn(t, dir);
  t.false((await agent.request({ op: 'acquire', key: 'k' })).taken, 'another process');
  t.deepEqual(lock.release(guard), [true, undefined]);
  t.true((await agent.request({ op: 'acquire', key: 'k' })).taken, 'free for the other process after release (2)');
  t.deepEqual(lock.acquire('k'), [null, undefined], 'and now this process sees busy');
  t.is(descriptorsOf('self', join(dir, `${utf8Md5('k')}.lock`)).length, 0, 'busy attempts leave no descriptor open');
});

// ---- (2) release: HELD → FREE ----

test('(2) release frees the key for the next acquire', (t) => {
  const lock = new FileLock({ dir: tempDir(t) });
  const [guard] = lock.acquire('k');
  t.deepEqual(lock.release(guard), [true, undefined]);
  const [again] = lock.acquire('k');
  t.truthy(again);
  lock.release(again);
});

test('(2) a release whose unlock fails returns unlock_failed, and the lock is gone anyway', (t) => {
  const dir = tempDir(t);
  const lock = new FileLock({ dir, messages: { unlock_failed: 'nicht entsperrt %{path}: %{error}' } });
  const [guard] = lock.acquire('k');
  const path = join(dir, `${utf8Md5('k')}.lock`);
  // Close the descriptor behind the guard's back, so flock(LOCK_UN) meets EBADF.
  // Both calls run in one synchronous stretch, so no other open can reuse the number in between.
  const [fd] = descriptorsOf('self', path);
  t.is(flock().closeFd(Number(fd)), 0);
  t.deepEqual(lock.release(guard), [false, `nicht entsperrt ${path}: Bad file descriptor`]);
  t.truthy(lock.acquire('k')[0], 'free again');
  t.deepEqual(lock.release(guard), [true, undefined], 'and the guard counts as released');
});

// ---- (3) the guard goes out of scope ----

setFlagsFromString('--expose-gc');
const gc = runInNewContext('gc') as () => void;

async function collect(until: () => boolean): Promise<boolean> {
  for (let i = 0; i < 50 && !until(); i++) {
    gc();
    await tick(); // FinalizationRegistry callbacks run in a later task
  }
  return until();
}

test('(3) a guard dropped without release is closed by the finalizer, freeing the key', async (t) => {
  const dir = tempDir(t);
  const lock = new FileLock({ dir });
  (() => {
    t.truthy(lock.acquire('dropped')[0]);
  })();
  const path = join(dir, `${utf8Md5('dropped')}.lock`);
  t.true(await collect(() => descriptorsOf('self', path).length === 0), 'the descriptor was closed after collection');
  const [guard] = lock.acquire('dropped');
  t.truthy(guard, 'the key is free');
  lock.release(guard);
});

test('(3) a released guard collected later never closes the descriptor number reused by a new lock', async (t) => {
  const dir = tempDir(t);
  const lock = new FileLock({ dir });
  (() => {
    const [old] = lock.acquire('k');
    lock.release(old);
  })();
  const [current] = lock.acquire('k'); // most likely the very same descriptor number
  await collect(() => false);
  t.deepEqual(lock.acquire('k'), [null, undefined], 'still held after the old guard was collected');
  t.deepEqual(lock.release(current), [true, undefined], 'and its descriptor was still open to release');
});

// ---- (4) the holding process exits or is killed ----

test('(4) a holder killed with SIGKILL frees the key at once', async (t) => {
  const dir = tempDir(t);
  const agent = await agentOn(t, dir);
  t.true((await agent.request({ op: 'acquire', key: 'crash' })).taken);
  const lock = new FileLock({ dir });
  t.deepEqual(lock.acquire('crash'), [null, undefined], 'held by the child');
  await agent.kill('SIGKILL');
  const [guard] = lock.acquire('crash');
  t.truthy(guard, 'free as soon as the child is gone');
  lock.release(guard);
});

// ---- (5) acquire fails: nothing changes ----

test('(5) acquire after the directory vanished makes it again; one that cannot be made returns lock_dir_create_failed with the OS error', (t) => {
  const base = join(tempDir(t), 'base');
  const dir = join(base, 'locks');
  const lock = new FileLock({ dir });
  rmSync(dir, { recursive: true });
  const [guard, error] = lock.acquire('k');
  t.truthy(guard, `made again (${error})`);
  lock.release(guard);
  rmSync(base, { recursive: true });
  writeFileSync(base, '');
  t.deepEqual(lock.acquire('k'), [null, `cannot create cacheLockDir '${dir}': Not a directory`]);
});

test('(5) a symlink at the lock path is refused (O_NOFOLLOW), not followed', (t) => {
  const dir = tempDir(t);
  const lock = new FileLock({ dir });
  const target = join(dir, 'elsewhere');
  const path = join(dir, `${utf8Md5('k')}.lock`);
  symlinkSync(target, path);
  const [guard, error] = lock.acquire('k');
  t.is(guard, null);
  t.is(error, `cannot open ${path}: Too many levels of symbolic links`);
  t.false(existsSync(target), 'the link target was not created');
});

test('(5) keys that are not strings come back as messages, never throws', (t) => {
  const lock = new FileLock({ dir: tempDir(t), messages: new Messages({ lock_key_undefined: 'kein Schlüssel' }) });
  t.deepEqual(lock.acquire(undefined as never), [null, 'kein Schlüssel']);
  t.deepEqual(lock.acquire(null as never), [null, 'kein Schlüssel']);
  t.deepEqual(lock.acquire(7 as never), [null, 'cache key must be a string, not number']);
});

// ---- (7) release of nothing ----

test('(7) release(null), release(undefined) and a second release return [true, undefined] and do nothing', (t) => {
  const lock = new FileLock({ dir: tempDir(t) });
  t.deepEqual(lock.release(null), [true, undefined]);
  t.deepEqual(lock.release(undefined), [true, undefined]);
  const [guard] = lock.acquire('k');
  lock.release(guard);
  const [next] = lock.acquire('k');
  t.deepEqual(lock.release(guard), [true, undefined], 'a second release');
  t.deepEqual(lock.acquire('k'), [null, undefined], 'did not free the next holder');
  lock.release(next);
  t.deepEqual(lock.release({} as FileLockGuard), [
    false,
    'release or expire was given something that is not a guard of this lock',
  ]);
});

// ---- (8) fork: here, a spawned child does not inherit the lock ----

test('(8) a spawned child does not inherit the lock: its holder dies and the key is free while the child lives', async (t) => {
  const dir = tempDir(t);
  const agent = await agentOn(t, dir);
  t.true((await agent.request({ op: 'acquire', key: 'k' })).taken);
  const { pid } = await agent.request<{ pid: number }>({ op: 'spawn', command: 'sleep', args: ['30'] });
  t.teardown(() => {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  });
  const path = join(dir, `${utf8Md5('k')}.lock`);
  t.deepEqual(descriptorsOf(pid, path), [], 'the grandchild has no descriptor on the lock file (O_CLOEXEC)');
  await agent.kill('SIGKILL');
  t.notThrows(() => process.kill(pid, 0), 'the grandchild is still alive');
  const lock = new FileLock({ dir });
  const [guard] = lock.acquire('k');
  t.truthy(guard, 'the key is free although a child of the holder lives on');
  lock.release(guard);
});

test('(8) a child spawned by this process while it holds a lock has no descriptor on the lock file', async (t) => {
  const dir = tempDir(t);
  const lock = new FileLock({ dir });
  const [guard] = lock.acquire('k');
  const child = spawnChild(t, fixture('../../support/lock-agent.ts'), ['file', dir]);
  await child.waitForJson((m) => m.ready === true, 'the child to start');
  t.deepEqual(descriptorsOf(child.pid, join(dir, `${utf8Md5('k')}.lock`)), []);
  t.false((await child.request({ op: 'acquire', key: 'k' })).taken, 'the child sees the lock as busy, not as its own');
  lock.release(guard);
});

// ---- keys and paths ----

test('the empty string, emoji and a 100 KB key each get their own lock file, named by MD5 of UTF-8', (t) => {
  const dir = tempDir(t);
  const lock = new FileLock({ dir });
  const big = 'é'.repeat(100 * 1024);
  const guards = ['', '🔒🦊', big].map((key) => {
    const [guard, error] = lock.acquire(key);
    t.truthy(guard, `key of length ${key.length} is taken (${error})`);
    t.true(existsSync(join(dir, `${utf8Md5(key)}.lock`)), `its file is md5(utf8(key)).lock`);
    return guard;
  });
  t.is(md5('🔒🦊'), utf8Md5('🔒🦊'), 'the package md5 hashes strings as UTF-8');
  t.deepEqual(lock.acquire(big), [null, undefined]);
  t.truthy(lock.acquire(`${big}x`)[0], 'a key differing at its end is another lock');
  for (const guard of guards) t.deepEqual(lock.release(guard), [true, undefined]);
});

test('a subclass spreads lock files over sub-directories through pathFor', (t) => {
  class ShardedLock extends FileLock {
    protected override pathFor(key: string): string {
      const digest = md5(key);
      const sub = join(this.dir, digest.slice(0, 2));
      mkdirSync(sub, { recursive: true, mode: 0o700 });
      return join(sub, `${digest}.lock`);
    }
  }
  const dir = tempDir(t);
  const lock = new ShardedLock({ dir });
  const [guard] = lock.acquire('report');
  const digest = utf8Md5('report');
  t.true(existsSync(join(dir, digest.slice(0, 2), `${digest}.lock`)));
  t.deepEqual(new ShardedLock({ dir }).acquire('report'), [null, undefined], 'busy through the same layout');
  t.deepEqual(lock.release(guard), [true, undefined]);
});

test('a pathFor that throws becomes a lock_path_failed message', (t) => {
  class Broken extends FileLock {
    protected override pathFor(): string {
      throw new Error('no shard today');
    }
  }
  t.deepEqual(new Broken({ dir: tempDir(t) }).acquire('k'), [
    null,
    'cannot build the lock file path for key k: no shard today',
  ]);
});

test('thousands of acquire, busy and release cycles leave no descriptor behind', (t) => {
  const dir = tempDir(t);
  const lock = new FileLock({ dir });
  const before = readdirSync('/proc/self/fd').length;
  for (let i = 0; i < 3000; i++) {
    const [guard] = lock.acquire(`k${i % 7}`);
    lock.acquire(`k${i % 7}`);
    lock.release(guard);
  }
  t.is(readdirSync('/proc/self/fd').length, before);
});
