import { expect, it } from "vitest";
import { createLogger } from "../../src/log.ts";
import { STALL_WARN_MS, watchEventLoop } from "../../src/process/event-loop-watch.ts";

/** A blocked event loop is said once, with its code and how long it was blocked; a free one says nothing. */
it("warns EVENT_LOOP_STALLED when the loop was blocked for a second or more, and only then", async () => {
  const lines: Record<string, unknown>[] = [];
  const log = createLogger({ destination: { write: (l: string) => lines.push(JSON.parse(l)) } });
  const stop = watchEventLoop(log);
  try {
    await new Promise((resolve) => setTimeout(resolve, 5200)); // a first look with nothing blocked
    expect(lines.filter((l) => l.code === "EVENT_LOOP_STALLED")).toEqual([]);
    const until = Date.now() + STALL_WARN_MS + 300;
    while (Date.now() < until) {
      // busy: nothing else runs, as a synchronous render or a huge JSON.parse would do
    }
    await new Promise((resolve) => setTimeout(resolve, 5200));
    const stalls = lines.filter((l) => l.code === "EVENT_LOOP_STALLED");
    expect(stalls).toHaveLength(1);
    expect(stalls[0]?.maxMs).toBeGreaterThanOrEqual(STALL_WARN_MS);
    expect(stalls[0]?.msg).toMatch(/^the event loop was blocked for \d+ ms in the last 5 s/);
  } finally {
    stop();
  }
}, 20_000);
