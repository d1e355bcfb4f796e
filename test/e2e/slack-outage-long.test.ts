import { describe, expect, it } from "vitest";
import type { Bench } from "../../testbench/bench.ts";
import { addSimModel, type SwapDriver } from "../../testbench/swap-driver.ts";
import { useSwapBench } from "../support/swap-bench.ts";
import { untilThreadComplete } from "../support/thread-story.ts";

/**
 * Slack down for two minutes (chat.update and chat.postMessage answer 503), from the switch on: every
 * stage from the switch to the end runs during the outage. No stage waits for Slack — the swap is over,
 * as the host says, long before Slack is back — and once it is, the card and the thread catch up: the
 * whole story, in order, each milestone once.
 */
const OUTAGE_MS = 120_000;
let bench: Bench;
let swaps: SwapDriver;
useSwapBench(
  {
    hosts: [{ name: "gpu-1", gpus: "8x-rtx-pro-6000-blackwell", serving: { preset: "qwen3-fp8-dense" } }],
    startBot: true,
  },
  (b, s) => {
    bench = b;
    swaps = s;
  },
);

describe("a two-minute Slack outage from the switch on", () => {
  it(
    "the swap ends as the host says while Slack is down; the thread catches up when it is back",
    async () => {
      const model = addSimModel(bench, "outage-proof");
      const { sim, unit } = bench.host("gpu-1");
      await sim.hold("systemctl", " enable --now");
      const card = await swaps.request(model, "gpu-1");
      const id = swaps.swapId(card.ts);
      await swaps.approve(card.ts);
      await sim.waitHeld("systemctl");
      const outageEnds = Date.now() + OUTAGE_MS;
      bench.slack.failFor(["chat.update", "chat.postMessage"], "service_unavailable", {
        ms: OUTAGE_MS,
        status: 503,
      });
      await sim.release("systemctl");

      // the host decides, not Slack: switched, healthy, sane, benchmarked and finished, all during the outage
      const record = await swaps.untilRecord(id, (r) => r.outcome !== undefined, {
        what: "the swap's outcome",
        timeoutMs: OUTAGE_MS - 10_000,
      });
      expect(Date.now()).toBeLessThan(outageEnds);
      expect(record.outcome, record.reason).toBe("succeeded");
      expect(await sim.unitState(record.plan!.unitName)).toMatchObject({
        activeState: "active",
        unitFileState: "enabled",
      });
      expect(await sim.unitState(unit)).toMatchObject({ activeState: "inactive" });
      expect(await (await swaps.store()).locks.hostHolder("gpu-1")).toBeUndefined();
      // Slack was really asked, and refused, meanwhile
      const refused = bench.slack.calls().filter((c) => c.status === 503).length;
      expect(refused).toBeGreaterThan(0);

      // Slack is back: the card reads Swapped and the thread has it all (the reporter backs off at most 30 s)
      await untilThreadComplete(bench, swaps, id, { timeoutMs: OUTAGE_MS + 90_000 });
      expect(Date.now()).toBeGreaterThanOrEqual(outageEnds);
    },
    5 * 60_000,
  );
});
