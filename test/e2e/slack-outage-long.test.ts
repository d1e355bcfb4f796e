import { beforeAll, describe, expect, it } from "vitest";
import type { Bench } from "../../testbench/bench.ts";
import { addSimModel, type SwapDriver } from "../../testbench/swap-driver.ts";
import { expectRolledBackOnTheHost, expectRolledBackStory } from "../support/rolled-back.ts";
import { useSwapBench } from "../support/swap-bench.ts";
import { untilThreadComplete } from "../support/thread-story.ts";

/**
 * Slack down for two minutes (chat.update and chat.postMessage answer 503), from the switch on: every
 * stage from the switch to the end runs during the outage — for a swap that succeeds, and side by side
 * for one whose new model answers NaN and is rolled back. No stage and no rollback waits for Slack — each
 * swap is over, as the host says, long before Slack is back — and once it is, the cards and the threads
 * catch up: the whole story, in order, each milestone once.
 */
const OUTAGE_MS = 120_000;
let bench: Bench;
let swaps: SwapDriver;
let nanModel: string;
useSwapBench(
  {
    hosts: ["gpu-1", "gpu-nan"].map((name) => ({
      name,
      gpus: "8x-rtx-pro-6000-blackwell" as const,
      serving: { preset: "qwen3-fp8-dense" as const },
    })),
    startBot: true,
  },
  (b, s) => {
    bench = b;
    swaps = s;
  },
);

beforeAll(async () => {
  nanModel = addSimModel(bench, "outage-nan");
  // only the new model answers NaN: the old one serves again once the rollback starts it
  await bench.host("gpu-nan").sim.setFault("sglang", { models: { "outage-nan": { mode: "nan" } } });
});

/**
 * A swap of `model` on `host`, approved and held at the switch's `systemctl enable --now`; Slack goes
 * down for two minutes, then the switch goes on. Resolves with the swap's id and when the outage ends.
 * (Each swap opens its own window; the two overlap, and a call is refused while any is open.)
 */
async function swapIntoTheOutage(model: string, host: string): Promise<{ id: string; outageEnds: number }> {
  const { sim } = bench.host(host);
  await sim.hold("systemctl", " enable --now");
  const card = await swaps.request(model, host);
  const id = swaps.swapId(card.ts);
  await swaps.approve(card.ts);
  await sim.waitHeld("systemctl");
  const outageEnds = Date.now() + OUTAGE_MS;
  bench.slack.failFor(["chat.update", "chat.postMessage"], "service_unavailable", {
    ms: OUTAGE_MS,
    status: 503,
  });
  await sim.release("systemctl");
  return { id, outageEnds };
}

describe.concurrent("a two-minute Slack outage from the switch on", () => {
  // side by side: two hosts, two swaps, in the same outage
  it(
    "the swap ends as the host says while Slack is down; the thread catches up when it is back",
    async () => {
      const model = addSimModel(bench, "outage-proof");
      const { sim, unit } = bench.host("gpu-1");
      const { id, outageEnds } = await swapIntoTheOutage(model, "gpu-1");

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

  it(
    "a swap whose new model answers NaN is rolled back while Slack is down; its thread catches up when it is back",
    async () => {
      const { id, outageEnds } = await swapIntoTheOutage(nanModel, "gpu-nan");

      // the host decides, not Slack: switched, healthy, insane, rolled back, the old unit healthy again and
      // the host free, all during the outage
      await expectRolledBackOnTheHost(bench, swaps, "gpu-nan", id, { timeoutMs: OUTAGE_MS - 30_000 });
      expect(Date.now()).toBeLessThan(outageEnds);
      // Slack was asked, and refused, meanwhile. Which swap's report the reporter tries while Slack is
      // down is its own pacing (it backs off up to 30 s, and two swaps share the channel): what this test
      // holds it to is the catch-up below, for this swap's card and thread.
      expect(bench.slack.calls().some((c) => c.status === 503)).toBe(true);

      // Slack is back: the card reads Rolled back, and the thread tells the failure, the rollback and the end
      await expectRolledBackStory(bench, swaps, id, "sanity", { timeoutMs: OUTAGE_MS + 90_000 });
      expect(Date.now()).toBeGreaterThanOrEqual(outageEnds);
    },
    5 * 60_000,
  );
});
