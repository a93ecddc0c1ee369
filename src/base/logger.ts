/**
 * The logger koa-buffer writes to: pino-compatible (`debug`, `info`, `warn`,
 * `error`, each taking a message string). The default writes warnings and
 * errors to stderr and drops debug and info, so a quiet app stays quiet;
 * `KOA_BUFFER_DEBUG=1` lets debug and info through too.
 */
export interface Logger {
  debug(message: string): void;
  info(message: string): void;
  warn(message: string): void;
  error(message: string): void;
}

const verbose = process.env.KOA_BUFFER_DEBUG === '1';

/** The built-in logger. */
export const defaultLogger: Logger = {
  debug: (message) => {
    if (verbose) console.debug(`koa-buffer: ${message}`);
  },
  info: (message) => {
    if (verbose) console.info(`koa-buffer: ${message}`);
  },
  warn: (message) => console.warn(`koa-buffer: ${message}`),
  error: (message) => console.error(`koa-buffer: ${message}`),
};

/** True when `value` has the four logging methods. */
export function isLogger(value: unknown): value is Logger {
  if (value === null || typeof value !== 'object') return false;
  const v = value as Record<string, unknown>;
  return ['debug', 'info', 'warn', 'error'].every((m) => typeof v[m] === 'function');
}
