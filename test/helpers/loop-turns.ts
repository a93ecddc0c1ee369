/**
 * Counts turns of the event loop until stopped, one `setImmediate` at a
 * time: a call that holds the loop from start to end sees none. Tests of
 * work moved off the loop assert on the count, never on a clock.
 */
export function loopTurns(): { count: () => number; stop: () => void } {
  let count = 0;
  let running = true;
  const spin = (): void => {
    count++;
    if (running) setImmediate(spin);
  };
  setImmediate(spin);
  return { count: () => count, stop: () => (running = false) };
}
