/**
 * One worker thread, at the lowest CPU priority, that compresses hot bodies
 * at their smallest setting (br 11, zstd 19, gzip 9) for upgrades.ts.
 *
 * Why a thread of its own rather than libuv's pool: br 11 of a large body
 * takes seconds; on the pool it would hold one of its four threads (shared
 * with file I/O and DNS) for that long, and zstd-napi has no asynchronous
 * call at all (its slices would block the event loop for a whole 128 KiB
 * block at level 19). In its own thread the work
 * blocks nothing, and on Linux `os.setPriority` called inside a thread sets
 * that thread's nice value only, so the scheduler gives the request path
 * every cycle it wants first. The thread starts on the first upgrade, never
 * keeps the process alive, and ends after a minute without work.
 *
 * The body reaches the thread through a SharedArrayBuffer filled in 256 KiB
 * slices, a turn of the event loop apart: postMessage's structured clone of
 * a large Buffer holds the event loop for the whole copy, the slices only a
 * little each (docs/decisions/0023-adaptive-compression-by-body-temperature.md).
 * The copy lives only while its upgrade runs (one at a time, see upgrades.ts).
 *
 * The same thread, started at normal priority instead, makes large dcz
 * bodies (dictionaries/dcz.ts): zstd-napi's `compressUsingDict` is one
 * synchronous call, long for a large page and dictionary, which a request
 * for a page in a rule's scope would otherwise hold the event loop for
 * (docs/decisions/0043-large-bodies-leave-the-event-loop.md). A
 * dictionary's shared copy is made once and kept with the dictionary's
 * Buffer, so each request copies only its body.
 */
import { createRequire } from 'node:module';
import { Worker } from 'node:worker_threads';

const require = createRequire(import.meta.url);

function resolved(name: string): string | undefined {
  try {
    return require.resolve(name);
  } catch {
    return undefined;
  }
}
const zstdPath = (): string | undefined => resolved('zstd-napi');
const zstdBindingPath = (): string | undefined => resolved('zstd-napi/binding');

/**
 * The worker's code, plain CommonJS run with `eval`, so the same text works
 * from the TypeScript sources and from the built package. Each message is a
 * body (in shared memory), a coding and a level; the answer is the
 * compressed bytes in an ArrayBuffer of their own, transferred back without
 * a copy.
 */
const workerSource = (priority: number): string => `
const { parentPort } = require('node:worker_threads');
const os = require('node:os');
const zlib = require('node:zlib');
${priority === 0 ? '' : `try { os.setPriority(${priority}); } catch {}`}
const zstdPath = ${JSON.stringify(zstdPath() ?? null)};
const zstdBindingPath = ${JSON.stringify(zstdBindingPath() ?? null)};
let zstd, zstdBinding, dczContext;
// dcz (RFC 9842): the skippable frame header, the dictionary's SHA-256, then the frame; as dczEncode makes it.
function dcz(body, dictionary, hash, level) {
  if (zstdBindingPath === null) throw new Error('zstd-napi is not available');
  zstdBinding ??= require(zstdBindingPath);
  dczContext ??= new zstdBinding.CCtx();
  const out = Buffer.allocUnsafe(40 + zstdBinding.compressBound(body.length));
  Buffer.from([0x5e, 0x2a, 0x4d, 0x18, 0x20, 0x00, 0x00, 0x00]).copy(out, 0);
  out.write(hash, 8, 'hex');
  const written = dczContext.compressUsingDict(out.subarray(40), body, dictionary, level);
  return out.subarray(0, 40 + written);
}
function compress(body, coding, level, dictionary, hash) {
  switch (coding) {
    case 'dcz': return dcz(body, dictionary, hash, level);
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
parentPort.on('message', ({ id, shared, length, coding, level, dictionary, hash }) => {
  try {
    const dict = dictionary === undefined ? undefined : Buffer.from(dictionary.shared, 0, dictionary.length);
    const out = compress(Buffer.from(shared, 0, length), coding, level, dict, hash);
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

/** Shared copies of dictionaries, made once per dictionary Buffer (the memo keeps the very same one). */
const sharedDictionaries = new WeakMap<Buffer, Promise<SharedArrayBuffer>>();

/** The upgrade thread of this process, started on demand. */
export class UpgradeThread {
  #worker: Worker | undefined;
  readonly #pending = new Map<number, Pending>();
  #nextId = 0;
  #idle: NodeJS.Timeout | undefined;
  readonly #priority: number;
  readonly #waitedFor: boolean;

  /**
   * @param options.priority - the thread's nice value on Linux: 19 (the lowest) for upgrades, 0 for work a request
   *   waits for
   * @param options.waitedFor - true when a caller waits for each answer: the thread then keeps the process alive
   *   while it has work (an upgrade never does)
   */
  constructor({ priority = 19, waitedFor = false }: { priority?: number; waitedFor?: boolean } = {}) {
    this.#priority = priority;
    this.#waitedFor = waitedFor;
  }

  /**
   * The dcz body of `body` with `dictionary` (as dczEncode makes it, byte for byte), made in the thread.
   *
   * @param hash - the dictionary's SHA-256 as 64 hex digits
   * @throws Error when the thread fails or zstd-napi is not available
   */
  async dcz(body: Buffer, dictionary: Buffer, hash: string, level: number): Promise<Buffer> {
    let sharedDictionary = sharedDictionaries.get(dictionary);
    if (sharedDictionary === undefined) {
      sharedDictionary = sharedCopy(dictionary);
      sharedDictionaries.set(dictionary, sharedDictionary);
    }
    const dictionaryMessage = { shared: await sharedDictionary, length: dictionary.length };
    return this.#run(body, { coding: 'dcz', level, dictionary: dictionaryMessage, hash });
  }

  /**
   * Compresses a copy of `body` in the thread.
   *
   * @returns the compressed bytes, in a Buffer of their own
   * @throws Error when the thread fails or the coding cannot be made
   */
  compress(body: Buffer, coding: string, level: number): Promise<Buffer> {
    return this.#run(body, { coding, level });
  }

  async #run(body: Buffer, job: Record<string, unknown>): Promise<Buffer> {
    const shared = await sharedCopy(body);
    const worker = this.#start();
    const id = this.#nextId++;
    return new Promise<Buffer>((resolve, reject) => {
      this.#pending.set(id, { resolve, reject });
      if (this.#waitedFor) worker.ref();
      worker.postMessage({ id, shared, length: body.length, ...job });
    });
  }

  #start(): Worker {
    if (this.#idle) clearTimeout(this.#idle);
    this.#idle = undefined;
    if (this.#worker) return this.#worker;
    // No loader hooks in the thread: its code is plain JavaScript.
    const worker = new Worker(workerSource(this.#priority), { eval: true, execArgv: [] });
    worker.on('message', (message: { id: number; bytes?: Uint8Array; error?: string }) => {
      const pending = this.#pending.get(message.id);
      if (!pending) return;
      this.#pending.delete(message.id);
      if (message.bytes) pending.resolve(Buffer.from(message.bytes.buffer, 0, message.bytes.byteLength));
      else pending.reject(new Error(message.error ?? 'the upgrade thread failed'));
      if (this.#pending.size === 0) {
        worker.unref();
        this.#whenIdle();
      }
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
