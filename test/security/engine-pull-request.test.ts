import { createHash } from "node:crypto";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { Bench } from "../../testbench/bench.ts";
import { addSimModel, type SwapDriver, unitOf } from "../../testbench/swap-driver.ts";
import { until } from "../../testbench/until.ts";
import { useSwapBench } from "../support/swap-bench.ts";

/**
 * An engine pull request, on a deployment whose admin set engine.unlistedRefs: build-after-approval
 * (issue #12, item 1): the plan says so in its first lines, and none of its code is on the host, let
 * alone run, until an approver has approved that plan. Before, the build fetched, installed and ran it
 * as soon as the plan was posted.
 */
let bench: Bench;
let swaps: SwapDriver;

const PR = "refs/pull/7/head";

useSwapBench(
  {
    swaps: { healthTimeoutSeconds: 30 },
    hosts: [{ name: "gpu-1", gpus: "8x-rtx-pro-6000-blackwell", serving: { preset: "qwen3-fp8-dense" } }],
    engineRefs: [{ ref: PR, version: "0.5.7.dev7", message: "Speed up the scheduler (from a fork)" }],
    enginePolicy: { unlistedRefs: "build-after-approval" },
    startBot: true,
  },
  (b, s) => {
    bench = b;
    swaps = s;
    addSimModel(b, "src-pr");
  },
);

async function unitDigest(): Promise<string> {
  const { sim, unit } = bench.host("gpu-1");
  return createHash("sha256")
    .update(await readFile(join(sim.unitDir, unit)))
    .digest("hex");
}

describe("a pull request, where engine.unlistedRefs allows it after approval", () => {
  it("is fetched and built only once approved, the plan saying so at the top; the unit runs that build", async () => {
    const { sim } = bench.host("gpu-1");
    const unitBefore = await unitDigest();
    const engineBefore = sim.installedEngine();
    const card = await swaps.request(`sim-org/src-pr --engine-ref ${PR}`, "gpu-1");
    const swapId = swaps.swapId(card.ts);
    const plan = await swaps.plan(card.ts);
    const blocks = plan.blocks as { type: string; text?: { text: string } }[];
    const top = blocks
      .slice(0, 3)
      .map((b) => b.text?.text ?? "")
      .join("\n");
    const prCommit = bench.upstream.commits[PR]!;
    expect(top).toContain(
      `:warning: *Engine: pull request #7* of ${bench.upstream.url} (\`${PR}\` at \`${prCommit.slice(0, 7)}\`): anyone's code, fetched and built only after approval`,
    );
    expect(top).toContain("the engine build starts only after approval");
    // and the card, in its one line of what runs
    const source = `:warning: engine: pull request #7 (${PR}) at ${prCommit.slice(0, 7)} of ${bench.upstream.url}`;
    await until(() => JSON.stringify(swaps.card(card.ts).blocks).includes(source) || undefined, {
      what: "the card naming the engine source",
    });

    // the download runs; the build does not, however long the approval takes
    await swaps.untilRecord(swapId, (r) => r.stages.download.state === "done", { what: "the download" });
    const waiting = await swaps.record(swapId);
    expect(waiting?.tasks.build).toBeUndefined();
    expect(waiting?.stages.build).toMatchObject({
      state: "pending",
      detail: expect.stringMatching(/after approval/),
    });
    // not even fetched: no build directory, no build task
    const buildDir = waiting!.plan!.engine!.buildDir;
    expect(buildDir).toContain(prCommit.slice(0, 12));
    expect((await sim.exec(`ls -d ${buildDir}* 2>/dev/null | wc -l`)).stdout.trim()).toBe("0");
    expect(await unitDigest()).toBe(unitBefore);

    await swaps.approve(card.ts);
    await swaps.outcome(card.ts, /Swapped/, 120_000);
    const record = await swaps.record(swapId);
    expect(record?.engine).toEqual({ commit: prCommit, version: "0.5.7.dev7" });
    const unit = await readFile(join(sim.unitDir, unitOf(record)), "utf8");
    expect(unit).toContain(`Environment=PYTHONPATH=${record?.plan?.engine?.buildDir}/python`);
    expect(unit).toContain("# Engine: pull request #7");
    // the old unit's file and the engine it ran are as they were: a rollback finds them
    expect(await unitDigest()).toBe(unitBefore);
    expect(sim.installedEngine()).toEqual(engineBefore);
  }, 180_000);
});
