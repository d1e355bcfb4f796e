import { describe, expect, it } from "vitest";
import type { Bench } from "../../testbench/bench.ts";
import { addSimModel, type SwapDriver } from "../../testbench/swap-driver.ts";
import { useSwapBench } from "../support/swap-bench.ts";

/**
 * The build checks the new engine out in place before anyone approves: a swap that ends before its
 * switch puts the engine back, so the unit serving now does not pick up an engine nobody approved at its
 * next restart — or says plainly why it could not.
 */
let bench: Bench;
let swaps: SwapDriver;

useSwapBench(
  {
    swaps: { healthTimeoutSeconds: 30 },
    hosts: [{ name: "gpu-1", gpus: "8x-rtx-pro-6000-blackwell", serving: { preset: "qwen3-fp8-dense" } }],
    startBot: true,
  },
  (b, s) => {
    bench = b;
    swaps = s;
    for (const name of ["restore-first", "restore-second"]) addSimModel(b, name);
  },
);

async function head(): Promise<string> {
  const sim = bench.host("gpu-1").sim;
  return (await sim.exec(`git -C ${sim.engineSourceDir} rev-parse HEAD`)).stdout.trim();
}

async function rejectedAfterBuild(model: string, engineRef?: string): Promise<string> {
  const card = await swaps.request(`${model}${engineRef ? ` --engine-ref ${engineRef}` : ""}`, "gpu-1");
  const swapId = swaps.swapId(card.ts);
  await swaps.untilRecord(swapId, (r) => r.stages.build.state === "done", { what: "the build" });
  await swaps.reject(card.ts);
  await swaps.outcome(card.ts, /Rejected/);
  const final = await swaps.finalLine(card.ts, 10_000);
  expect(final.text).toMatch(/^🚫 Swap to/);
  return final.text;
}

describe("a swap that ends before its switch", () => {
  it("on a host whose engine was no git checkout: says the new engine stays and the unit runs it at its next restart", async () => {
    const thread = await rejectedAfterBuild("sim-org/restore-first");
    expect(thread).toMatch(/no git checkout before this swap, so the old engine cannot be put back/);
    expect(await head()).toBe(bench.upstream.commits.main);
  }, 90_000);

  it("puts the engine back at the commit it found, and the editable install with it", async () => {
    const sim = bench.host("gpu-1").sim;
    const before = await head(); // main, checked out by the first swap's build
    expect(sim.installedEngine()?.version).toBe("0.5.6.post1");
    const thread = await rejectedAfterBuild("sim-org/restore-second", "v0.5.2");
    expect(thread).toMatch(
      new RegExp(`the engine is back at commit ${before.slice(0, 7)}, as before the swap`),
    );
    expect(await head()).toBe(before);
    expect(sim.installedEngine()?.version).toBe("0.5.6.post1");
  }, 90_000);
});
