import { describe, expect, it } from "vitest";
import { engineBuildDir } from "../../src/engine/engine-source.ts";
import { applyFlagSpellings, parseHelpOptions } from "../../src/plan/flag-spellings.ts";
import { makePlan } from "../../src/plan/make-plan.ts";
import type { PlanInput } from "../../src/plan/plan-input.ts";
import type { SwapPlan } from "../../src/plan/types.ts";
import { renderPlanDetails } from "../../src/reporter/plan-details.ts";
import { renderPlan } from "../../src/reporter/plan-message.ts";
import { rollbackPlan } from "../../src/swap/rollback-plan.ts";
import {
  formatServeHelp,
  SERVE_DESCRIPTION,
  subcmdEpilog,
} from "../../testbench/gpu-host/shims/vllm-argparse.mjs";
import { GiB, gpusOf, planInput } from "./plan-fixtures.ts";

/*
 * vLLM behind the same planner (issue #15): its recipes, its flags (checked against `vllm serve
 * --help=all` as the simulated vLLM 0.18 prints it, testbench/gpu-host/VLLM.md), its memory model and
 * its unit.
 */

const RTX = "8x-rtx-pro-6000-blackwell";
const flag = (plan: SwapPlan, setting: string) => plan.flags.find((f) => f.setting === setting);
const failing = (plan: SwapPlan) => plan.checks.filter((c) => !c.ok).map((c) => c.id);

function vllmInput(preset: Parameters<typeof planInput>[0], set: string, extra = {}): PlanInput {
  const base = planInput(preset, set, extra);
  const buildDir = engineBuildDir("/models", base.engine.commit, base.swapId, "vllm");
  return {
    ...base,
    engineKind: "vllm",
    hostConfig: { ...base.hostConfig, venv: "/opt/vllm/.venv" },
    engine: { ...base.engine, upstream: "https://github.com/vllm-project/vllm.git", buildDir },
    clients: { mode: "cold", drainSeconds: 90 },
  };
}

const HELP_ALL = formatServeHelp(
  "vllm serve [model_tag] [options]",
  SERVE_DESCRIPTION,
  subcmdEpilog("serve"),
  "all",
);

describe("Qwen3.5 NVFP4 on 8× RTX PRO 6000 (sm_120) served by vLLM", () => {
  const plan = makePlan(vllmInput("qwen3.5-moe-nvfp4", RTX));

  it("takes vLLM's own recipe: the FlashInfer FP4 MoE switches in the environment, with their reasons", () => {
    expect(failing(plan)).toEqual([]);
    expect(plan.engineKind).toBe("vllm");
    expect(plan.recipe).toBe("modelopt-fp4 + nvfp4-sm120-vllm-moe + qwen3.5");
    expect(plan.env).toEqual([
      expect.objectContaining({
        name: "VLLM_USE_FLASHINFER_MOE_FP4",
        value: "1",
        reason: expect.stringMatching(/NaN on SM120/),
      }),
      expect.objectContaining({ name: "VLLM_FLASHINFER_MOE_BACKEND", value: "throughput" }),
    ]);
    // SGLang's backend flags are not vLLM's: none of them is in the plan
    expect(flag(plan, "moe-runner-backend")).toBeUndefined();
    expect(flag(plan, "fp4-gemm-backend")).toBeUndefined();
    expect(flag(plan, "enable-auto-tool-choice")).toBeDefined();
    expect(flag(plan, "tool-call-parser")?.value).toBe("qwen3_coder");
  });

  it("spells vLLM's flags: the model positional, --tensor-parallel-size, --shutdown-timeout for the drain", () => {
    expect(flag(plan, "model-path")).toMatchObject({ positional: true, value: plan.modelDir });
    expect(flag(plan, "tp-size")).toMatchObject({ flag: "--tensor-parallel-size", value: "8" });
    expect(flag(plan, "shutdown-timeout")).toMatchObject({ flag: "--shutdown-timeout", value: "90" });
    expect(flag(plan, "shutdown-timeout")?.reason).toMatch(/aborts requests in flight on SIGTERM/);
  });

  it("writes a vLLM unit: its own name, the build's site on PYTHONPATH, the recipe's environment, `serve <model>`", () => {
    expect(plan.unitName).toMatch(/^vllm-nvidia-qwen3-5-397b-a17b-nvfp4-[0-9a-f]{7}\.service$/);
    expect(plan.unitText).toContain(`Environment=PYTHONPATH=${plan.engine!.buildDir}/site`);
    expect(plan.unitText).toContain("Environment=VLLM_USE_FLASHINFER_MOE_FP4=1");
    expect(plan.unitText).toContain("Environment=VLLM_FLASHINFER_MOE_BACKEND=throughput");
    expect(plan.unitText).toContain(
      `ExecStart=/opt/vllm/.venv/bin/python -m vllm.entrypoints.cli.main serve ${plan.modelDir} \\`,
    );
    expect(plan.unitText).toContain("Description=vLLM serving nvidia/Qwen3.5-397B-A17B-NVFP4@");
    expect(plan.unitText).not.toMatch(/--model-path|sglang/);
    expect(plan.unitText).toContain("TimeoutStopSec=120");
  });

  it("checks every flag against `vllm serve --help=all`: all there in 0.18", () => {
    const options = parseHelpOptions(HELP_ALL);
    const checked = applyFlagSpellings(plan, new Set(options.keys()), options);
    expect(failing(checked)).toEqual([]);
    expect(checked.unitText).toBe(plan.unitText);
  });

  it("refuses a build whose help lacks --shutdown-timeout (before 0.18): in-flight requests would be aborted", () => {
    const older = HELP_ALL.split("\n")
      .filter((l) => !l.includes("--shutdown-timeout"))
      .join("\n");
    const options = parseHelpOptions(older);
    const checked = applyFlagSpellings(plan, new Set(options.keys()), options);
    expect(failing(checked)).toEqual(["flags"]);
    expect(checked.checks.find((c) => c.id === "flags")?.detail).toMatch(/no flag for shutdown-timeout/);
  });

  it("the short help lists groups, not flags: checked against it, every flag would be missing", () => {
    const short = formatServeHelp(
      "vllm serve [model_tag] [options]",
      SERVE_DESCRIPTION,
      subcmdEpilog("serve"),
      "",
    );
    expect(parseHelpOptions(short).has("--tensor-parallel-size")).toBe(false);
  });

  it("the plan shows the engine, its build and the command as vLLM runs it", () => {
    const text = JSON.stringify(
      renderPlan(plan, { swapId: "sw-1", requester: "U0ALICE001", status: "awaiting-approval" }),
    );
    expect(text).toContain("vllm branch");
    expect(text).toContain("precompiled kernels of that commit");
    expect(text).toContain("VLLM_USE_FLASHINFER_MOE_FP4=1");
    expect(JSON.stringify(renderPlanDetails(plan, "sw-1"))).toContain(
      "python -m vllm.entrypoints.cli.main serve",
    );
    expect(text).toMatch(/Engine changes.*SGLang → vLLM/);
  });
});

describe("vLLM's memory model", () => {
  it("the KV cache is --gpu-memory-utilization 0.9 of the GPU's total less the weights and activations", () => {
    const plan = makePlan(vllmInput("llama-bf16-small", "h200-1gpu"));
    const vram = plan.checks.find((c) => c.id === "vram")!;
    expect(vram.ok).toBe(true);
    expect(vram.detail).toMatch(/left for KV cache at gpu-memory-utilization 0\.9/);
  });

  it("beside a unit holding half of each GPU the new one starts at the share that is free, and says why", () => {
    const gpus = gpusOf(RTX).map((g) => ({
      ...g,
      memoryUsedMiB: 48 * 1024,
      memoryFreeMiB: g.memoryTotalMiB - 48 * 1024,
    }));
    const input = vllmInput("llama-bf16-small", RTX, { host: { gpus } });
    const plan = makePlan({
      ...input,
      clients: { mode: "cold", drainSeconds: 30, frontDoor: { server: "a", hold: "hold", holdSeconds: 60 } },
      blueGreen: {
        standby: { server: "b", port: 30001 },
        sharedBenchmark: "after-flip",
        flipBackSeconds: 60,
        restartAtFullMemory: false,
      },
    });
    expect(plan.clients?.mode).toBe("bluegreen");
    const util = flag(plan, "gpu-memory-utilization");
    expect(util?.flag).toBe("--gpu-memory-utilization");
    // 95.6 GiB GPUs with 48 GiB held and 1 GiB of context: (47.6 − 1 − 1) / 95.6, rounded down
    expect(Number(util?.value)).toBeCloseTo(0.47, 2);
    expect(util?.reason).toMatch(/vLLM applies it to the GPU's total memory/);
    expect(flag(plan, "mem-fraction-static")).toBeUndefined();
    expect(plan.clients?.blueGreen?.kvPerGpuBytes).toBeGreaterThan(5 * GiB);
  });
});

describe("a rollback to a vLLM unit", () => {
  it("reads the engine and the model directory from its ExecStart", () => {
    const plan = makePlan(vllmInput("llama-bf16-small", "h200-1gpu"));
    const back = rollbackPlan({
      swapId: "sw-2",
      host: plan.host,
      hostConfig: { modelsDir: "/models", venv: "/opt/sglang/.venv", unitDir: "/etc/systemd/system" },
      target: { name: plan.unitName, path: plan.unitPath, text: plan.unitText, modelDirExists: true },
      earlier: plan,
    });
    expect(back.engineKind).toBe("vllm");
    expect(back.modelDir).toBe(plan.modelDir);
    expect(back.venv).toBe("/opt/vllm/.venv");
    expect(back.checks.every((c) => c.ok)).toBe(true);
  });
});

describe("a recipe's environment in the unit", () => {
  it("is quoted so a value cannot start a directive, and a bad name is refused", async () => {
    const { renderUnit } = await import("../../src/engine/render-unit.ts");
    const spec = {
      kind: "vllm" as const,
      repo: "org/model",
      sha: "0123456789abcdef",
      swapId: "sw-1",
      serving: "sglang-old.service",
      venv: "/opt/vllm/.venv",
      flags: [],
      timeoutStartSeconds: 600,
    };
    const unit = renderUnit({
      ...spec,
      env: [{ name: "X", value: "1\nExecStartPre=/bin/evil", reason: "r" }],
    });
    expect(unit.text).toContain('Environment="X=1\\nExecStartPre=/bin/evil"');
    expect(unit.text.split("\n").filter((l) => l.startsWith("ExecStartPre"))).toEqual([]);
    expect(() => renderUnit({ ...spec, env: [{ name: "A B", value: "1", reason: "r" }] })).toThrow(
      /not an environment variable name/,
    );
  });
});

describe("Kimi K2 served by vLLM: the repo's Python from its files, per org (issue 27 §3)", () => {
  const H200 = "8x-h200";

  it("adds --trust-remote-code only from the files and for a trusted org, naming what runs", () => {
    const plan = makePlan(vllmInput("kimi-k2-int4", H200));
    expect(failing(plan)).toEqual([]);
    expect(plan.recipe).toBe("kimi-k2");
    expect(flag(plan, "trust-remote-code")?.reason).toMatch(
      /^the engine imports the repo's own Python, .*tokenization_kimi\.py \(tokenizer_config\.json auto_map\); moonshotai is trusted in hub\.remoteCodeOrgs$/,
    );
    expect(plan.unitText).toMatch(/^ +--trust-remote-code/m);
  });

  it("is refused for an org nobody trusted, without the flag", () => {
    const plan = makePlan(vllmInput("kimi-k2-int4", H200, { remoteCodeOrgs: [] }));
    expect(failing(plan)).toEqual(["remote-code"]);
    expect(flag(plan, "trust-remote-code")).toBeUndefined();
    expect(plan.unitText).not.toContain("trust-remote-code");
  });

  it("a Kimi K2 repo naming no code gets no flag: vLLM's recipe adds none", () => {
    const plan = makePlan(
      vllmInput("kimi-k2-int4", H200, { facts: { needsRemoteCode: false, remoteCode: undefined } }),
    );
    expect(failing(plan)).toEqual([]);
    expect(flag(plan, "tool-call-parser")?.value).toBe("kimi_k2");
    expect(flag(plan, "trust-remote-code")).toBeUndefined();
  });
});
