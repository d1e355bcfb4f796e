import { describe, expect, it } from "vitest";
import type { Bench } from "../../testbench/bench.ts";
import { CHANNEL } from "../../testbench/bench.ts";
import { makeModel } from "../../testbench/hub/index.ts";
import type { SwapDriver } from "../../testbench/swap-driver.ts";
import { useSwapBench } from "../support/swap-bench.ts";

/**
 * What a team member reads when a swap fails (issue #13, "one reason, said once"): a NaN rollback used
 * to repeat its 300-character reason six times (card line, *Why:*, three replies, the broadcast), with
 * doubled words ("Sanity check failed: sanity failed: …") and no code or fix. Now the thread tells it in
 * full once, the card and the other lines say it in one line, and the end says what to try.
 */
let bench: Bench;
let swaps: SwapDriver;
const QWEN = "nvidia/Qwen3.5-397B-A17B-NVFP4";

useSwapBench(
  {
    hosts: [{ name: "bw-nan", gpus: "8x-rtx-pro-6000-blackwell", serving: { preset: "qwen3-fp8-dense" } }],
    startBot: true,
  },
  (b, s) => {
    bench = b;
    swaps = s;
    b.hub.addModel(makeModel("qwen3.5-moe-nvfp4"));
  },
);

describe("a swap rolled back for NaN output", () => {
  it("tells each prompt's answer once, the reason in one line elsewhere, and ends with the code and what to try", async () => {
    await bench.host("bw-nan").sim.setFault("sglang", { models: { "Qwen3.5-397B": { mode: "nan" } } });
    const card = await swaps.request(QWEN, "bw-nan");
    const plan = await swaps.plan(card.ts);
    await swaps.approve(card.ts);
    await swaps.outcome(card.ts, /Rolled back/);
    const final = await swaps.finalLine(card.ts);

    const texts = [
      JSON.stringify(swaps.card(card.ts).blocks),
      ...bench.slack.thread(CHANNEL, card.ts).map((m) => JSON.stringify(m.blocks ?? m.text)),
    ];
    // each prompt's answer (its logprob detail) is told in one message only
    expect(texts.filter((t) => t.includes("32 of 32 logprobs are null"))).toHaveLength(1);
    for (const doubled of [
      /sanity failed: sanity failed/i,
      /Sanity check failed: sanity failed/,
      /sanity: sanity/,
    ]) {
      expect(texts.filter((t) => doubled.test(t))).toEqual([]);
    }
    // the card says the reason once: in its Why line, with the code, not again on the stage line
    const cardText = texts[0]!;
    expect(cardText.split("4/4 prompts failed").length - 1).toBe(1);
    expect(cardText).toContain("(SANITY_FAILED)");
    // the end: reason, code, the old service back as a last check of the host saw it, and what to try, naming what was applied
    expect(final.text).toMatch(
      /^↩️ \*Swap to .* rolled back\*: 4\/4 prompts failed \(4 NaN\/null logprobs\): NaN logits .*\(SANITY_FAILED\)\. .* is healthy again\. 🔎 Checked at \d\d:\d\d:\d\d UTC: `sglang-bw-nan\.service` active \(MainPID \d+\); \/health_generate and a sanity prompt answered on port \d+\. \*Fix:\* the plan applied .*--moe-runner-backend flashinfer_cutlass --fp4-gemm-backend flashinfer_cudnn \(recipe modelopt-fp4, recipe nvfp4-sm120-sglang-moe, recipe nvfp4-sm120-sglang\) on engine branch main at /,
    );
    expect(final.text).toContain("--engine-ref");
    // once decided, the plan no longer offers the bot's own ✅/❌
    const reactions = bench.slack.message(CHANNEL, plan.ts)?.reactions ?? [];
    expect(reactions.flatMap((r) => r.users)).not.toContain(bench.slack.workspace.botUserId);
  }, 120_000);
});
