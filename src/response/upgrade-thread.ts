/**
 * One worker thread, at the lowest CPU priority, that compresses hot bodies
 * at their smallest setting (br 11, zstd 19, gzip 9) for upgrades.ts.
 *
 * Why a thread of its own rather than libuv's pool: br 11 of a 4 MiB body
 * takes seconds; on the pool it would hold one of its four threads (shared
 * with file I/O and DNS) for that long, and zstd-napi has no asynchronous
 * call at all (its slices would block the event loop for a whole 128 KiB
 * block at level 19, tens of milliseconds). In its own thread the work
 * blocks nothing, and on Linux `os.setPriority` called inside a thread sets
 * that thread's nice value only, so the scheduler gives the request path
 * every cycle it wants first. The thread starts on the first upgrade, never
 * keeps the process alive, and ends after a minute without work.
 *
 * The body reaches the thread through a SharedArrayBuffer filled in 256 KiB
 * slices, a turn of the event loop apart: postMessage's structured clone of
 * a 4 MiB Buffer held the event loop for 90–150 ms here, the slices take
 * well under a millisecond each. The copy lives only while its upgrade runs
 * (one at a time, see upgrades.ts).
 */
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

const require = createRequire(import.meta.url);

function zstdPath(): string | undefined {
  try {
    return require.resolve('zstd-napi');
  } catch {
    return undefined;
  }
}

/**
 * The worker's code, plain CommonJS run with `eval`, so the same text works
 * from the TypeScript sources and from the built package. Each message is a
 * body (in shared memory), a coding and a level; the answer is the
 * compressed bytes in an ArrayBuffer of their own, transferred back without
 * a copy.
 */
const workerSource = `
const { parentPort } = require('node:worker_threads');
const os = require('node:os');
const zlib = require('node:zlib');
try { os.setPriority(19); } catch {}
const zstdPath = ${JSON.stringify(zstdPath() ?? null)};
let zstd;
function compress(body, coding, level) {
  switch (coding) {
    case 'br':
      return zlib.brotliCompressSync(body, { params: {
        [zlib.constants.BROTLI_PARAM_QUALITY]: level,
        [zlib.constants.BROTLI_PARAM_SIZE_HINT]: body.length } });
    case 'gzip': return zlib.gzipSync(body, { level });
    case 'deflate': return zlib.deflateSync(body, { level });
    case 'zstd': {
      if (zstdPath === null) throw new Error('zstd-napi is not available');
      zstd ??= require(zstdPath);
      const compressor = new zstd.Compressor();
      compressor.setParameters({ compressionLevel: level });
      return compressor.compress(body);
    }
    default: throw new Error('no such coding: ' + coding);
  }
}
parentPort.on('message', ({ id, shared, length, coding, level }) => {
  try {
    const out = compress(Buffer.from(shared, 0, length), coding, level);
    const own = new Uint8Array(out.length);
    own.set(out);
    parentPort.postMessage({ id, bytes: own }, [own.buffer]);
  } catch (error) {
    parentPort.postMessage({ id, error: String((error && error.message) || error) });
  }
});
`;

interface Pending {
  resolve(bytes: Buffer): void;
  reject(error: Error): void;
}

/** Idle time after which the thread ends (ms); the next upgrade starts a new one. */
const idleMs = 60_000;

/** Bytes copied into shared memory per turn of the event loop. */
const slice = 256 * 1024;

const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** A copy of `body` in shared memory, made a slice per turn so the event loop is never held for long. */
async function sharedCopy(body: Buffer): Promise<SharedArrayBuffer> {
  const shared = new SharedArrayBuffer(body.length);
  const view = new Uint8Array(shared);
  for (let offset = 0; offset < body.length; offset += slice) {
    if (offset > 0) await nextTurn();
    view.set(body.subarray(offset, offset + slice), offset);
  }
  return shared;
}

/** The upgrade thread of this process, started on demand. */
export class UpgradeThread {
  #worker: Worker | undefined;
  readonly #pending = new Map<number, Pending>();
  #nextId = 0;
  #idle: NodeJS.Timeout | undefined;

  /**
   * Compresses a copy of `body` in the thread.
   *
   * @returns the compressed bytes, in a Buffer of their own
   * @throws Error when the thread fails or the coding cannot be made
   */
  async compress(body: Buffer, coding: string, level: number): Promise<Buffer> {
    const shared = await sharedCopy(body);
    const worker = this.#start();
    const id = this.#nextId++;
    return new Promise<Buffer>((resolve, reject) => {
      this.#pending.set(id, { resolve, reject });
      worker.postMessage({ id, shared, length: body.length, coding, level });
    });
  }

  #start(): Worker {
    if (this.#idle) clearTimeout(this.#idle);
    this.#idle = undefined;
    if (this.#worker) return this.#worker;
    // No loader hooks in the thread: its code is plain JavaScript.
    const worker = new Worker(workerSource, { eval: true, execArgv: [] });
    worker.on('message', (message: { id: number; bytes?: Uint8Array; error?: string }) => {
      const pending = this.#pending.get(message.id);
      if (!pending) return;
      this.#pending.delete(message.id);
      if (message.bytes) pending.resolve(Buffer.from(message.bytes.buffer, 0, message.bytes.byteLength));
      else pending.reject(new Error(message.error ?? 'the upgrade thread failed'));
      if (this.#pending.size === 0) this.#whenIdle();
    });
    const fail = (error: Error): void => {
      if (this.#worker === worker) this.#worker = undefined;
      for (const pending of this.#pending.values()) pending.reject(error);
      this.#pending.clear();
    };
    worker.on('error', fail);
    worker.on('exit', (code) => fail(new Error(`the upgrade thread exited with ${code}`)));
    // After the listeners: adding a 'message' listener refs the worker again, and a ref'd
    // upgrade thread would keep the process alive after its server closed.
    worker.unref();
    this.#worker = worker;
    return worker;
  }

  #whenIdle(): void {
    this.#idle = setTimeout(() => {
      const worker = this.#worker;
      this.#worker = undefined;
      void worker?.terminate();
    }, idleMs);
    this.#idle.unref();
  }
}
