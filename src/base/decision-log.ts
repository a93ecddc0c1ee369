/**
 * The log lines of one middleware (skipped and why, coding chosen, 304,
 * cache hits and builds, store and lock failures), worded by the catalog,
 * and its stats, which every part that logs also counts in.
 *
 * Lines fit pino: a logger with `child` (pino, bunyan) gets the structured
 * fields first (`event`, the cache `key` with its `url`, `err` with its
 * stack for an Error) and the message second; any other logger gets the
 * message alone, so a custom `(message) => …` logger keeps working. A debug
 * line names the URL beside the cache key, never the key alone. An error that
 * repeats (a store that is down fails every request) is written once a
 * second with the count of those left out, not once a request.
 *
 * Building a debug line costs a catalog lookup and a string, so nothing is
 * built when the logger would drop debug lines anyway.
 */
import { defaultLogger, type Logger } from './logger.ts';
import type { MessageArgs, MessageKey, Messages } from './messages.ts';
import { Stats } from './stats.ts';

const defaultVerbose = process.env.KOA_BUFFER_DEBUG === '1';

/** An error line is written at most once in this many ms per message key; the rest are counted. */
export const repeatWindowMs = 1000;

type Level = 'debug' | 'info' | 'warn' | 'error';

/** A logger that takes structured fields: pino's and bunyan's `(fields, message)`. */
type StructuredLogger = Record<Level, (fields: object, message: string) => void>;

/** A logger with the catalog it words its lines with. */
export class DecisionLog {
  readonly logger: Logger;
  readonly messages: Messages;
  /** What the middleware has done since it started: every part that logs also counts here. */
  readonly stats = new Stats();
  /** True for a logger that takes fields before the message. */
  readonly #structured: boolean;
  /** Per message key, when its last error line was written and how many were left out since. */
  readonly #repeats = new Map<string, { at: number; left: number }>();

  constructor(logger: Logger, messages: Messages) {
    this.logger = logger;
    this.messages = messages;
    this.#structured = typeof (logger as { child?: unknown }).child === 'function';
  }

  /** False when debug lines would be dropped: the quiet built-in logger, or a pino logger above debug. */
  get debugEnabled(): boolean {
    if (this.logger === defaultLogger) return defaultVerbose;
    const levelCheck = (this.logger as { isLevelEnabled?: (level: string) => boolean }).isLevelEnabled;
    return typeof levelCheck === 'function' ? levelCheck.call(this.logger, 'debug') : true;
  }

  /** Logs a debug line if anyone listens. */
  debug(key: MessageKey, args?: MessageArgs): void {
    if (this.debugEnabled) this.#write('debug', key, args, 0);
  }

  /**
   * Logs an error line, unless one with the same message key was written
   * less than {@link repeatWindowMs} ago: then it is counted, and the next
   * line written says how many were left out. `args.error` may be the Error
   * itself: the message shows its text, the structured fields keep it whole.
   */
  error(key: MessageKey, args?: MessageArgs): void {
    const now = Date.now();
    const last = this.#repeats.get(key);
    if (last !== undefined && now - last.at < repeatWindowMs) {
      last.left++;
      return;
    }
    // One entry per message key: the catalog's keys bound the map.
    this.#repeats.set(key, { at: now, left: 0 });
    this.#write('error', key, args, last?.left ?? 0);
  }

  #write(level: Level, key: MessageKey, args: MessageArgs | undefined, left: number): void {
    const error = args?.error;
    const cause = error instanceof Error ? error : undefined;
    let textArgs = cause === undefined ? args : { ...args, error: cause.message };
    // A debug line's key alone is an MD5 nobody can read: the URL goes beside it (error lines keep
    // their wording, which alerting rules match; their structured fields carry the URL).
    if (level === 'debug' && textArgs?.url !== undefined && textArgs.key !== undefined)
      textArgs = { ...textArgs, key: `${String(textArgs.url)} (key ${String(textArgs.key)})` };
    let text = this.messages.text(key, textArgs);
    if (left > 0) text += ` (${left} more like it left out in the last ${repeatWindowMs / 1000} s)`;
    if (!this.#structured) return this.logger[level](text);
    const fields: Record<string, unknown> = { event: key, ...args };
    if (cause !== undefined) {
      delete fields.error;
      fields.err = cause;
    }
    if (left > 0) fields.repeated = left;
    (this.logger as unknown as StructuredLogger)[level](fields, text);
  }
}
