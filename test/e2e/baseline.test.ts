import { describe, expect, it } from "vitest";
import type { Bench } from "../../testbench/bench.ts";
import { CHANNEL } from "../../testbench/bench.ts";
import { addSimModel, type SwapDriver } from "../../testbench/swap-driver.ts";
import { until } from "../../testbench/until.ts";
import { useSwapBench } from "../support/swap-bench.ts";

/**
 * A host's first swap still compares (issue #13): "no earlier numbers for this host" would be every
 * team's first swap. With swaps.baseline: probe (the default), the outgoing model's single-stream
 * benchmark is taken before the switch, and the table compares with it and says so.
 */
let bench: Bench;
let swaps: SwapDriver;

useSwapBench(
  {
    swaps: { baseline: "probe" },
    hosts: [{ name: "gpu-1", gpus: "8x-rtx-pro-6000-blackwell", serving: { preset: "qwen3-fp8-dense" } }],
    startBot: true,
  },
  (b, s) => {
    bench = b;
    swaps = s;
    addSimModel(b, "first");
  },
);

describe("the first swap on a host", () => {
  it("compares its benchmark with the outgoing model, measured single-stream before the switch, and says so", async () => {
    const card = await swaps.request("sim-org/first", "gpu-1");
    const id = swaps.swapId(card.ts);
    await swaps.plan(card.ts);
    // the outgoing model is measured before anyone approved: nothing is switched for it
    const measured = await swaps.untilRecord(id, (r) => r.baseline !== undefined, { what: "the baseline" });
    expect(measured.switch).toBeUndefined();
    expect(measured.baseline).toMatchObject({ model: "Qwen/Qwen3-8B-FP8", kind: "probe" });
    expect(measured.baseline?.single?.outputThroughput).toBeGreaterThan(0);
    expect(measured.baseline?.loaded).toBeUndefined();

    await swaps.approve(card.ts);
    await swaps.outcome(card.ts, /Swapped/);
    const table = await until(
      () => bench.slack.thread(CHANNEL, card.ts).find((m) => m.text.startsWith("Benchmark:")),
      { what: "the benchmark table" },
    );
    const text = JSON.stringify(table.blocks);
    expect(text).toContain("⚖️ across models: ▲/▼ compare `Qwen/Qwen3-8B-FP8` then with");
    expect(text).toContain("baseline: the outgoing model's single-stream run just before the switch");
    expect(text).not.toContain("no earlier numbers");
    expect(text).toMatch(/output tok\/s +[\d.]+ +[▲▼±]/);
  }, 120_000);
});
