import { describe, expect, it } from "vitest";
import type { Bench } from "../../testbench/bench.ts";
import { defaultSha, makeModel } from "../../testbench/hub/index.ts";
import type { SwapDriver } from "../../testbench/swap-driver.ts";
import { useSwapBench } from "../support/swap-bench.ts";

/**
 * Where an admin allows Hub pull requests (hub.allowPullRequests) and trusts an org's remote code
 * (hub.remoteCodeOrgs), issue #12 item 2: the plan's first line says "Hub pull request #N, not the
 * repo's main", and a pull request's Python is still never run, whoever the org.
 */
let bench: Bench;
let swaps: SwapDriver;

const REPO = "sim-org/hub-pr";
const PR_SHA = "c".repeat(40);
const KIMI = "moonshotai/Kimi-K2-Thinking";

useSwapBench(
  {
    hosts: [{ name: "gpu-1", gpus: "8x-rtx-pro-6000-blackwell", serving: { preset: "qwen3-fp8-dense" } }],
    hubPolicy: { allowPullRequests: true, remoteCodeOrgs: ["moonshotai"] },
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
    bench.hub.addModel(
      makeModel("kimi-k2-int4", { revisions: { main: defaultSha(KIMI), "refs/pr/3": "d".repeat(40) } }),
    );
  },
);

function topOf(blocks: unknown): string {
  return (blocks as { text?: { text: string } }[])
    .slice(0, 3)
    .map((b) => b.text?.text ?? "")
    .join("\n");
}

describe("a Hub pull request the config allows", () => {
  it("is planned with the plan's first lines saying it is a pull request, not the repo's main", async () => {
    const card = await swaps.request(`${REPO}@refs/pr/1 --dry-run`, "gpu-1");
    const plan = await swaps.dryRunPlan(card.ts);
    expect(topOf(plan.blocks)).toContain(
      `:warning: *Model: Hub pull request #1, not the repo's main*: \`${REPO}\` @ \`refs/pr/1\` (\`ccccccc\`); anyone can open one`,
    );
  }, 60_000);

  it("never runs a pull request's Python, even from a trusted org; the org's own main may", async () => {
    const pr = await swaps.dryRunPlan((await swaps.request(`${KIMI}@refs/pr/3 --dry-run`, "gpu-1")).ts);
    expect(JSON.stringify(pr.blocks)).toContain(
      "✗ *remote-code*: runs Python from the model repo: configuration_deepseek.py and modeling_deepseek.py (config.json auto_map), tokenization_kimi.py (tokenizer_config.json auto_map), and this revision is Hub pull request #3: anyone's code",
    );
    // main's plan passes the check: the plan says what runs; its details say why it may
    const mainTs = (await swaps.request(`${KIMI} --dry-run`, "gpu-1")).ts;
    const main = await swaps.dryRunPlan(mainTs);
    expect(JSON.stringify(main.blocks)).toContain(
      ":warning: *Runs Python from the model repo* (--trust-remote-code): `configuration_deepseek.py` and `modeling_deepseek.py` (config.json auto_map)",
    );
    const details = JSON.stringify((await swaps.planDetails(mainTs)).blocks);
    expect(details).toContain(
      "✓ *remote-code*: runs Python from the model repo: configuration_deepseek.py and modeling_deepseek.py (config.json auto_map), tokenization_kimi.py (tokenizer_config.json auto_map); moonshotai is trusted in hub.remoteCodeOrgs",
    );
    // the pull request's plan never has the flag; main's has it, saying what runs and why it may
    expect(JSON.stringify(pr.blocks)).not.toContain("• `--trust-remote-code`");
    expect(details).toContain(
      "• `--trust-remote-code`: the engine imports the repo's own Python, which it refuses without this flag: configuration_deepseek.py and modeling_deepseek.py (config.json auto_map), tokenization_kimi.py (tokenizer_config.json auto_map); moonshotai is trusted in hub.remoteCodeOrgs",
    );
  }, 90_000);
});
