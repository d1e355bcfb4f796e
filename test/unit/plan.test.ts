import { describe, expect, it } from "vitest";
import { chooseTp, headsProblem } from "../../src/plan/choose-tp.ts";
import { expectedDowntimeSeconds, healthTimeoutSeconds } from "../../src/plan/downtime.ts";
import { makePlan } from "../../src/plan/make-plan.ts";
import type { PlanInput } from "../../src/plan/plan-input.ts";
import type { HostFacts, ModelFacts, SwapPlan } from "../../src/plan/types.ts";
import { renderPlan } from "../../src/reporter/plan-message.ts";
import { factsOf, GiB, gpusOf, modelInfoOf, planInput } from "./plan-fixtures.ts";

const RTX = "8x-rtx-pro-6000-blackwell";
const flag = (plan: SwapPlan, setting: string) => plan.flags.find((f) => f.setting === setting);
const check = (plan: SwapPlan, id: string) => {
  const found = plan.checks.find((c) => c.id === id);
  if (found === undefined) throw new Error(`no "${id}" check in ${plan.checks.map((c) => c.id).join(", ")}`);
  return found;
};
const AWAITING = {
  swapId: "sw-20261129-0001",
  requester: "U0ALICE001",
  status: "awaiting-approval" as const,
};
const failing = (plan: SwapPlan) => plan.checks.filter((c) => !c.ok).map((c) => c.id);

describe("Qwen3.5-397B-A17B NVFP4 (223 GB, 19 shards) on 8× RTX PRO 6000 Blackwell (sm_120, 97887 MiB)", () => {
  const plan = makePlan(planInput("qwen3.5-moe-nvfp4", RTX));

  it("passes every check with the SM120 recipe at tp 8", () => {
    expect(failing(plan)).toEqual([]);
    expect(plan.ok).toBe(true);
    expect(plan.recipe).toBe("modelopt-fp4 + nvfp4-sm120-sglang-moe + nvfp4-sm120-sglang + qwen3.5");
    expect(plan.tp).toBe(8);
    expect(plan.tpReason).toMatch(/all 8 GPUs.*more memory for KV cache/);
    expect(plan.checks.map((c) => c.id)).toEqual([
      "recipe",
      "quantization",
      "vram",
      "tp",
      "disk",
      "venv",
      "hub-cli",
    ]);
  });

  it("uses both FlashInfer backends, saying that the defaults give NaN on SM120", () => {
    expect(flag(plan, "quantization")).toMatchObject({ flag: "--quantization", value: "modelopt_fp4" });
    expect(flag(plan, "moe-runner-backend")).toMatchObject({
      flag: "--moe-runner-backend",
      value: "flashinfer_cutlass",
    });
    expect(flag(plan, "fp4-gemm-backend")).toMatchObject({
      flag: "--fp4-gemm-backend",
      value: "flashinfer_cudnn",
    });
    expect(flag(plan, "moe-runner-backend")?.reason).toMatch(/NaN on SM120/);
    expect(flag(plan, "fp4-gemm-backend")?.reason).toMatch(/NaN on SM120.*!!!!/);
  });

  it("sets the parsers, loopback host, port, tp and names; every flag has a reason", () => {
    expect(flag(plan, "tool-call-parser")?.value).toBe("qwen3_coder");
    expect(flag(plan, "reasoning-parser")?.value).toBe("qwen3");
    expect(flag(plan, "host")?.value).toBe("127.0.0.1");
    expect(flag(plan, "port")?.value).toBe("30000");
    expect(flag(plan, "tp-size")).toMatchObject({ flag: "--tp-size", value: "8" });
    expect(flag(plan, "served-model-name")?.value).toBe("nvidia/Qwen3.5-397B-A17B-NVFP4");
    expect(flag(plan, "trust-remote-code")).toBeUndefined();
    for (const f of plan.flags) expect(f.reason.length, f.setting).toBeGreaterThan(10);
  });

  it("puts the model in a directory of its own commit", () => {
    expect(plan.modelDir).toBe(`/models/nvidia--Qwen3.5-397B-A17B-NVFP4--${plan.model.sha.slice(0, 12)}`);
    expect(flag(plan, "model-path")?.value).toBe(plan.modelDir);
  });

  it("states the VRAM numbers: 27.3 GiB/GPU of weights of 95.6 GiB, 54 GiB left for KV cache", () => {
    const vram = check(plan, "vram");
    expect(vram.detail).toContain("27.3 GiB/GPU");
    expect(vram.detail).toContain("207.7 GiB ÷ 8 + 5%");
    expect(vram.detail).toContain("95.6 GiB");
    expect(vram.detail).toMatch(/54\.0 GiB\/GPU left for KV cache at mem-fraction-static 0\.85/);
    expect(check(plan, "tp").detail).toMatch(
      /32 attention heads → 4 per GPU; 2 KV heads, each replicated on 4 GPUs/,
    );
  });

  it("turns on the hierarchical cache when RAM holds 4 × the KV cache, and says why it is off otherwise", () => {
    expect(flag(plan, "enable-hierarchical-cache")).toMatchObject({ value: undefined });
    expect(flag(plan, "hicache-ratio")?.value).toBe("4");
    expect(flag(plan, "enable-hierarchical-cache")?.reason).toMatch(
      /2\.0 TiB holds 4 × the 432\.0 GiB GPU KV cache/,
    );
    expect(plan.notes.filter((n) => /Hierarchical/.test(n))).toEqual([]);

    const small = makePlan(planInput("qwen3.5-moe-nvfp4", RTX, { host: { memoryBytes: 1024 * GiB } }));
    expect(flag(small, "enable-hierarchical-cache")).toBeUndefined();
    expect(flag(small, "hicache-ratio")).toBeUndefined();
    expect(small.notes.join("\n")).toMatch(
      /Hierarchical KV cache off: host RAM 1\.0 TiB is less than the 1\.7 TiB it needs \(4 × the 432\.0 GiB GPU KV cache/,
    );
    expect(small.ok).toBe(true);
  });

  it("renders the unit with these flags and diffs it against the unit serving now", () => {
    expect(plan.unitName).toBe("sglang-nvidia-qwen3-5-397b-a17b-nvfp4-43da92d.service");
    expect(plan.unitPath).toBe("/etc/systemd/system/sglang-nvidia-qwen3-5-397b-a17b-nvfp4-43da92d.service");
    expect(plan.unitText).toContain("--moe-runner-backend flashinfer_cutlass \\\n");
    expect(plan.unitText).toContain("--fp4-gemm-backend flashinfer_cudnn \\\n");
    expect(plan.unitText).toContain(`TimeoutStartSec=${plan.healthTimeoutSeconds}\n`);
    expect(plan.unitDiff.split("\n").slice(0, 2)).toEqual([
      "--- /etc/systemd/system/sglang-kimi.service",
      `+++ ${plan.unitPath}`,
    ]);
    expect(plan.unitDiff).toContain("-Description=SGLang Kimi K2\n");
    expect(plan.unitDiff).toContain("+    --fp4-gemm-backend flashinfer_cudnn \\\n");
  });

  it("estimates downtime from a cold read at 1.5 GB/s and sm_120 NVFP4's 4 min start-up, and says so; the health limit 3×, ≥ 10 min", () => {
    // 223 GB at 1.5 GB/s (149 s) + 240 s: stop, start, and the NVFP4 kernels' JIT and warm-up on sm_120
    expect(plan.expectedDowntimeSeconds).toBe(Math.round(240 + plan.facts.weightBytes / 1.5e9));
    expect(plan.expectedDowntimeSeconds).toBe(389);
    expect(plan.healthTimeoutSeconds).toBe(1200);
    expect(plan.downtimeBasis).toBe(
      "223 GB of weights read cold from disk at 1.5 GB/s (2 min 30 s) + 4 min to stop, start, JIT-compile and warm up the NVFP4 kernels on sm_120",
    );
    // elsewhere the start-up is 90 s (process start, CUDA init, CUDA graph capture)
    const b200 = makePlan(planInput("qwen3.5-moe-nvfp4", "8x-b200"));
    expect(b200.expectedDowntimeSeconds).toBe(Math.round(90 + b200.facts.weightBytes / 1.5e9));
    expect(b200.downtimeBasis).toMatch(/\+ 1 min 30 s to stop, start and capture CUDA graphs$/);
    expect(healthTimeoutSeconds(1e9)).toBe(600);
    expect(expectedDowntimeSeconds(600e9)).toBeGreaterThan(expectedDowntimeSeconds(223e9));
    expect(healthTimeoutSeconds(600e9)).toBeGreaterThan(healthTimeoutSeconds(223e9));
  });
});

describe("the same model elsewhere", () => {
  it("is refused on the H200 (compute capability 9.0) by the quantization check, with a fix", () => {
    const plan = makePlan(planInput("qwen3.5-moe-nvfp4", "h200-1gpu"));
    expect(plan.ok).toBe(false);
    const quant = check(plan, "quantization");
    expect(quant.ok).toBe(false);
    expect(quant.detail).toMatch(
      /^NVFP4 \(ModelOpt NVFP4 .*\) does not run on NVIDIA H200 \(compute capability 9\.0\) with SGLang: SGLang runs it on compute capability 10\.0 or newer \(https:\/\/github\.com\/sgl-project\/sglang\/.*modelopt_quant\.py/,
    );
    // which engine or GPUs would run it: vLLM here (weight-only FP4 through Marlin), SGLang on Blackwell
    expect(quant.fix).toMatch(
      /vLLM would run it on these GPUs \(weight-only FP4 through the Marlin kernel.*this host has no vLLM/,
    );
    expect(quant.fix).toMatch(
      /SGLang runs it on B200\/B300 \(sm_100\), RTX PRO 6000 Blackwell \(sm_120\): another host with --host/,
    );
    const both = makePlan({
      ...planInput("qwen3.5-moe-nvfp4", "h200-1gpu"),
      hostEngines: ["sglang", "vllm"],
    });
    expect(check(both, "quantization").fix).toMatch(/^vLLM runs it on these GPUs .*: add --engine vllm/);
    expect(plan.checks.filter((c) => !c.ok).map((c) => c.id)).toEqual(["quantization", "vram"]);
    // 223 GB on one 141 GB GPU does not fit either, and the fix says how many it needs.
    expect(check(plan, "vram")).toMatchObject({ ok: false });
    expect(check(plan, "vram").fix).toMatch(/needs tp 2: 2 × NVIDIA H200 \(this host has 1\)/);
  });

  it("uses the SM100 recipe on 8× B200: no backend override, and says so", () => {
    const plan = makePlan(planInput("qwen3.5-moe-nvfp4", "8x-b200"));
    expect(plan.ok).toBe(true);
    expect(plan.recipe).toBe("modelopt-fp4 + nvfp4-sm100 + qwen3.5");
    expect(flag(plan, "quantization")?.value).toBe("modelopt_fp4");
    expect(flag(plan, "moe-runner-backend")).toBeUndefined();
    expect(flag(plan, "fp4-gemm-backend")).toBeUndefined();
    expect(flag(plan, "tool-call-parser")?.value).toBe("qwen3_coder");
    expect(plan.notes.join(" ")).toMatch(/SM100.*no backend override/);
  });

  it("picks the smallest power of two that fits when not every GPU can be used", () => {
    const sixGpus = gpusOf(RTX).slice(0, 6);
    const plan = makePlan(planInput("qwen3.5-moe-nvfp4", RTX, { host: { gpus: sixGpus } }));
    expect(plan.tp).toBe(4);
    expect(plan.tpReason).toMatch(
      /not all 6 GPUs: tp 6 does not divide the 32 attention heads; 4 is the smallest power of two/,
    );
    expect(plan.ok).toBe(true);
  });
});

describe("requested tp", () => {
  it("is kept and refused when it does not divide the heads, naming the tps that work", () => {
    const plan = makePlan(planInput("qwen3.5-moe-nvfp4", RTX, { requestedTp: 3 }));
    expect(plan.tp).toBe(3);
    expect(flag(plan, "tp-size")?.value).toBe("3");
    expect(plan.ok).toBe(false);
    expect(check(plan, "tp")).toMatchObject({
      ok: false,
      detail: "tp 3 does not divide the 32 attention heads",
      fix: "use --tp 4 or 8 (these split the heads and fit the weights)",
    });
  });

  it("is refused when the weights do not fit at it, or the host has fewer GPUs", () => {
    const two = makePlan(planInput("qwen3.5-moe-nvfp4", RTX, { requestedTp: 2 }));
    expect(failing(two)).toEqual(["vram"]);
    expect(check(two, "vram").detail).toMatch(/109\.0 GiB\/GPU .* does not fit/);
    const sixteen = makePlan(planInput("qwen3.5-moe-nvfp4", RTX, { requestedTp: 16 }));
    expect(sixteen.tp).toBe(16);
    expect(check(sixteen, "tp").detail).toMatch(/tp 16 needs 16 GPUs; .* × 8 on this host/);
  });

  it("is accepted as asked when valid", () => {
    const plan = makePlan(planInput("qwen3.5-moe-nvfp4", RTX, { requestedTp: 4 }));
    expect(plan.ok).toBe(true);
    expect(plan.tp).toBe(4);
    expect(plan.tpReason).toBe("requested with --tp 4");
  });
});

describe("heads and tp", () => {
  const facts = (attentionHeads: number, kvHeads: number): ModelFacts => ({
    ...factsOf("llama-bf16-small"),
    attentionHeads,
    kvHeads,
  });

  it("splits KV heads up to their number, and replicates them beyond", () => {
    expect(headsProblem(facts(32, 8), 4)).toBeUndefined();
    expect(headsProblem(facts(32, 8), 8)).toBeUndefined();
    expect(headsProblem(facts(32, 2), 8)).toBeUndefined();
    expect(headsProblem(facts(64, 8), 16)).toBeUndefined();
    expect(headsProblem(facts(48, 6), 4)).toBe("tp 4 does not divide the 6 KV heads");
    expect(headsProblem(facts(48, 6), 12)).toBeUndefined();
    expect(headsProblem(facts(48, 16), 24)).toMatch(/tp 24 is not a multiple of the 16 KV heads/);
    expect(headsProblem(facts(40, 8), 3)).toBe("tp 3 does not divide the 40 attention heads");
  });

  it("never throws on a host without GPUs", () => {
    const choice = chooseTp(factsOf("llama-bf16-small"), []);
    expect(choice.tpCheck.ok).toBe(false);
    expect(choice.vramCheck.detail).toMatch(/no GPUs/);
    const plan = makePlan(planInput("llama-bf16-small", "h200-1gpu", { host: { gpus: [] } }));
    expect(plan.ok).toBe(false);
    expect(check(plan, "quantization").ok).toBe(false);
  });
});

describe("recipes", () => {
  it("Kimi K2 INT4: kimi_k2 parsers, trust-remote-code from its files (its org trusted), no quantization flag", () => {
    const plan = makePlan(planInput("kimi-k2-int4", "8x-h200"));
    expect(plan.ok).toBe(true);
    expect(plan.recipe).toBe("kimi-k2");
    expect(flag(plan, "tool-call-parser")?.value).toBe("kimi_k2");
    expect(flag(plan, "reasoning-parser")?.value).toBe("kimi_k2");
    expect(flag(plan, "trust-remote-code")).toEqual({
      setting: "trust-remote-code",
      flag: "--trust-remote-code",
      value: undefined,
      reason:
        "the engine imports the repo's own Python, which it refuses without this flag: configuration_deepseek.py and modeling_deepseek.py (config.json auto_map), tokenization_kimi.py (tokenizer_config.json auto_map); moonshotai is trusted in hub.remoteCodeOrgs",
    });
    expect(plan.unitText).toContain("--trust-remote-code");
    expect(flag(plan, "quantization")).toBeUndefined();
    expect(plan.tp).toBe(8);
  });

  it("Kimi K2 INT4 is refused below compute capability 8.0", () => {
    const turing = gpusOf("8x-h200").map((g) => ({
      ...g,
      name: "Tesla T4",
      computeCapability: { major: 7, minor: 5 },
    }));
    const plan = makePlan(planInput("kimi-k2-int4", "8x-h200", { host: { gpus: turing } }));
    expect(check(plan, "quantization")).toMatchObject({
      ok: false,
      detail:
        "INT4 (compressed-tensors W4A16 INT4 (pack-quantized, group 32)) does not run on Tesla T4 (compute capability 7.5) with SGLang: SGLang runs it on compute capability 8.0 or newer (https://github.com/sgl-project/sglang/blob/main/python/sglang/srt/layers/quantization/compressed_tensors/schemes/compressed_tensors_wNa16.py (get_min_capability returns 80))",
    });
    expect(check(plan, "quantization").fix).toMatch(
      /SGLang runs it on A100 \(sm_80\), .*: another host with --host/,
    );
  });

  it("a dense BF16 model no recipe names plans with the engine's defaults on one GPU, and says so in one line", () => {
    const plan = makePlan(planInput("llama-bf16-small", "h200-1gpu"));
    expect(plan.ok).toBe(true);
    // Llama 3.2 1B: the llama3 recipe (its tool-call parser) applies by its repo name; a renamed copy gets none
    expect(plan.recipe).toBe("llama3");
    const renamed = makePlan({
      ...planInput("llama-bf16-small", "h200-1gpu"),
      model: { ...modelInfoOf("llama-bf16-small"), repo: "someone/tiny-chat" },
    });
    expect(renamed.recipe).toBe("engine-defaults");
    expect(plan.tp).toBe(1);
    expect(renamed.flags.map((f) => f.setting)).toEqual([
      "model-path",
      "served-model-name",
      "host",
      "port",
      "tp-size",
    ]);
    expect(renamed.notes[0]).toBe(
      "No known-good recipe for LlamaForCausalLM, model_type llama: engine defaults; the sanity gate decides.",
    );
    expect(check(renamed, "recipe")).toMatchObject({ ok: true });
    expect(plan.notes.join(" ")).not.toMatch(/No known-good recipe/);
  });

  it("FP8 on compute capability 8.0 runs as weight-only Marlin, and the plan says how", () => {
    const ampere = gpusOf("8x-h200").map((g) => ({
      ...g,
      name: "NVIDIA A100",
      computeCapability: { major: 8, minor: 0 },
    }));
    const plan = makePlan(
      planInput("llama-bf16-small", "8x-h200", {
        host: { gpus: ampere },
        facts: { quantization: "fp8", quant: undefined },
      }),
    );
    expect(check(plan, "quantization")).toMatchObject({
      ok: true,
      detail: expect.stringMatching(
        /^FP8 runs on NVIDIA A100 \(compute capability 8\.0\) with SGLang: weight-only FP8 \(W8A16\) through Marlin/,
      ),
    });
  });

  it("an NVFP4 model no recipe names is planned, not refused: the format's and the GPU's recipes, engine defaults for the rest", () => {
    // was refused before issue 28: "no known-good recipe for deepseek-v3 NVFP4 on sm_120"
    const plan = makePlan(
      planInput("qwen3.5-moe-nvfp4", RTX, {
        facts: {
          family: "deepseek-v3",
          architecture: "DeepseekV3ForCausalLM",
          modelType: "deepseek_v3",
          textModelType: undefined,
        },
      }),
    );
    expect(plan.ok).toBe(true);
    expect(plan.recipe).toBe("modelopt-fp4 + nvfp4-sm120-sglang-moe + nvfp4-sm120-sglang");
    expect(flag(plan, "quantization")?.value).toBe("modelopt_fp4");
    expect(flag(plan, "moe-runner-backend")).toMatchObject({
      value: "flashinfer_cutlass",
      from: "recipe nvfp4-sm120-sglang-moe",
    });
    expect(flag(plan, "tool-call-parser")).toBeUndefined();
    expect(plan.notes[0]).toBe(
      "No known-good recipe for DeepseekV3ForCausalLM, model_type deepseek_v3: engine defaults; the sanity gate decides.",
    );
  });
});

describe("host checks", () => {
  it("refuses too little disk, counting the margin for shards hf restarts from 0", () => {
    const plan = makePlan(planInput("qwen3.5-moe-nvfp4", RTX, { host: { freeDiskBytes: 250e9 } }));
    expect(failing(plan)).toEqual(["disk"]);
    const disk = check(plan, "disk");
    expect(disk.detail).toMatch(
      /^223 GB to fetch \+ 96\.4 GB margin: 8 parallel downloads × 12\.1 GB largest shard/,
    );
    expect(disk.detail).toMatch(/restarts an interrupted shard from 0/);
    expect(disk.detail).toMatch(/250 GB free at \/models: 69\.4 GB short$/);
    expect(disk.fix).toMatch(/free at least 69\.4 GB in \/models/);
  });

  it("needs no room for what is already on disk", () => {
    const model = modelInfoOf("qwen3.5-moe-nvfp4");
    const plan = makePlan(
      planInput("qwen3.5-moe-nvfp4", RTX, { host: { freeDiskBytes: 1e9, bytesOnDisk: model.totalBytes } }),
    );
    expect(check(plan, "disk")).toMatchObject({ ok: true });
    expect(check(plan, "disk").detail).toMatch(
      /^0 B to fetch \(223 GB already there\) \+ nothing left to fetch/,
    );
  });

  it("refuses a host without the hf CLI, and explains that huggingface-cli no longer works", () => {
    const none = makePlan(planInput("llama-bf16-small", "h200-1gpu", { host: { hubCli: undefined } }));
    expect(check(none, "hub-cli")).toMatchObject({
      ok: false,
      detail: "no Hugging Face CLI (hf) on the host",
    });
    expect(check(none, "hub-cli").fix).toMatch(/^pip install -U huggingface_hub .* gives the hf command/);
    const old = makePlan(planInput("llama-bf16-small", "h200-1gpu", { host: { hubCli: "huggingface-cli" } }));
    expect(check(old, "hub-cli").ok).toBe(false);
    expect(check(old, "hub-cli").detail).toMatch(/deprecated and no longer works in huggingface_hub 1\.x/);
  });

  it("refuses a missing engine venv", () => {
    const plan = makePlan(planInput("llama-bf16-small", "h200-1gpu", { host: { venvOk: false } }));
    expect(check(plan, "venv")).toMatchObject({ ok: false });
    expect(check(plan, "venv").fix).toMatch(/python3 -m venv \/opt\/sglang\/\.venv/);
  });

  it("diffs against nothing when no unit serves yet, and says so", () => {
    const plan = makePlan(
      planInput("llama-bf16-small", "h200-1gpu", {
        host: {
          currentUnit: { name: "sglang.service", exists: false, active: false, text: "", execStart: [] },
        },
      }),
    );
    const lines = plan.unitDiff.split("\n");
    expect(lines.slice(0, 3)).toEqual([
      "--- /dev/null",
      `+++ ${plan.unitPath}`,
      `@@ -0,0 +1,${plan.unitText.split("\n").length - 1} @@`,
    ]);
  });
});

describe("on the bench: weight files served at 1/32768 of their size (bench.weightScale)", () => {
  const SCALE = 32768; // the bench's BENCH_WEIGHT_SCALE
  /** The plan of the Hub's scaled-down copy, told the scale (or not). */
  const scaled = (set: string, weightScale: number | undefined, host: Partial<HostFacts> = {}) => {
    const model = modelInfoOf("qwen3.5-moe-nvfp4", { scale: SCALE });
    const input = planInput("qwen3.5-moe-nvfp4", set, { host });
    return makePlan({
      ...input,
      model,
      facts: { ...input.facts, weightBytes: model.weightBytes },
      ...(weightScale === undefined ? {} : { weightScale }),
    });
  };
  const real = makePlan(planInput("qwen3.5-moe-nvfp4", RTX));

  it("plans the 6.8 MB copy exactly as the real 223 GB model: tp, VRAM, disk, downtime, hierarchical cache", () => {
    const plan = scaled(RTX, SCALE);
    expect(plan.model.weightBytes).toBeLessThan(7e6);
    expect(plan.weightScale).toBe(SCALE);
    expect(plan.tp).toBe(8);
    expect(plan.tpReason).toBe(real.tpReason);
    for (const id of ["vram", "tp", "disk"]) expect(check(plan, id)).toEqual(check(real, id));
    expect(check(plan, "vram").detail).toContain("27.3 GiB/GPU of weights at tp 8 (207.7 GiB ÷ 8 + 5%)");
    expect(check(plan, "disk").detail).toMatch(/^223 GB to fetch \+ 96\.4 GB margin: 8 parallel downloads/);
    expect(Math.abs(plan.expectedDowntimeSeconds - real.expectedDowntimeSeconds)).toBeLessThanOrEqual(1);
    expect(plan.downtimeBasis).toBe(real.downtimeBasis);
    expect(plan.healthTimeoutSeconds).toBe(real.healthTimeoutSeconds);
    expect(plan.flags).toEqual(real.flags);
    // the facts kept are the Hub's: what the download moves and verifies
    expect(plan.facts.weightBytes).toBe(plan.model.weightBytes);
  });

  it("without the scale, plans the served bytes (what the demo showed before the scale: MiB/GPU, MB)", () => {
    const plan = scaled(RTX, undefined);
    expect(plan.weightScale).toBeUndefined();
    expect(check(plan, "vram").detail).toMatch(/^0\.\d MiB\/GPU of weights at tp 8/);
    expect(check(plan, "disk").detail).toMatch(/^6\.\d MB to fetch/);
    expect(plan.expectedDowntimeSeconds).toBe(240);
  });

  it("refuses a disk too small for the real model although the scaled files would fit", () => {
    const plan = scaled(RTX, SCALE, { freeDiskBytes: 250e9 });
    expect(failing(plan)).toEqual(["disk"]);
    expect(check(plan, "disk").detail).toMatch(/250 GB free at \/models: 69\.4 GB short$/);
    expect(scaled(RTX, undefined, { freeDiskBytes: 250e9 }).ok).toBe(true);
  });

  it("counts bytes already on disk at the real scale", () => {
    const model = modelInfoOf("qwen3.5-moe-nvfp4", { scale: SCALE });
    const plan = scaled(RTX, SCALE, { freeDiskBytes: 1e9, bytesOnDisk: model.totalBytes });
    expect(check(plan, "disk")).toMatchObject({ ok: true });
    expect(check(plan, "disk").detail).toMatch(/^0 B to fetch \(223 GB already there\)/);
  });
});

describe("recipes.overrides from the config", () => {
  it("sets, adds and removes a known recipe's settings, each saying so in the plan", () => {
    const plan = makePlan({
      ...planInput("qwen3.5-moe-nvfp4", RTX),
      recipeOverrides: [
        {
          recipe: "nvfp4-sm120-sglang",
          set: { "fp4-gemm-backend": "flashinfer_cutlass", "disable-cuda-graph": true },
          remove: ["tool-call-parser"],
          reason: "cudnn answers NaN on engine 0.5.7",
        },
        {
          recipe: "gpt-oss",
          set: { "kv-cache-dtype": "fp8_e5m2" },
          remove: [],
          reason: "not this one",
        },
      ],
    });
    expect(flag(plan, "fp4-gemm-backend")).toMatchObject({
      value: "flashinfer_cutlass",
      reason: expect.stringMatching(
        /^config override \(recipes\.overrides\): cudnn answers NaN on engine 0\.5\.7; the recipe had flashinfer_cudnn/,
      ),
    });
    expect(flag(plan, "disable-cuda-graph")).toMatchObject({
      flag: "--disable-cuda-graph",
      value: undefined,
    });
    expect(flag(plan, "tool-call-parser")).toBeUndefined();
    expect(flag(plan, "kv-cache-dtype")).toBeUndefined();
    expect(plan.unitText).toContain("--fp4-gemm-backend flashinfer_cutlass");
    expect(plan.unitText).not.toContain("--tool-call-parser");
  });
});

describe("blue/green sharing the old model's GPUs (it holds 43 GiB of each, started at mem-fraction 0.45)", () => {
  const shared = (restartAtFullMemory: boolean, recipeOverrides: PlanInput["recipeOverrides"] = []) => {
    const gpus = gpusOf(RTX).map((g) => ({
      ...g,
      memoryUsedMiB: 43 * 1024,
      memoryFreeMiB: g.memoryFreeMiB - 43 * 1024,
    }));
    return makePlan({
      ...planInput("qwen3.5-moe-nvfp4", RTX, { host: { gpus } }),
      clients: {
        mode: "cold",
        drainSeconds: 60,
        frontDoor: { server: "blue", from: "blue", hold: "hold", holdSeconds: 300 },
      },
      blueGreen: {
        standby: { server: "green", port: 30001 },
        sharedBenchmark: "after-flip",
        flipBackSeconds: 300,
        restartAtFullMemory,
      },
      recipeOverrides,
    });
  };

  it("starts the new unit with a --mem-fraction-static of the memory the old one leaves, and says why", () => {
    const plan = shared(false);
    const bg = plan.clients?.blueGreen;
    expect(bg?.gpus).toBe("shared");
    const fraction = flag(plan, "mem-fraction-static");
    expect(fraction?.value).toBe(String(bg?.memFractionStatic));
    expect(fraction?.reason).toMatch(/SGLang applies it to the memory free at its start/);
    expect(plan.unitText).toContain(`--mem-fraction-static ${bg?.memFractionStatic}`);
    expect(bg?.restart).toBeUndefined();
    expect(JSON.stringify(renderPlan(plan, AWAITING))).toMatch(/alone\) until its next restart\./);
  });

  it("with swaps.restartAtFullMemory, the plan carries the unit it restarts with once the old one stops", () => {
    const plan = shared(true);
    const restart = plan.clients?.blueGreen?.restart;
    expect(restart?.unitText).toContain("--tp-size 8");
    expect(restart?.unitText).not.toContain("--mem-fraction-static");
    expect(restart?.unitText.replace(/ \\\n {4}--mem-fraction-static [\d.]+/, "")).toBe(restart?.unitText);
    expect(plan.unitText.replace(/ \\\n {4}--mem-fraction-static [\d.]+/, "")).toBe(restart?.unitText);
    expect(JSON.stringify(renderPlan(plan, AWAITING))).toMatch(
      /once the old one has stopped, it restarts at full memory \(swaps\.restartAtFullMemory\) behind the front door's hold: new requests wait for its load \(about (\d+ min )?\d+ (s|min)(, longer than the hold's 5 min: requests past it get 503)?\), none fails/,
    );
  });

  it("a fraction the config sets is replaced beside the old unit, and restored by the restart", () => {
    const recipe = "qwen3.5";
    const plan = shared(true, [
      { recipe, set: { "mem-fraction-static": "0.9" }, remove: [], reason: "a bigger KV cache" },
    ]);
    const fractions = plan.flags.filter((f) => f.setting === "mem-fraction-static");
    expect(fractions).toHaveLength(1);
    expect(fractions[0]?.value).not.toBe("0.9");
    expect(fractions[0]?.reason).toMatch(/instead of 0\.9 \(config override/);
    expect(plan.clients?.blueGreen?.restart?.unitText).toContain("--mem-fraction-static 0.9");
  });
});

describe("the model repo's Python (issue 27 §3): decided from its files, allowed per org, never by a recipe", () => {
  const KIMI_CODE = factsOf("kimi-k2-int4").remoteCode!;
  const TOKENIZER_ONLY = {
    ...KIMI_CODE,
    files: [{ file: "tokenization_kimi.py", namedBy: ["tokenizer_config.json"] }],
  };

  it("a Kimi K2 repo whose files name no code: no --trust-remote-code, whatever its recipe", () => {
    const plan = makePlan(
      planInput("kimi-k2-int4", "8x-h200", { facts: { needsRemoteCode: false, remoteCode: undefined } }),
    );
    expect(plan.ok).toBe(true);
    expect(plan.recipe).toBe("kimi-k2");
    expect(flag(plan, "trust-remote-code")).toBeUndefined();
    expect(plan.unitText).not.toContain("trust-remote-code");
    expect(plan.checks.map((c) => c.id)).not.toContain("remote-code");
  });

  it("code only tokenizer_config.json names, from an org not in hub.remoteCodeOrgs: refused, naming the file; no flag", () => {
    const plan = makePlan(
      planInput("kimi-k2-int4", "8x-h200", { facts: { remoteCode: TOKENIZER_ONLY }, remoteCodeOrgs: [] }),
    );
    expect(plan.ok).toBe(false);
    expect(check(plan, "remote-code")).toEqual({
      id: "remote-code",
      ok: false,
      detail:
        "runs Python from the model repo: tokenization_kimi.py (tokenizer_config.json auto_map), and moonshotai is not in hub.remoteCodeOrgs",
      fix: "read the .py files named here in the repo; if you trust moonshotai to run code on the host, an admin adds it to hub.remoteCodeOrgs",
    });
    expect(flag(plan, "trust-remote-code")).toBeUndefined();
    expect(plan.unitText).not.toContain("trust-remote-code");
  });

  it("code of another repo needs that repo's org trusted too, and says whose it is", () => {
    const remoteCode = {
      ...KIMI_CODE,
      files: [
        ...KIMI_CODE.files,
        { file: "modeling_x.py", repo: "other-org/base", namedBy: ["config.json"] },
      ],
      otherRepos: ["other-org/base"],
    };
    const refused = makePlan(planInput("kimi-k2-int4", "8x-h200", { facts: { remoteCode } }));
    expect(check(refused, "remote-code")).toMatchObject({
      ok: false,
      detail: expect.stringMatching(
        /modeling_x\.py of other-org\/base \(config\.json auto_map; another repo's code, at its main branch\), and other-org is not in hub\.remoteCodeOrgs$/,
      ),
      fix: "read the .py files named here in the repo (and of other-org/base); if you trust other-org to run code on the host, an admin adds it to hub.remoteCodeOrgs",
    });
    expect(flag(refused, "trust-remote-code")).toBeUndefined();
    const both = makePlan(
      planInput("kimi-k2-int4", "8x-h200", {
        facts: { remoteCode },
        remoteCodeOrgs: ["moonshotai", "Other-Org"],
      }),
    );
    expect(check(both, "remote-code")).toMatchObject({ ok: true });
    expect(check(both, "remote-code").detail).toMatch(
      /moonshotai and other-org are trusted in hub\.remoteCodeOrgs$/,
    );
    expect(flag(both, "trust-remote-code")?.flag).toBe("--trust-remote-code");
  });

  it("refuses an auto_map entry it cannot read: the plan could not say what would run", () => {
    const remoteCode = { ...KIMI_CODE, unreadable: ['"a.b.C" (config.json auto_map)'] };
    const plan = makePlan(planInput("kimi-k2-int4", "8x-h200", { facts: { remoteCode } }));
    expect(check(plan, "remote-code")).toMatchObject({
      ok: false,
      detail: expect.stringMatching(
        /code modelswap cannot name: "a\.b\.C" \(config\.json auto_map\): an auto_map entry is not a module\.Class/,
      ),
    });
    expect(flag(plan, "trust-remote-code")).toBeUndefined();
  });

  it("never from a Hub pull request, even of a trusted org", () => {
    const input = planInput("kimi-k2-int4", "8x-h200");
    const plan = makePlan({ ...input, model: { ...input.model, revision: "refs/pr/3" } });
    expect(check(plan, "remote-code").detail).toMatch(
      /, and this revision is Hub pull request #3: anyone's code$/,
    );
    expect(flag(plan, "trust-remote-code")).toBeUndefined();
  });

  it("a swap resolved before the files were named (needsRemoteCode alone) is refused until requested again", () => {
    const plan = makePlan(
      planInput("kimi-k2-int4", "8x-h200", { facts: { needsRemoteCode: true, remoteCode: undefined } }),
    );
    expect(check(plan, "remote-code")).toMatchObject({
      ok: false,
      fix: "request the swap again: it reads every config of the repo and names the files that would run",
    });
    expect(flag(plan, "trust-remote-code")).toBeUndefined();
  });

  it("neither a recipe nor an override adds it: a recipe table that tries is ignored", () => {
    const input = planInput("llama-bf16-small", "h200-1gpu");
    const plan = makePlan({
      ...input,
      recipes: [
        {
          id: "anything",
          title:
            "a recipe that asks for remote code (the schema refuses it; a table built in code is not parsed)",
          match: {},
          flags: [
            { setting: "trust-remote-code", value: true, reason: "the family needs it", source: "hearsay" },
          ],
          env: [],
          notes: [],
        },
      ],
      recipeOverrides: [
        { recipe: "anything", set: { "trust-remote-code": true }, remove: [], reason: "trust me" },
      ],
    });
    expect(plan.ok).toBe(true);
    expect(flag(plan, "trust-remote-code")).toBeUndefined();
    expect(plan.unitText).not.toContain("trust-remote-code");
  });
});
