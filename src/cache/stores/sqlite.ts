/**
 * `cache: 'sqlite:PATH'`: one SQLite file shared by the worker processes of a
 * host, through better-sqlite3. WAL mode lets readers run beside the one
 * writer, and the busy timeout makes a worker wait for another's write
 * instead of failing with SQLITE_BUSY.
 *
 * better-sqlite3 is loaded on first use, so an application that never asks
 * for a SQLite cache does not need it installed.
 */
import { Buffer } from 'node:buffer';
import { closeSync, mkdirSync, openSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname } from 'node:path';
import { normaliseTtl, type CacheStore } from '../../base/store.ts';

/** Options of {@link SqliteStore}. */
export interface SqliteStoreOptions {
  /** The database file, or `':memory:'` for a private in-memory database (tests). */
  path: string;
  /**
   * How long a write waits for another process's write before failing with
   * SQLITE_BUSY. The wait is synchronous (better-sqlite3 is), so keep it short.
   * @defaultValue 3000
   */
  busyTimeoutMs?: number;
  /**
   * Expired rows are ignored at once and deleted at most this often, on a
   * `set`, so that an ordinary write never pays for the sweep.
   * @defaultValue 60000
   */
  purgeIntervalMs?: number;
}

/** The part of better-sqlite3's API this store uses (the package ships no types). */
interface Statement {
  run(...params: unknown[]): { changes: number };
  get(...params: unknown[]): unknown;
  pluck(toggle?: boolean): Statement;
}
interface Database {
  pragma(source: string, options?: { simple?: boolean }): unknown;
  prepare(source: string): Statement;
  exec(source: string): Database;
  close(): Database;
  readonly open: boolean;
}
type DatabaseConstructor = new (filename: string, options?: { timeout?: number }) => Database;

const require = createRequire(import.meta.url);
let driver: DatabaseConstructor | undefined;

function loadDriver(): DatabaseConstructor {
  if (driver) return driver;
  try {
    driver = require('better-sqlite3') as DatabaseConstructor;
    return driver;
  } catch (error) {
    const missing = (error as NodeJS.ErrnoException).code === 'MODULE_NOT_FOUND';
    throw new Error(
      missing
        ? "koa-buffer: cache 'sqlite:…' needs the better-sqlite3 package: npm install better-sqlite3"
        : `koa-buffer: better-sqlite3 does not load: ${(error as Error).message}`,
      { cause: error },
    );
  }
}

/**
 * Runs `setup` again while it fails with SQLITE_BUSY, for at most `timeoutMs`.
 * Processes opening a new file at the same moment all try to switch it to
 * WAL and create the table; SQLite answers some of them SQLITE_BUSY at once,
 * without waiting out busy_timeout, where waiting could deadlock (two readers
 * each wanting the write lock). The setup is idempotent, so it is run again
 * after a pause of 1, 2, 4 … up to 50 ms. The constructor is synchronous:
 * the pause is Atomics.wait, at start-up only.
 */
function whileBusy(timeoutMs: number, setup: () => void): void {
  const deadline = Date.now() + timeoutMs;
  for (let pause = 1; ; pause = Math.min(50, pause * 2)) {
    try {
      setup();
      return;
    } catch (error) {
      if ((error as { code?: unknown }).code !== 'SQLITE_BUSY' || Date.now() + pause > deadline) throw error;
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, pause);
    }
  }
}

const SCHEMA = `
  CREATE TABLE IF NOT EXISTS koa_buffer_cache (
    key TEXT PRIMARY KEY,
    value BLOB NOT NULL,
    expires INTEGER
  );
  CREATE INDEX IF NOT EXISTS koa_buffer_cache_expires ON koa_buffer_cache (expires);
`;

/**
 * A cache store in one SQLite file (WAL mode), shared by every process of the
 * host that opens the same path. Methods are synchronous and throw on failure
 * (a `SqliteError` with `code`, e.g. `SQLITE_BUSY`, `SQLITE_FULL`).
 *
 * The file and its `-wal`/`-shm` companions are created with mode 0600 and a
 * missing parent directory with 0700: cached pages may be personalised.
 *
 * @example
 * const store = new SqliteStore({ path: '/var/cache/app/pages.sqlite' });
 * store.set(key, encodeEntry(entry), 600_000);
 * decodeEntry(store.get(key));
 * store.close();
 */
export class SqliteStore implements CacheStore {
  /** The path given to the constructor. */
  readonly path: string;
  readonly #db: Database;
  readonly #get: Statement;
  readonly #set: Statement;
  readonly #delete: Statement;
  readonly #purge: Statement;
  readonly #clear: Statement;
  readonly #purgeIntervalMs: number;
  #nextPurge: number;

  /**
   * Opens (creating if needed) the database and its table.
   *
   * @param options - see {@link SqliteStoreOptions}
   * @throws TypeError when `path` is not a non-empty string
   * @throws RangeError when a timing option is not a non-negative number
   * @throws Error `koa-buffer: cannot open the SQLite cache …` (with `cause` and
   *   the driver's `code`) when the directory or file cannot be created, the
   *   file is not a database, WAL mode cannot be enabled, or better-sqlite3 is missing
   */
  constructor({ path, busyTimeoutMs = 3000, purgeIntervalMs = 60_000 }: SqliteStoreOptions) {
    if (typeof path !== 'string' || path === '')
      throw new TypeError(`SqliteStore path must be a non-empty string, got ${String(path)}`);
    for (const [name, value] of [
      ['busyTimeoutMs', busyTimeoutMs],
      ['purgeIntervalMs', purgeIntervalMs],
    ] as const) {
      if (!Number.isFinite(value) || value < 0)
        throw new RangeError(`SqliteStore ${name} must be a non-negative number of ms, got ${String(value)}`);
    }
    this.path = path;
    this.#purgeIntervalMs = purgeIntervalMs;
    const Driver = loadDriver();
    let db: Database | undefined;
    try {
      if (path !== ':memory:') {
        mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
        // SQLite gives the -wal and -shm files the database file's mode, so creating it 0600 covers all three.
        closeSync(openSync(path, 'a', 0o600));
      }
      db = new Driver(path, { timeout: busyTimeoutMs });
      const opened = db;
      whileBusy(busyTimeoutMs, () => {
        const mode = opened.pragma('journal_mode = WAL', { simple: true });
        if (path !== ':memory:' && mode !== 'wal')
          throw new Error(`journal_mode is '${String(mode)}', WAL could not be enabled (a network file system?)`);
        // NORMAL is durable against a crashed process in WAL mode; only an OS crash may lose the last commits.
        opened.pragma('synchronous = NORMAL');
        opened.pragma('journal_size_limit = 67108864');
        opened.exec(SCHEMA);
      });
      this.#db = db;
      this.#get = db
        .prepare('SELECT value FROM koa_buffer_cache WHERE key = ? AND (expires IS NULL OR expires > ?)')
        .pluck();
      this.#set = db.prepare(
        'INSERT INTO koa_buffer_cache (key, value, expires) VALUES (?, ?, ?) ON CONFLICT (key) DO UPDATE SET value = excluded.value, expires = excluded.expires',
      );
      this.#delete = db.prepare('DELETE FROM koa_buffer_cache WHERE key = ?');
      this.#purge = db.prepare('DELETE FROM koa_buffer_cache WHERE expires <= ?');
      this.#clear = db.prepare('DELETE FROM koa_buffer_cache');
    } catch (error) {
      db?.close();
      const wrapped = new Error(`koa-buffer: cannot open the SQLite cache '${path}': ${(error as Error).message}`, {
        cause: error,
      });
      const code = (error as { code?: unknown }).code;
      if (typeof code === 'string') Object.assign(wrapped, { code });
      throw wrapped;
    }
    this.#nextPurge = Date.now() + purgeIntervalMs;
  }

  /**
   * @param key - the key
   * @returns the value (a Buffer, or a string if one was stored), or `undefined` when absent or expired
   */
  get(key: string): Buffer | string | undefined {
    return (this.#get.get(key, Date.now()) as Buffer | string | undefined) ?? undefined;
  }

  /**
   * Stores `value`, replacing any previous one; now and then also deletes expired rows.
   * @param key - the key
   * @param value - bytes (Buffer or Uint8Array) or a string
   * @param ttlMs - milliseconds to keep it; `undefined` or `0` for no expiry
   * @returns true
   * @throws TypeError when `value` is neither bytes nor a string
   */
  set(key: string, value: unknown, ttlMs?: number): true {
    const bound = toBindable(value);
    const ttl = normaliseTtl(ttlMs);
    const now = Date.now();
    this.#set.run(key, bound, ttl === undefined ? null : now + ttl);
    if (now >= this.#nextPurge) {
      this.#nextPurge = now + this.#purgeIntervalMs;
      this.purgeExpired(now);
    }
    return true;
  }

  /**
   * @param key - the key
   * @returns true when a row was removed
   */
  delete(key: string): boolean {
    return this.#delete.run(key).changes > 0;
  }

  /**
   * Deletes the rows expired at `now`.
   * @param now - ms since the epoch
   * @defaultValue now - `Date.now()`
   * @returns how many rows went
   */
  purgeExpired(now: number = Date.now()): number {
    return this.#purge.run(now).changes;
  }

  /** Removes every entry (for every process sharing the file). */
  clear(): void {
    this.#clear.run();
  }

  /** Closes the database; later calls throw. Closing twice is harmless. */
  close(): void {
    if (this.#db.open) this.#db.close();
  }
}

function toBindable(value: unknown): Buffer | string {
  if (typeof value === 'string' || Buffer.isBuffer(value)) return value;
  if (value instanceof Uint8Array) return Buffer.from(value.buffer, value.byteOffset, value.byteLength);
  throw new TypeError(`SqliteStore stores bytes or strings, got ${value === null ? 'null' : typeof value}`);
}
