import { describe, expect, it } from "vitest";
import type { Bench } from "../../testbench/bench.ts";
import { CHANNEL, USERS } from "../../testbench/bench.ts";
import { makeModel } from "../../testbench/hub/index.ts";
import type { SwapDriver } from "../../testbench/swap-driver.ts";
import { until } from "../../testbench/until.ts";
import { useSwapBench } from "../support/swap-bench.ts";

/**
 * A decision counts only on the plan it was given on (issue #12, item 4). When the engine build spells a
 * flag differently, the plan changes and is put up again; a ✅ on the replaced plan's message used to be
 * recorded under the new plan's hash, and the switch ran on a plan nobody had approved. Now it gets a
 * private "this plan was replaced" and counts for nothing; only the current plan's message decides.
 */
const QWEN = "nvidia/Qwen3.5-397B-A17B-NVFP4";

let bench: Bench;
let swaps: SwapDriver;
useSwapBench(
  {
    hosts: [{ name: "gpu-1", gpus: "8x-rtx-pro-6000-blackwell", serving: { preset: "qwen3-fp8-dense" } }],
    // an engine branch that spells the FP4 GEMM backend the older way: the build changes the plan
    engineRefs: [
      {
        ref: "old-spelling",
        version: "0.5.4",
        omitFlags: ["--fp4-gemm-backend"],
        addFlags: ["--fp4-gemm-runner-backend"],
        message: "server_args: --fp4-gemm-runner-backend",
      },
    ],
    startBot: true,
  },
  (b, s) => {
    bench = b;
    swaps = s;
  },
);

describe("a ✅ on a plan that was replaced", () => {
  it("is answered privately and counts for nothing; the current plan's ✅ decides", async () => {
    bench.hub.addModel(makeModel("qwen3.5-moe-nvfp4"));
    const card = await swaps.request(`${QWEN} --engine-ref old-spelling`, "gpu-1");
    const id = swaps.swapId(card.ts);
    // the first plan, then the build's: two plan messages, the first marked replaced
    const plans = await until(
      () => (swaps.plansOf(card.ts).length === 2 ? swaps.plansOf(card.ts) : undefined),
      {
        what: "the plan put up again after the engine build",
        timeoutMs: 60_000,
      },
    );
    const [old, current] = plans as [(typeof plans)[0], (typeof plans)[0]];
    await until(() => /replaced/.test(bench.slack.message(CHANNEL, old.ts)?.text ?? ""), {
      what: "the first plan marked replaced",
    });
    expect(JSON.stringify(bench.slack.message(CHANNEL, current.ts)?.blocks)).toContain(
      "--fp4-gemm-runner-backend",
    );

    await bench.slack.react(USERS.bob, CHANNEL, old.ts, "white_check_mark");
    await until(() => swaps.toldAbout(id, USERS.bob).find((t) => /was replaced by a newer one/.test(t)), {
      what: "bob told the plan he approved was replaced",
    });
    expect(await swaps.decision(id)).toBeUndefined();
    const waiting = await swaps.record(id);
    expect(waiting).toMatchObject({ step: "prepare" });
    expect(waiting?.switch).toBeUndefined();

    await bench.slack.react(USERS.bob, CHANNEL, current.ts, "white_check_mark");
    expect(await swaps.untilDecided(id)).toMatchObject({ approved: true, by: USERS.bob });
    await swaps.untilRecord(id, (r) => r.switch !== undefined, { what: "the switch of the approved plan" });
  }, 120_000);
});
