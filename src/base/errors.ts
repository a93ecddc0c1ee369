/**
 * Errors koa-buffer throws. Option problems are found once, when `buffer()`,
 * `bufferSection()` or a lock constructor runs (validated once, at the edge), and carry the
 * catalog key so code can switch on it.
 */
import { builtinMessages, type MessageArgs, type MessageKey, type Messages } from './messages.ts';

/**
 * A bad option. `key` is the message key of the option-validation table
 * (`option_optimise_content`, `unknown_option`, …); `message` starts `koa-buffer: `.
 *
 * @example
 * try { buffer({ optimiseContent: 3 }) } catch (e) { if (e instanceof BufferOptionError) console.log(e.key) }
 */
export class BufferOptionError extends Error {
  /** The catalog key of the problem. */
  readonly key: string;
  /** Always `'KB_OPTION_INVALID'`, for code that switches on `code` like Node's errors. */
  readonly code = 'KB_OPTION_INVALID';

  /**
   * @param key - the catalog key
   * @param args - placeholder values
   * @param messages - the catalog to word it with (the `messages` option)
   */
  constructor(key: MessageKey | (string & {}), args: MessageArgs = {}, messages: Messages = builtinMessages) {
    super(`koa-buffer: ${messages.text(key, args)}`);
    this.key = key;
    Error.captureStackTrace?.(this, BufferOptionError);
  }
}
Object.defineProperty(BufferOptionError.prototype, 'name', {
  value: 'BufferOptionError',
  enumerable: false,
  writable: true,
  configurable: true,
});
