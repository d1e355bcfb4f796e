import { describe, expect, it } from "vitest";
import type { Bench } from "../../testbench/bench.ts";
import { CHANNEL, USERS } from "../../testbench/bench.ts";
import { defaultSha, makeModel, type SimModel } from "../../testbench/hub/index.ts";
import type { SwapDriver } from "../../testbench/swap-driver.ts";
import { until } from "../../testbench/until.ts";
import { shown } from "../support/shown.ts";
import { useSwapBench } from "../support/swap-bench.ts";

/**
 * Hub revisions that are not the repo's own, and models that run their own Python (issue #12, item 2).
 * `org/name@refs/pr/1` was accepted and planned as `org/name @ ccccccc`; anyone can open a pull request
 * on any public Hub repo, and one that adds `auto_map` got `--trust-remote-code` into the plan. Now a
 * Hub pull request is refused unless hub.allowPullRequests, and remote code needs the org in
 * hub.remoteCodeOrgs. Issue 27 §3: remote code is read from every config the engines read (an auto_map
 * kept only in tokenizer_config.json planned cleanly, with the flag the Kimi K2 recipe added for any
 * repo), and the plan names the files that will run.
 */
let bench: Bench;
let swaps: SwapDriver;

const REPO = "sim-org/hub-pr";
const PR_SHA = "c".repeat(40);
/** Kimi K2 with auto_map dropped from config.json but kept in tokenizer_config.json (issue 27 §3). */
const TOKENIZER_CODE = "sim-org/Kimi-K2-Tokenizer-Code";
/** Kimi K2 with no auto_map anywhere and no .py file: nothing of the repo's runs. */
const NO_CODE = "sim-org/Kimi-K2-No-Code";

/** A copy of a preset as a repo owner may publish it: JSON files edited, files dropped. */
function published(
  model: SimModel,
  edit: Record<string, (json: Record<string, unknown>) => Record<string, unknown>>,
  drop: (path: string) => boolean = () => false,
): SimModel {
  const files = model.files
    .filter((f) => !drop(f.path))
    .map((f) => {
      const change = edit[f.path];
      if (change === undefined) return f;
      const content = `${JSON.stringify(change(JSON.parse(String(f.content))), null, 2)}\n`;
      return { ...f, size: Buffer.byteLength(content), content };
    });
  return { ...model, files };
}

const withoutAutoMap = ({ auto_map: _, ...json }: Record<string, unknown>) => json;

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
    bench.hub.addModel(
      published(makeModel("kimi-k2-int4", { id: TOKENIZER_CODE }), {
        "config.json": withoutAutoMap,
        "tokenizer_config.json": (t) => ({
          ...t,
          tokenizer_class: "TokenizationKimi",
          auto_map: { AutoTokenizer: ["tokenization_kimi.TokenizationKimi", null] },
        }),
      }),
    );
    bench.hub.addModel(
      published(
        makeModel("kimi-k2-int4", { id: NO_CODE }),
        { "config.json": withoutAutoMap, "tokenizer_config.json": withoutAutoMap },
        (path) => path.endsWith(".py"),
      ),
    );
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

describe("a model that runs its own Python (auto_map in its configs)", () => {
  it("is refused unless its org is trusted in hub.remoteCodeOrgs; the plan says so at the top", async () => {
    const card = await swaps.request("moonshotai/Kimi-K2-Thinking --dry-run", "gpu-1");
    const plan = await swaps.dryRunPlan(card.ts);
    const blocks = plan.blocks as { type: string; text?: { text: string } }[];
    const top = blocks
      .slice(0, 3)
      .map((b) => b.text?.text ?? "")
      .join("\n");
    expect(top).toContain(
      ":warning: *Runs Python from the model repo* (--trust-remote-code): `configuration_deepseek.py` and `modeling_deepseek.py` (config.json auto_map), `tokenization_kimi.py` (tokenizer_config.json auto_map)",
    );
    expect(top).toContain("*Refused*");
    const all = JSON.stringify(plan.blocks);
    expect(all).toContain(
      "✗ *remote-code*: runs Python from the model repo: configuration_deepseek.py and modeling_deepseek.py (config.json auto_map), tokenization_kimi.py (tokenizer_config.json auto_map), and moonshotai is not in hub.remoteCodeOrgs",
    );
    expect(all).toContain(
      "if you trust moonshotai to run code on the host, an admin adds it to hub.remoteCodeOrgs",
    );
  }, 60_000);
});

describe("code that only tokenizer_config.json names (issue 27 §3)", () => {
  it("is the repo's Python too: refused for an org not in hub.remoteCodeOrgs, naming the file; nothing is touched", async () => {
    const host = bench.host("gpu-1");
    const callsBefore = (await host.sim.calls()).length;
    const card = await swaps.request(TOKENIZER_CODE, "gpu-1");
    const plan = await until(() => swaps.plansOf(card.ts)[0], { what: "the plan", timeoutMs: 60_000 });
    const text = `${shown(plan)}\n${shown(await swaps.planDetails(card.ts))}`;
    const top = shown({ blocks: (plan.blocks ?? []).slice(0, 3) });
    expect(top).toContain("*Refused*: failing remote-code. Nothing was touched.");
    expect(top).toContain(
      // it names the file that runs and what the repo holds beside it, which that file may import
      ":warning: *Runs Python from the model repo* (--trust-remote-code): `tokenization_kimi.py` (tokenizer_config.json auto_map); they may import the repo's other .py files (`configuration_deepseek.py`, `modeling_deepseek.py`)",
    );
    expect(text).toContain(
      "✗ *remote-code*: runs Python from the model repo: tokenization_kimi.py (tokenizer_config.json auto_map); they may import the repo's other .py files (configuration_deepseek.py, modeling_deepseek.py), and sim-org is not in hub.remoteCodeOrgs",
    );
    // the flag is never planned for an org nobody trusted
    expect(text).not.toMatch(/^ {2}--trust-remote-code/m);
    expect(text).not.toContain("• `--trust-remote-code`");
    // nothing ran on the host, and no weights or code left the Hub
    const calls = (await host.sim.calls()).slice(callsBefore);
    expect(calls.filter((c) => c.cmd === "hf")).toEqual([]);
    const fetched = bench.hub
      .requests()
      .filter((r) => r.repo === TOKENIZER_CODE && r.kind === "resolve")
      .map((r) => r.file);
    expect(fetched.sort()).toEqual(["config.json", "tokenizer_config.json"]);
  }, 90_000);

  it("a Kimi K2 repo with no auto_map anywhere and no .py file is planned without --trust-remote-code", async () => {
    const card = await swaps.request(`${NO_CODE} --dry-run`, "gpu-1");
    const plan = await swaps.dryRunPlan(card.ts);
    const text = `${shown(plan)}\n${shown(await swaps.planDetails(card.ts))}`;
    expect(text).toContain("*Dry run*");
    expect(text).toContain("--tool-call-parser kimi_k2");
    expect(text).not.toContain("trust-remote-code");
    expect(text).not.toContain("Runs Python");
    expect(text).not.toContain("remote-code");
  }, 90_000);
});
