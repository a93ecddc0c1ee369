/**
 * Checks the lock backends share: the `messages` option, the key and the
 * ttl. Keys and ttls come back as catalog messages (the protocol returns
 * failures), options throw (they are found once, in the constructor).
 */
import { shownValue } from '../base/describe.ts';
import { BufferOptionError } from '../base/errors.ts';
import { Messages, builtinMessages, isMessageOverrides } from '../base/messages.ts';

/** The `messages` option of a backend: a {@link Messages}, an overrides object, or nothing. */
export type MessagesOption = Messages | Record<string, unknown> | undefined | null;

/**
 * The catalog a backend words its results with.
 * @throws BufferOptionError `option_messages` when `value` is neither a Messages nor an overrides object
 */
export function messagesFrom(value: MessagesOption): Messages {
  if (value === undefined || value === null) return builtinMessages;
  if (value instanceof Messages) return value;
  if (isMessageOverrides(value)) return new Messages(value);
  throw new BufferOptionError('option_messages', { name: 'messages', value: shownValue(value) });
}

/** The catalog message for a key that is not a string, or undefined for a good key. */
export function keyProblem(key: unknown, messages: Messages): string | undefined {
  if (typeof key === 'string') return undefined;
  if (key === undefined || key === null) return messages.text('lock_key_undefined');
  return messages.text('lock_key_invalid', { type: typeof key });
}

/** True for a ttl a backend can use: a finite number of seconds above 0. */
export function isTtl(value: unknown): value is number {
  return typeof value === 'number' && Number.isFinite(value) && value > 0;
}
