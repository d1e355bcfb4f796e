import type { KnownBlock } from "@slack/types";
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { makePlan } from "../../src/plan/make-plan.ts";
import type { SwapPlan } from "../../src/plan/types.ts";
import { renderPlanDetails } from "../../src/reporter/plan-details.ts";
import { type PlanMessageOptions, renderPlan } from "../../src/reporter/plan-message.ts";
import { LIMITS } from "../../src/slack/blocks.ts";
import { planInput } from "./plan-fixtures.ts";

const BOB = "U0BOB00001";
const ALICE = "U0ALICE001";
const qwen = makePlan(planInput("qwen3.5-moe-nvfp4", "8x-rtx-pro-6000-blackwell"));
const awaiting: PlanMessageOptions = {
  swapId: "sw-20261129-0001",
  requester: ALICE,
  status: "awaiting-approval",
  waitingFor: "<!subteam^S0APPROVERS>",
};

/** Every piece of text in the blocks, with the block type it sits in. */
function texts(blocks: readonly KnownBlock[]): { type: string; text: string; kind: string }[] {
  const out: { type: string; text: string; kind: string }[] = [];
  for (const block of blocks) {
    const b = block as unknown as Record<string, unknown>;
    const add = (value: unknown, kind: string) => {
      const t = value as { text?: string; type?: string } | undefined;
      if (t?.text !== undefined) out.push({ type: String(b.type), text: t.text, kind });
    };
    add(b.text, "text");
    for (const f of (b.fields as unknown[] | undefined) ?? []) add(f, "field");
    for (const e of (b.elements as Record<string, unknown>[] | undefined) ?? []) {
      if (e.type === "button") add(e.text, "button");
      else add(e, "element");
    }
  }
  return out;
}

const all = (blocks: readonly KnownBlock[]) =>
  texts(blocks)
    .map((t) => t.text)
    .join("\n");
const actions = (blocks: readonly KnownBlock[]) =>
  blocks.filter((b) => b.type === "actions") as unknown as {
    elements: { action_id: string; style: string; value: string; text: { text: string } }[];
  }[];

/** The lines a person sees: each text's lines, two fields a row, a row of buttons one line. */
function lineCount(message: { blocks: KnownBlock[] }): number {
  let lines = 0;
  for (const block of message.blocks) {
    const b = block as unknown as {
      type: string;
      text?: { text: string };
      fields?: unknown[];
      elements?: unknown[];
    };
    if (b.text !== undefined) lines += b.text.text.split("\n").length;
    if (b.fields !== undefined) lines += Math.ceil(b.fields.length / 2) * 2;
    if (b.type === "context" || b.type === "actions") lines += 1;
  }
  return lines;
}

/** Slack's limits, and mrkdwn that cannot be broken by what it quotes. */
function expectWithinSlackLimits(message: { text: string; blocks: KnownBlock[] }): void {
  expect(message.text.length).toBeGreaterThan(0);
  expect(message.text.length).toBeLessThanOrEqual(LIMITS.fallbackText);
  expect(message.blocks.length).toBeLessThanOrEqual(LIMITS.blocks);
  for (const block of message.blocks) {
    const b = block as unknown as Record<string, unknown>;
    if (b.type === "header")
      expect((b.text as { text: string }).text.length).toBeLessThanOrEqual(LIMITS.headerText);
    if (b.type === "section" && b.text !== undefined) {
      const text = (b.text as { text: string }).text;
      expect(text.length).toBeLessThanOrEqual(LIMITS.sectionText);
      expect((text.match(/```/g) ?? []).length % 2, text).toBe(0);
    }
    if (b.fields !== undefined) {
      const fields = b.fields as { text: string }[];
      expect(fields.length).toBeLessThanOrEqual(LIMITS.fields);
      for (const f of fields) expect(f.text.length).toBeLessThanOrEqual(LIMITS.fieldText);
    }
    if (b.type === "context")
      expect((b.elements as unknown[]).length).toBeLessThanOrEqual(LIMITS.contextElements);
  }
  for (const { text, kind, type } of [
    ...texts(message.blocks),
    { text: message.text, kind: "fallback", type: "" },
  ]) {
    // plain_text (header, buttons) is shown as is; in mrkdwn only the bot's own mentions may use
    // Slack's <…> syntax, and every other < > & is escaped.
    if (kind === "button" || type === "header") continue;
    const rest = text.replace(/<@[UW][A-Z0-9]+>|<!subteam\^S[A-Z0-9]+>/g, "");
    expect(rest, text).not.toMatch(/[<>]|&(?!amp;|lt;|gt;)/);
  }
}

describe("renderPlan", () => {
  it("shows the Qwen3.5 plan awaiting approval, with Approve and Reject buttons", () => {
    const message = renderPlan(qwen, awaiting);
    expectWithinSlackLimits(message);
    const header = message.blocks[0] as unknown as { type: string; text: { text: string } };
    expect(header.type).toBe("header");
    expect(header.text.text).toBe("Swap plan: nvidia/Qwen3.5-397B-A17B-NVFP4 → gpu-blackwell");
    const text = all(message.blocks);
    expect(text).toContain(`@ \`${qwen.model.sha.slice(0, 7)}\``);
    expect(text).toContain("223 GB (");
    expect(text).toContain("apache-2.0");
    expect(text).toContain("8 × NVIDIA RTX PRO 6000 Blackwell Server Edition (sm_120, 95.6 GiB)");
    expect(text).toContain("tp 8: all 8 GPUs");
    // the checks that passed in one line; their figures, the command, each flag's reason and the unit
    // diff are in the details, posted under the plan
    expect(text).toContain(
      "✓ *7 checks pass*: recipe, quantization, vram, tp, disk, venv, hub-cli (their figures in the details below)",
    );
    expect(text).toContain(
      "*Flags* `--tp-size 8` `--quantization modelopt_fp4` `--moe-runner-backend flashinfer_cutlass`",
    );
    expect(text).toContain(
      "*Unit* `sglang-nvidia-qwen3-5-397b-a17b-nvfp4-43da92d.service`: +33 −2 lines against `sglang-kimi.service`; the diff is in the details below",
    );
    expect(text).not.toContain("+Description=");
    const detailsMessage = renderPlanDetails(qwen, "sw-20261129-0001");
    expectWithinSlackLimits(detailsMessage);
    const details = all(detailsMessage.blocks);
    expect(details).toMatch(/✓ \*vram\*: 27\.3 GiB\/GPU/);
    expect(details).toContain(
      "✓ *recipe*: modelopt-fp4: ModelOpt NVFP4 checkpoint; nvfp4-sm120-sglang-moe: NVFP4 MoE on SM120 with SGLang; nvfp4-sm120-sglang: NVFP4 on SM120 (RTX PRO 6000 Blackwell) with SGLang; qwen3.5: Qwen3.5 (MoE)",
    );
    // each flag says which recipe (or layer) set it, and its source
    expect(details).toMatch(
      /• `--tool-call-parser qwen3_coder`: .* _\(recipe qwen3\.5; source: https:\/\/huggingface\.co\/Qwen/,
    );
    expect(details).toContain("  --fp4-gemm-backend flashinfer_cudnn \\");
    expect(details).toContain(
      "• `--moe-runner-backend flashinfer_cutlass`: the default MoE kernels produce NaN on SM120",
    );
    expect(details).toContain("thinks inside &lt;think&gt;…&lt;/think&gt;");
    expect(details).toContain("+Description=SGLang serving nvidia/Qwen3.5-397B-A17B-NVFP4@");
    expect(text).toContain("`sglang-kimi.service` (running) will be disabled and stopped");
    expect(text).toContain(
      "*Expected downtime* about 6 min 30 s from stop to healthy (health wait limit 20 min): 223 GB of weights read cold from disk at 1.5 GB/s (2 min 30 s) + 4 min to stop, start, JIT-compile and warm up the NVFP4 kernels on sm_120",
    );
    // production: no bench line, sizes as the Hub lists them
    expect(text).not.toContain("bench");
    expect(text).toContain("223 GB (29 files)");
    expect(text).toContain("*Awaiting approval* from <!subteam^S0APPROVERS>");
    expect(text).toContain("React ✅ to approve or ❌ to reject (approvers only; not the requester)");
    expect(text).toContain(`requested by <@${ALICE}>`);

    const [decision, ...more] = actions(message.blocks);
    expect(more).toEqual([]);
    expect(decision?.elements.map((e) => [e.action_id, e.style, e.text.text, e.value])).toEqual([
      ["swap_approve", "primary", "Approve", "sw-20261129-0001"],
      ["swap_reject", "danger", "Reject", "sw-20261129-0001"],
    ]);
    expect(message.text).toBe("Swap plan: nvidia/Qwen3.5-397B-A17B-NVFP4 → gpu-blackwell: awaiting approval");
  });

  it("drops the buttons once decided and says who decided", () => {
    const approved = renderPlan(qwen, { ...awaiting, status: "approved", decidedBy: BOB });
    expect(actions(approved.blocks)).toEqual([]);
    expect(all(approved.blocks)).toContain(`*Approved by <@${BOB}>*`);
    expect(all(approved.blocks)).not.toContain("React ✅");
    const rejected = renderPlan(qwen, { ...awaiting, status: "rejected", decidedBy: BOB });
    expect(actions(rejected.blocks)).toEqual([]);
    expect(all(rejected.blocks)).toContain(`*Rejected by <@${BOB}>*. Nothing was touched`);
    expect(all(renderPlan(qwen, { ...awaiting, status: "expired" }).blocks)).toContain("*Expired*");
    expect(all(renderPlan(qwen, { ...awaiting, status: "dry-run" }).blocks)).toContain("*Dry run*");
    expect(renderPlan(qwen, { ...awaiting, status: "dry-run" }).text).toMatch(/: dry run$/);
  });

  it("shows a refused plan's failing checks with their fixes, and no way to approve it", () => {
    const h200 = makePlan(planInput("qwen3.5-moe-nvfp4", "h200-1gpu"));
    for (const status of ["refused", "awaiting-approval"] as const) {
      const message = renderPlan(h200, { ...awaiting, status });
      expectWithinSlackLimits(message);
      expect(actions(message.blocks)).toEqual([]);
      const text = all(message.blocks);
      expect(text).toMatch(
        /✗ \*quantization\*: NVFP4 \(ModelOpt NVFP4 .*\) does not run on NVIDIA H200 \(compute capability 9\.0\) with SGLang: .*\n {6}_Fix:_ vLLM would run it on these GPUs/,
      );
      expect(text).toMatch(/failing quantization, vram\. Nothing was touched/);
      expect(message.text).toMatch(/\(2 failing checks\)$/);
    }
  });

  it("marks flags the engine build lacks", () => {
    const plan: SwapPlan = {
      ...qwen,
      flags: qwen.flags.map((f) => (f.setting === "fp4-gemm-backend" ? { ...f, flag: undefined } : f)),
    };
    const text = all(renderPlan(plan, awaiting).blocks);
    expect(text).toContain("`(no flag for fp4-gemm-backend) flashinfer_cudnn`");
    expect(text).toContain("⚠️ The engine build has no flag for fp4-gemm-backend.");
    const details = all(renderPlanDetails(plan, awaiting.swapId).blocks);
    expect(details).toContain("  # missing: fp4-gemm-backend");
    expect(details).toContain("• `(no flag for fp4-gemm-backend) flashinfer_cudnn`");
  });

  it("stays within Slack's limits with a huge hostile name, many flags and a huge diff", () => {
    const hostile = `evil/${"<!channel> & `code` *bold* <@U0BOB00001> ".repeat(120)}`;
    const plan: SwapPlan = {
      ...qwen,
      model: { ...qwen.model, repo: hostile, license: "<!here>".repeat(100) },
      host: { ...qwen.host, host: "h".repeat(300) },
      flags: Array.from({ length: 300 }, (_, i) => ({
        setting: `setting-${i}`,
        flag: `--setting-${i}`,
        value: `${hostile}-${i}`,
        reason: `because ${"<b>&".repeat(200)}`,
      })),
      checks: [
        ...qwen.checks,
        ...Array.from({ length: 40 }, (_, i) => ({
          id: `check-${i}`,
          ok: i % 2 === 0,
          detail: `${hostile} ${i}`,
          fix: "```".repeat(300),
        })),
      ],
      notes: Array.from({ length: 50 }, () => `note ${hostile}`),
      unitName: hostile,
      unitDiff: Array.from({ length: 20_000 }, (_, i) => `+line ${i} ${"`".repeat(i % 5)} <x>`).join("\n"),
      tpReason: hostile,
    };
    for (const status of ["awaiting-approval", "approved", "refused"] as const) {
      const message = renderPlan(plan, { ...awaiting, status, decidedBy: BOB, requester: "<!channel>" });
      expectWithinSlackLimits(message);
      const mrkdwn = texts(message.blocks).filter((t) => t.type !== "header" && t.kind !== "button");
      expect(mrkdwn.map((t) => t.text).join("\n")).not.toContain("<!channel>");
      expect(message.text).not.toContain("<!channel>");
      expect(lineCount(message)).toBeLessThan(40);
    }
    const details = renderPlanDetails(plan, "<!channel>");
    expectWithinSlackLimits(details);
    expect(details.text).not.toContain("<!channel>");
    expect(all(details.blocks)).not.toContain("<!channel>");
    expect(all(details.blocks)).toMatch(/… \d+ more lines/);
  });

  it("stays within Slack's limits for any model name (property)", () => {
    fc.assert(
      fc.property(
        fc.string({ unit: "binary", maxLength: 3000 }),
        fc.string({ maxLength: 500 }),
        (name, swapId) => {
          const plan: SwapPlan = { ...qwen, model: { ...qwen.model, repo: `org/${name}` } };
          expectWithinSlackLimits(renderPlan(plan, { ...awaiting, swapId }));
        },
      ),
      { numRuns: 150 },
    );
  });
});

describe("the plan, decision first", () => {
  it("opens with what stops, the downtime, who may approve until when, and the buttons; the reasons follow", () => {
    const msg = renderPlan(qwen, { ...awaiting, expiresAt: "2027-01-15T05:31:00.000Z" });
    const blocks = msg.blocks as KnownBlock[];
    const types = blocks.map((b) => b.type);
    const at = (pattern: RegExp) =>
      blocks.findIndex((b) => pattern.test(JSON.stringify((b as { text?: unknown }).text ?? b)));
    const status = JSON.stringify(blocks[1]);
    expect(status).toContain("*Awaiting approval* from <!subteam^S0APPROVERS> until 2027-01-15 05:31 UTC");
    const decision = JSON.stringify(blocks[2]);
    expect(decision).toContain("*Stops* `sglang-kimi.service` (running) will be disabled and stopped");
    expect(decision).toContain("*Expected downtime* about");
    expect(decision).toContain("*Engine* sglang branch `main`");
    expect(types.indexOf("actions")).toBe(3);
    expect(at(/checks pass/)).toBeGreaterThan(types.indexOf("actions"));
    expect(at(/\*Unit\*/)).toBeGreaterThan(at(/checks pass/));
  });

  it("says each note in one line, without its workings", () => {
    const note =
      "Hierarchical KV cache off: host RAM 1.0 TiB is less than the 2.6 TiB it needs (4 × the 650.0 GiB GPU KV cache = 2.5 TiB, plus 64.0 GiB headroom).";
    const text = JSON.stringify(renderPlan({ ...qwen, notes: [note] }, awaiting).blocks);
    expect(text).toContain("_Hierarchical KV cache off: host RAM 1.0 TiB is less than the 2.6 TiB it needs_");
    expect(text).not.toContain("650.0 GiB GPU KV cache");
  });
});

describe("the model repo's Python, named in the plan's first lines (issue 27 §3)", () => {
  const kimi = makePlan(planInput("kimi-k2-int4", "8x-h200"));
  const top = (plan: SwapPlan) => all(renderPlan(plan, awaiting).blocks.slice(0, 3));

  it("names each file that will run and the config that names it", () => {
    expect(top(kimi)).toContain(
      ":warning: *Runs Python from the model repo* (--trust-remote-code): `configuration_deepseek.py` and `modeling_deepseek.py` (config.json auto_map), `tokenization_kimi.py` (tokenizer_config.json auto_map)",
    );
  });

  it("says nothing of the sort for a model whose files name no code", () => {
    expect(all(renderPlan(qwen, awaiting).blocks)).not.toContain("Runs Python");
  });

  it("stays a line Slack shows, and escaped, whatever the repo names; the reasons give way before it", () => {
    const remoteCode = {
      files: Array.from({ length: 20 }, (_, i) => ({
        file: `${"m".repeat(95)}_${i}.py`,
        repo: `org-${i}/${"r".repeat(90)}`,
        namedBy: ["config.json", "tokenizer_config.json"],
      })),
      moreFiles: 500,
      otherRepos: Array.from({ length: 20 }, (_, i) => `org-${i}/${"r".repeat(90)}`),
      moreOtherRepos: 0,
      unreadable: ['"<!channel> `x` *y*" (config.json auto_map)', '"&lt;b&gt;" (config.json auto_map)'],
      moreUnreadable: 3,
      otherPy: Array.from({ length: 20 }, (_, i) => `lib/${"p".repeat(50)}${i}.py`),
      moreOtherPy: 80,
    };
    const plan: SwapPlan = {
      ...kimi,
      facts: { ...kimi.facts, remoteCode },
      clients: {
        mode: "cold",
        drainSeconds: 90,
        why: "w".repeat(600),
        preload: { will: false, why: "p".repeat(400) },
        park: { will: false, why: "k".repeat(600) },
      },
    };
    const message = renderPlan(plan, awaiting);
    expectWithinSlackLimits(message);
    const shown = all(message.blocks.slice(0, 3));
    const line = shown.split("\n").find((l) => l.startsWith(":warning: *Runs Python"));
    expect(line).toMatch(/, \d+ more files, code modelswap cannot name: "&lt;!channel&gt; ˋxˋ \*y\*"/);
    expect(line).toMatch(/ and 3 more$/);
    expect(line!.length).toBeLessThan(1500);
    expect(shown).not.toContain("<!channel>");
  });
});

describe("a plan a person reads in one screen (issue 30)", () => {
  const presets = ["qwen3.5-moe-nvfp4", "kimi-k2-int4", "llama-bf16-small"] as const;
  const sets = ["8x-rtx-pro-6000-blackwell", "8x-h200", "8x-b200", "1x-h200"];

  it("is under 40 lines for every model, host, status and note count; the workings are in the details", () => {
    for (const preset of presets)
      for (const set of sets) {
        let plan: SwapPlan;
        try {
          plan = makePlan(planInput(preset, set));
        } catch {
          continue; // a host set the fixtures do not have for this preset
        }
        plan = {
          ...plan,
          notes: [...plan.notes, "A note. With a second sentence.", "Another note (with workings)."],
        };
        for (const status of ["awaiting-approval", "refused", "dry-run", "approved"] as const) {
          const message = renderPlan(plan, { ...awaiting, status });
          expect(lineCount(message), `${preset} on ${set}, ${status}`).toBeLessThan(40);
        }
        const details = all(renderPlanDetails(plan, awaiting.swapId).blocks);
        for (const check of plan.checks) expect(details).toContain(`*${check.id}*:`);
        for (const flag of plan.flags.filter((f) => f.flag !== undefined))
          expect(details).toContain(flag.flag);
      }
  });

  it("never cuts a reason mid-sentence: a long one keeps its whole sentences and says more was said", () => {
    const sentence = "The serving model holds 88.0 GiB of each GPU and 7.6 GiB is free. ";
    const why = sentence.repeat(12).trim();
    const plan: SwapPlan = {
      ...qwen,
      clients: { drainSeconds: 30, why },
    } as SwapPlan;
    const text = all(renderPlan(plan, awaiting).blocks);
    const line = text.split("\n").find((l) => l.startsWith("*Why cold*"))!;
    expect(line).toMatch(/is free\. …$/);
    expect(line.length).toBeLessThan(why.length);
  });
});
