/**
 * Where the demo listens and keeps its data, from the environment:
 *
 * | variable              | default                                |
 * |-----------------------|----------------------------------------|
 * | `PORT`                | `3000` (`0` picks a free port)         |
 * | `HOST`                | `127.0.0.1`                            |
 * | `KOA_BUFFER_DEMO_DIR` | `<os temp dir>/koa-buffer-demo-<uid>`  |
 *
 * The data directory holds the SQLite cache, the lock directory, the report's
 * build log and the file `/download` streams. It is per user, because the
 * lock directory must belong to the user that runs the workers.
 */
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

/** What the primary and the workers agree on. */
export interface Settings {
  host: string;
  port: number;
  /** Absolute path of the data directory. */
  dataDir: string;
  /** `sqlite:` URL of the cache shared by the workers. */
  cacheUrl: string;
  /** The FileLock directory that elects one builder across workers. */
  lockDir: string;
  /** One line per build of /report, appended by whichever worker built it. */
  buildLog: string;
  /** The file /download streams. */
  downloadFile: string;
  /** Workers the primary forks. */
  workers: number;
}

/**
 * Reads the settings.
 *
 * @param env - the environment to read
 * @returns the settings
 * @throws Error when PORT is not a port number
 */
export function readSettings(env: NodeJS.ProcessEnv = process.env): Settings {
  const port = env.PORT === undefined || env.PORT === '' ? 3000 : Number(env.PORT);
  if (!Number.isInteger(port) || port < 0 || port > 65535)
    throw new Error(`PORT must be a port number (0 to 65535), not '${env.PORT}'`);
  const uid = process.getuid?.() ?? 'user';
  const dataDir = resolve(env.KOA_BUFFER_DEMO_DIR || join(tmpdir(), `koa-buffer-demo-${uid}`));
  return {
    host: env.HOST || '127.0.0.1',
    port,
    dataDir,
    cacheUrl: `sqlite:${join(dataDir, 'cache.sqlite')}`,
    lockDir: join(dataDir, 'locks'),
    buildLog: join(dataDir, 'report-builds.log'),
    downloadFile: join(dataDir, 'catalogue.csv'),
    workers: 2,
  };
}

/** The base URL for a host and port, IPv6 hosts in brackets. */
export function baseUrl(host: string, port: number): string {
  return `http://${host.includes(':') ? `[${host}]` : host}:${port}`;
}
