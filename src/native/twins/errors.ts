/**
 * The twins' side of native/binding/errors.h: how a received value reads in
 * an argument error, and the Node-style `code` on it, word for word as the
 * binding words them, so one test suite checks both implementations.
 */

// How a received value reads in a message, as the binding's `Describe`: written once, in src/base/describe.ts.
export { describeReceived as describe } from '../../base/describe.ts';

/** `error` with a Node-style `code` (ERR_INVALID_ARG_TYPE, ERR_OUT_OF_RANGE, …). */
export function withCode<E extends Error>(error: E, code: string): E & { code: string } {
  return Object.assign(error, { code });
}
