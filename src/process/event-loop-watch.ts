import { monitorEventLoopDelay } from "node:perf_hooks";
import type { Logger } from "../log.ts";

/** A stall this long is worth a line: Slack wants an answer to every request within 3 s. */
export const STALL_WARN_MS = 1000;
const LOOK_EVERY_MS = 5000;

/**
 * Watches this process's event loop (node:perf_hooks' delay histogram, 20 ms resolution) and says, once
 * per look, when it was blocked for a second or more: a process that cannot run its callbacks cannot
 * answer Slack within its 3 s either (a slash command's ack, an Events API delivery), so a stall is the
 * first thing to look at when Slack reports timeouts. Returns a stop function.
 */
export function watchEventLoop(log: Logger): () => void {
  const delay = monitorEventLoopDelay({ resolution: 20 });
  delay.enable();
  const timer = setInterval(() => {
    const maxMs = delay.max / 1e6;
    if (maxMs >= STALL_WARN_MS) {
      log.warn(
        {
          code: "EVENT_LOOP_STALLED",
          maxMs: Math.round(maxMs),
          p99Ms: Math.round(delay.percentile(99) / 1e6),
        },
        `the event loop was blocked for ${Math.round(maxMs)} ms in the last ${LOOK_EVERY_MS / 1000} s: Slack's requests wait that long for an answer (it gives up after 3 s). Fix: see docs/operations.md (EVENT_LOOP_STALLED)`,
      );
    }
    delay.reset();
  }, LOOK_EVERY_MS);
  timer.unref();
  return () => {
    clearInterval(timer);
    delay.disable();
  };
}
