import { describe, expect, it } from "vitest";
import type { Bench } from "../../testbench/bench.ts";
import { CHANNEL, USERS } from "../../testbench/bench.ts";
import { defaultSha, makeModel } from "../../testbench/hub/index.ts";
import type { SwapDriver } from "../../testbench/swap-driver.ts";
import { useSwapBench } from "../support/swap-bench.ts";

/**
 * Hub revisions that are not the repo's own, and models that run their own Python (issue #12, item 2).
 * `org/name@refs/pr/1` was accepted and planned as `org/name @ ccccccc`; anyone can open a pull request
 * on any public Hub repo, and one that adds `auto_map` got `--trust-remote-code` into the plan. Now a
 * Hub pull request is refused unless hub.allowPullRequests, and remote code needs the org in
 * hub.remoteCodeOrgs.
 */
let bench: Bench;
let swaps: SwapDriver;

const REPO = "sim-org/hub-pr";
const PR_SHA = "c".repeat(40);

useSwapBench(
  {
    hosts: [{ name: "gpu-1", gpus: "8x-rtx-pro-6000-blackwell", serving: { preset: "qwen3-fp8-dense" } }],
    startBot: true,
  },
  (b, s) => {
    bench = b;
    swaps = s;
    bench.hub.addModel(
      makeModel("llama-bf16-small", {
        id: REPO,
        gated: false,
        revisions: { main: defaultSha(REPO), "refs/pr/1": PR_SHA },
      }),
    );
    bench.hub.addModel(makeModel("kimi-k2-int4"));
  },
);

describe("a Hub revision that is not the repo's own", () => {
  it("a pull request (refs/pr/N) is refused before anything is queued, saying why and how an admin allows it", async () => {
    const ack = await bench.slack.command(USERS.alice, `swap ${REPO}@refs/pr/1 --host gpu-1 --dry-run`, {
      channel: CHANNEL,
    });
    const text = ack.ackResponse?.text ?? "";
    expect(text).toBe(
      `✋ Cannot swap: ${REPO}@refs/pr/1 is Hub pull request #1, not the repo's own: anyone can open one on any public repo, so modelswap serves only its branches, tags and commits (an admin may set hub.allowPullRequests: true).`,
    );
    expect(bench.hub.requests().filter((r) => r.path.includes(REPO))).toEqual([]);
  }, 60_000);
});

describe("a model that runs its own Python (config.json auto_map)", () => {
  it("is refused unless its org is trusted in hub.remoteCodeOrgs; the plan says so at the top", async () => {
    const card = await swaps.request("moonshotai/Kimi-K2-Thinking --dry-run", "gpu-1");
    const plan = await swaps.dryRunPlan(card.ts);
    const blocks = plan.blocks as { type: string; text?: { text: string } }[];
    const top = blocks
      .slice(0, 3)
      .map((b) => b.text?.text ?? "")
      .join("\n");
    expect(top).toContain(
      ":warning: *Runs Python from the model repo* (config.json auto_map → --trust-remote-code)",
    );
    expect(top).toContain("*Refused*");
    const all = JSON.stringify(plan.blocks);
    expect(all).toContain(
      "✗ *remote-code*: runs Python from the model repo (config.json auto_map needs --trust-remote-code), and moonshotai is not in hub.remoteCodeOrgs",
    );
    expect(all).toContain(
      "if you trust moonshotai to run code on the host, an admin adds it to hub.remoteCodeOrgs",
    );
  }, 60_000);
});
