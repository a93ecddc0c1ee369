/**
 * The debug lines of the pipeline (skipped and why, coding chosen, 304),
 * worded by the catalog. Building a line costs a catalog lookup and a string,
 * so nothing is built when the logger would drop debug lines anyway.
 */
import { defaultLogger, type Logger } from './logger.ts';
import type { MessageArgs, MessageKey, Messages } from './messages.ts';
import { Stats } from './stats.ts';

const defaultVerbose = process.env.KOA_BUFFER_DEBUG === '1';

/** A logger with the catalog it words its lines with. */
export class DecisionLog {
  readonly logger: Logger;
  readonly messages: Messages;
  /** What the middleware has done since it started: every part that logs also counts here. */
  readonly stats = new Stats();

  constructor(logger: Logger, messages: Messages) {
    this.logger = logger;
    this.messages = messages;
  }

  /** False when debug lines would be dropped: the quiet built-in logger, or a pino logger above debug. */
  get debugEnabled(): boolean {
    if (this.logger === defaultLogger) return defaultVerbose;
    const levelCheck = (this.logger as { isLevelEnabled?: (level: string) => boolean }).isLevelEnabled;
    return typeof levelCheck === 'function' ? levelCheck.call(this.logger, 'debug') : true;
  }

  /** Logs a debug line if anyone listens. */
  debug(key: MessageKey, args?: MessageArgs): void {
    if (this.debugEnabled) this.logger.debug(this.messages.text(key, args));
  }

  /** Logs an error line. */
  error(key: MessageKey, args?: MessageArgs): void {
    this.logger.error(this.messages.text(key, args));
  }
}
