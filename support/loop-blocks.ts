/**
 * The event loop's own blocks, measured from inside the process: over a
 * window, the longest time the loop spent between two consecutive turns of
 * a 1 ms timer that was its own work, neither the timer's sleep nor time the
 * OS gave the CPU to other threads or processes, beside the event-loop
 * delay's max (perf_hooks).
 *
 * Per interval the block is the smaller of the main thread's CPU time and
 * the wall time less its wait for a CPU, both from the kernel's per-thread
 * counters (/proc/self/task/PID/schedstat). Why both: the kernel brings the
 * CPU counter up to date only when the thread sleeps or at a scheduler tick
 * (4 ms here), so a loop kept busy reads 4 ms of CPU in a 1 ms interval;
 * the wall time of an interval also holds the waits the OS imposes. A block
 * of the loop's own counts in both
 * (docs/decisions/0034-upgrade-load-test-measures-loop-blocks.md). Used by the upgrade load test and
 * the upgrade latency bench.
 */
import { existsSync, readFileSync } from 'node:fs';
import { monitorEventLoopDelay } from 'node:perf_hooks';

const schedstat = `/proc/self/task/${process.pid}/schedstat`;

/** False where the kernel does not give per-thread scheduler counters (not Linux): blocks read 0. */
export const hasSchedstat = existsSync(schedstat);

/** The main thread's CPU time and its time spent waiting for a CPU, in ms; zeros without schedstat. */
function mainThreadTimes(): { cpu: number; waited: number; at: number } {
  const at = performance.now();
  if (!hasSchedstat) return { cpu: 0, waited: 0, at };
  const [cpu, waited] = readFileSync(schedstat, 'utf8').split(' ');
  return { cpu: Number(cpu) / 1e6, waited: Number(waited) / 1e6, at };
}

/** What a window saw, in ms. */
export interface LoopWindow {
  /** The event-loop delay's max. */
  max: number;
  /** The loop's longest own block (0 without schedstat). */
  busy: number;
}

/** Watches the event loop from {@link start} to {@link stop}. */
export class LoopBlocks {
  #delay = monitorEventLoopDelay({ resolution: 1 });
  #running = false;
  #longest = 0;
  #last = mainThreadTimes();

  start(): void {
    this.#delay.reset();
    this.#delay.enable();
    this.#longest = 0;
    this.#last = mainThreadTimes();
    this.#running = true;
    setTimeout(this.#tick, 1);
  }

  stop(): LoopWindow {
    this.#running = false;
    this.#delay.disable();
    return { max: this.#delay.max / 1e6, busy: hasSchedstat ? this.#longest : 0 };
  }

  #tick = (): void => {
    const now = mainThreadTimes();
    const last = this.#last;
    this.#longest = Math.max(
      this.#longest,
      Math.min(now.cpu - last.cpu, now.at - last.at - (now.waited - last.waited)),
    );
    this.#last = now;
    if (this.#running) setTimeout(this.#tick, 1);
  };
}

/**
 * The server-process commands a bench driver sends around a load run:
 * `watch-start` begins a window, `watch-stop` ends it and answers the
 * longest block and the busy share (NaN without schedstat).
 */
export function loopWatchCommands(): Record<string, () => Record<string, number>> {
  const watch = new LoopBlocks();
  return {
    'watch-start': () => {
      watch.start();
      return { ok: 1 };
    },
    'watch-stop': () => {
      const seen = watch.stop();
      return { max: seen.max, busy: hasSchedstat ? seen.busy : Number.NaN };
    },
  };
}
