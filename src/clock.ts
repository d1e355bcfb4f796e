import { shuttingDown } from "./errors.ts";

/**
 * Time, as the pipeline and the monitor see it: injected, so a test can move it instead of sleeping.
 * `sleep` ends early, with SHUTTING_DOWN, when the signal is aborted (the process is stopping).
 */
export interface Clock {
  now(): number;
  sleep(ms: number, signal?: AbortSignal): Promise<void>;
}

export const systemClock: Clock = {
  now: () => Date.now(),
  sleep: (ms, signal) => abortableSleep(ms, signal),
};

/** The current time of a clock as an ISO string (what records store). */
export function isoNow(clock: Clock): string {
  return new Date(clock.now()).toISOString();
}

async function abortableSleep(ms: number, signal: AbortSignal | undefined): Promise<void> {
  if (signal?.aborted) throw shuttingDown();
  await new Promise<void>((resolve) => {
    const timer = setTimeout(done, Math.max(0, ms));
    function done() {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    }
    signal?.addEventListener("abort", done, { once: true });
  });
  if (signal?.aborted) throw shuttingDown();
}
