import { readdirSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { readLocal } from "../../src/cli/recipes-command.ts";
import type { EngineKind } from "../../src/engine/engine-kind.ts";
import type { ModelInfo } from "../../src/hub/types.ts";
import { applyFlagSpellings, parseHelpOptions } from "../../src/plan/flag-spellings.ts";
import { makePlan } from "../../src/plan/make-plan.ts";
import { modelFacts } from "../../src/plan/model-facts.ts";
import type { SwapPlan } from "../../src/plan/types.ts";
import { ENGINE_HELP } from "../support/engine-help.ts";
import { ENGINE_MAIN, hostFactsOf } from "./plan-fixtures.ts";

/*
 * Real configurations (test/fixtures/model-configs/, their sources in its README) against every GPU kind
 * of the bench, with both engines (issue 28 §6): each is planned with the right tp and flags the build's
 * --help accepts, or refused for the right reason. A plan the engine's own --help would refuse counts as
 * refused here too: every accepted plan is checked against the simulated engines' --help tables.
 */

const ROOT = new URL("../fixtures/model-configs/", import.meta.url).pathname;
const KINDS = ["h200-1gpu", "8x-h200", "8x-rtx-pro-6000-blackwell", "8x-b200", "8x-a100"] as const;
const RTX = "8x-rtx-pro-6000-blackwell";

/**
 * [repo, format, per GPU kind in KINDS' order: "tpN" (planned with tp N) or "✗check,check" (refused by those
 * checks); "sglang|vllm" where the engines differ]. Reasons, by row: vram: the weights (or, for vLLM, the
 * model's whole context beside them) do not fit; quantization: the compatibility table has no row for the
 * format there (NVFP4 with SGLang below sm_100; FP8 MoE with SGLang on sm_80; HQQ with SGLang).
 */
const EXPECTED: Array<[string, string, string]> = [
  // InternVL nests its language model under llm_config (it was MODEL_CONFIG_UNSUPPORTED before issue 28)
  ["OpenGVLab/InternVL3-8B", "bf16", "tp1 tp1 tp1 tp1 tp1"],
  ["MiniMaxAI/MiniMax-M2", "fp8", "✗vram tp8 tp8 tp8 ✗quantization|tp8"],
  ["Qwen/Qwen3-Next-80B-A3B-Instruct", "bf16", "✗vram tp8 tp8 tp8 tp8"],
  ["meta-llama/Llama-4-Scout-17B-16E-Instruct", "bf16", "✗vram tp8 tp8|✗vram tp8 tp8|✗vram"],
  ["mistralai/Mistral-Small-3.2-24B-Instruct-2506", "bf16", "tp1 tp8 tp8 tp8 tp8"],
  ["Qwen/Qwen2.5-32B-Instruct-GPTQ-Int4", "int4", "tp1 tp8 tp8 tp8 tp8"],
  ["Qwen/Qwen2.5-72B-Instruct-AWQ", "int4", "tp1 tp8 tp8 tp8 tp8"],
  ["Qwen/Qwen2.5-7B-Instruct-AWQ", "int4", "tp1 tp1 tp1 tp1 tp1"],
  ["Qwen/Qwen2.5-7B-Instruct-GPTQ-Int8", "int8", "tp1 tp1 tp1 tp1 tp1"],
  ["Qwen/Qwen3-235B-A22B-FP8", "fp8", "✗vram tp8 tp8 tp8 ✗quantization|tp8"],
  ["Qwen/Qwen3-30B-A3B", "bf16", "tp1 tp8 tp8 tp8 tp8"],
  ["Qwen/Qwen3-32B", "bf16", "tp1 tp8 tp8 tp8 tp8"],
  ["Qwen/Qwen3-8B", "bf16", "tp1 tp8 tp8 tp8 tp8"],
  ["Qwen/Qwen3-Coder-480B-A35B-Instruct-FP8", "fp8", "✗vram tp8 tp8 tp8 ✗quantization|tp8"],
  ["RedHatAI/Meta-Llama-3.1-70B-Instruct-quantized.w8a8", "int8", "tp1 tp8 tp8 tp8 tp8"],
  ["RedHatAI/Meta-Llama-3.1-8B-Instruct-FP8", "fp8", "tp1 tp8 tp8 tp8 tp8"],
  ["RedHatAI/Meta-Llama-3.1-8B-Instruct-quantized.w4a16", "int4", "tp1 tp8 tp8 tp8 tp8"],
  ["RedHatAI/Qwen3-32B-NVFP4", "nvfp4", "✗quantization|tp1 ✗quantization|tp8 tp8 tp8 ✗quantization|tp8"],
  ["deepseek-ai/DeepSeek-R1-0528", "fp8", "✗vram tp8 ✗vram tp8 ✗quantization,vram|✗vram"],
  ["deepseek-ai/DeepSeek-R1-Distill-Qwen-32B", "bf16", "tp1 tp8 tp8 tp8 tp8"],
  ["deepseek-ai/DeepSeek-V3-0324", "fp8", "✗vram tp8 ✗vram tp8 ✗quantization,vram|✗vram"],
  ["google/gemma-3-27b-it", "bf16", "tp1 tp8 tp8 tp8 tp8"],
  ["hugging-quants/Meta-Llama-3.1-70B-Instruct-AWQ-INT4", "int4", "tp1 tp8 tp8 tp8 tp8"],
  ["meta-llama/Llama-3.1-405B-Instruct-FP8", "fp8", "✗vram tp8 tp8 tp8 tp8"],
  ["meta-llama/Llama-3.1-8B-Instruct", "bf16", "tp1 tp8 tp8 tp8 tp8"],
  ["meta-llama/Llama-3.3-70B-Instruct", "bf16", "✗vram tp8 tp8 tp8 tp8"],
  ["microsoft/phi-4", "bf16", "tp1 tp1 tp1 tp1 tp1"],
  ["mistralai/Mistral-7B-Instruct-v0.3", "bf16", "tp1 tp8 tp8 tp8 tp8"],
  ["mistralai/Mixtral-8x7B-Instruct-v0.1", "bf16", "tp1 tp8 tp8 tp8 tp8"],
  // 4-bit HQQ: vLLM serves it (HQQ Marlin); SGLang has no HQQ method (it was refused for both before)
  [
    "mobiuslabsgmbh/Llama-3.1-8b-instruct_4bitgs64_hqq_calib",
    "int4",
    "✗quantization|tp1 ✗quantization|tp8 ✗quantization|tp8 ✗quantization|tp8 ✗quantization|tp8",
  ],
  ["moonshotai/Kimi-K2-Instruct", "fp8", "✗vram ✗vram ✗vram tp8 ✗quantization,vram|✗vram"],
  ["moonshotai/Kimi-K2-Thinking", "int4", "✗vram tp8 tp8|✗vram tp8 ✗vram"],
  ["moonshotai/Kimi-K2.5", "int4", "✗vram tp8 tp8|✗vram tp8 ✗vram"],
  [
    "nvidia/DeepSeek-R1-0528-FP4",
    "nvfp4",
    "✗quantization,vram|✗vram ✗quantization|tp8 tp8 tp8 ✗quantization|tp8",
  ],
  [
    "nvidia/Llama-3.3-70B-Instruct-FP4",
    "nvfp4",
    "✗quantization|tp1 ✗quantization|tp8 tp8 tp8 ✗quantization|tp8",
  ],
  ["nvidia/Llama-3.3-70B-Instruct-FP8", "fp8", "tp1 tp8 tp8 tp8 tp8"],
  [
    "nvidia/Qwen3-235B-A22B-FP4",
    "nvfp4",
    "✗quantization,vram|✗vram ✗quantization|tp8 tp8 tp8 ✗quantization|tp8",
  ],
  ["openai/gpt-oss-120b", "mxfp4", "tp1 tp8 tp8 tp8 tp8"],
  ["openai/gpt-oss-20b", "mxfp4", "tp1 tp8 tp8 tp8 tp8"],
  ["openai-community/gpt2", "fp32", "tp1 tp1 tp1 tp1 tp1"],
  ["unsloth/Meta-Llama-3.1-8B-Instruct-bnb-4bit", "int4", "tp1 tp8 tp8 tp8 tp8"],
  ["zai-org/GLM-4.5-Air", "bf16", "✗vram tp8 tp8 tp8 tp8"],
  ["zai-org/GLM-4.5-Air-FP8", "fp8", "tp1|✗vram tp8 tp8 tp8 ✗quantization|tp8"],
];

const load = (repo: string): ModelInfo => readLocal(`${ROOT}${repo.replace("/", "--")}`);

function plan(info: ModelInfo, set: string, engine: EngineKind): SwapPlan {
  const host = hostFactsOf(set);
  const facts = modelFacts(info);
  const made = makePlan({
    model: info,
    facts,
    host,
    hostConfig: {
      name: host.host,
      modelsDir: "/models",
      venv: `/opt/${engine}/.venv`,
      unitDir: "/etc/systemd/system",
      servingPort: 30000,
      currentUnit: "sglang-kimi.service",
    },
    swapId: "sw-20261129-0001",
    engine: ENGINE_MAIN,
    engineKind: engine,
    hostEngines: ["sglang", "vllm"],
    remoteCodeOrgs: [info.repo.split("/")[0]!],
  });
  // the flags as the build spells them: checked against the engine's own --help
  const options = parseHelpOptions(ENGINE_HELP[engine]);
  return applyFlagSpellings(made, new Set(options.keys()), options);
}

const outcome = (p: SwapPlan) => {
  const failing = p.checks.filter((c) => !c.ok).map((c) => c.id);
  return failing.length === 0 ? `tp${p.tp}` : `✗${failing.join(",")}`;
};
const flag = (p: SwapPlan, setting: string) => p.flags.find((f) => f.setting === setting);

describe("real configurations × the bench's GPU kinds × both engines", () => {
  it("has a fixture for each row, and a row for each fixture", () => {
    const dirs = readdirSync(ROOT).filter((d) => d.includes("--"));
    expect(dirs.map((d) => d.replace("--", "/")).sort()).toEqual(EXPECTED.map(([repo]) => repo).sort());
    expect(EXPECTED.length).toBeGreaterThanOrEqual(35);
  });

  for (const [repo, format, row] of EXPECTED) {
    it(`${repo} (${format})`, () => {
      const info = load(repo);
      expect(modelFacts(info).quantization).toBe(format);
      const cells = row.split(" ");
      KINDS.forEach((set, i) => {
        const [sglang, vllm = sglang] = cells[i]!.split("|");
        expect(outcome(plan(info, set, "sglang")), `${set} sglang`).toBe(sglang);
        expect(outcome(plan(info, set, "vllm")), `${set} vllm`).toBe(vllm);
      });
    });
  }
});

describe("what the accepted plans say, and why the refused ones are refused", () => {
  it("gpt-oss-120b (MXFP4) on 8× RTX PRO 6000: no quantization flag (the engines read it), the harmony parsers", () => {
    const info = load("openai/gpt-oss-120b");
    const s = plan(info, RTX, "sglang");
    expect(s.ok).toBe(true);
    expect(flag(s, "quantization")).toBeUndefined();
    expect(flag(s, "tool-call-parser")).toMatchObject({ flag: "--tool-call-parser", value: "gpt-oss" });
    expect(flag(s, "reasoning-parser")?.value).toBe("gpt-oss");
    expect(s.checks.find((c) => c.id === "quantization")?.detail).toMatch(
      /^MXFP4 .* runs on .* with SGLang: MXFP4 MoE/,
    );
    const v = plan(info, RTX, "vllm");
    expect(flag(v, "tool-call-parser")?.value).toBe("openai");
    expect(flag(v, "enable-auto-tool-choice")).toMatchObject({ from: "engine (vLLM)" });
    expect(flag(v, "reasoning-parser")?.value).toBe("gpt_oss");
    expect(v.checks.find((c) => c.id === "flags")).toMatchObject({ ok: true });
  });

  it("NVFP4 Llama 3.3 70B on 8× RTX PRO 6000: modelopt_fp4 and the SM120 FP4 GEMM, no MoE backend (a dense model)", () => {
    const info = load("nvidia/Llama-3.3-70B-Instruct-FP4");
    const s = plan(info, RTX, "sglang");
    expect(s.recipe).toBe("modelopt-fp4 + nvfp4-sm120-sglang + llama3");
    expect(flag(s, "quantization")?.value).toBe("modelopt_fp4");
    expect(flag(s, "fp4-gemm-backend")?.value).toBe("flashinfer_cudnn");
    expect(flag(s, "moe-runner-backend")).toBeUndefined();
    expect(flag(s, "tool-call-parser")?.value).toBe("llama3");
    const v = plan(info, RTX, "vllm");
    expect(v.env ?? []).toEqual([]);
    expect(flag(v, "tool-call-parser")?.value).toBe("llama3_json");
    // on Hopper: SGLang cannot, vLLM can (weight-only through Marlin), and the refusal says so
    const h = plan(info, "8x-h200", "sglang");
    expect(h.checks.find((c) => c.id === "quantization")?.fix).toMatch(
      /^vLLM runs it on these GPUs \(weight-only FP4 through the Marlin kernel/,
    );
  });

  it("an AWQ Qwen and a compressed-tensors W4A16 Llama on 8× RTX PRO 6000: no quantization flag, engine defaults said in one line", () => {
    const awq = plan(load("Qwen/Qwen2.5-72B-Instruct-AWQ"), RTX, "sglang");
    expect(awq.ok).toBe(true);
    expect(awq.recipe).toBe("engine-defaults");
    expect(flag(awq, "quantization")).toBeUndefined();
    expect(awq.notes[0]).toBe(
      "No known-good recipe for Qwen2ForCausalLM, model_type qwen2: engine defaults; the sanity gate decides.",
    );
    const w4a16 = plan(load("RedHatAI/Meta-Llama-3.1-8B-Instruct-quantized.w4a16"), RTX, "vllm");
    expect(w4a16.ok).toBe(true);
    expect(w4a16.facts.quant?.description).toBe("compressed-tensors W4A16 INT4 (pack-quantized, group 128)");
    expect(w4a16.recipe).toBe("llama3");
  });

  it("ModelOpt FP8 gets --quantization modelopt_fp8 with SGLang (it was planned without), modelopt with vLLM", () => {
    const info = load("nvidia/Llama-3.3-70B-Instruct-FP8");
    expect(flag(plan(info, "8x-h200", "sglang"), "quantization")?.value).toBe("modelopt_fp8");
    expect(flag(plan(info, "8x-h200", "vllm"), "quantization")?.value).toBe("modelopt");
  });

  it("FP8 on 8× A100: weight-only Marlin with vLLM, and with SGLang for dense models only (its FP8 MoE has no Marlin path)", () => {
    const moe = load("Qwen/Qwen3-235B-A22B-FP8");
    expect(plan(moe, "8x-a100", "vllm").checks.find((c) => c.id === "quantization")?.detail).toMatch(
      /weight-only FP8 \(W8A16\) through Marlin/,
    );
    expect(plan(moe, "8x-a100", "sglang").checks.find((c) => c.id === "quantization")?.fix).toMatch(
      /^vLLM runs it on these GPUs \(weight-only FP8 \(W8A16\) through Marlin\): add --engine vllm/,
    );
    expect(plan(load("nvidia/Llama-3.3-70B-Instruct-FP8"), "8x-a100", "sglang").ok).toBe(true);
  });

  it("Kimi-K2.5 (model_type kimi_k25, its text config kimi_k2) on its own RTX PRO 6000 host: kimi_k2 parsers, its code from trusted files", () => {
    const p = plan(load("moonshotai/Kimi-K2.5"), RTX, "sglang");
    expect(p.ok).toBe(true);
    expect(p.recipe).toBe("kimi-k2");
    expect(flag(p, "tool-call-parser")?.value).toBe("kimi_k2");
    expect(flag(p, "trust-remote-code")?.reason).toMatch(/configuration_kimi_k25\.py/);
    // vLLM must hold the whole 262144-token context beside 72 GiB/GPU of weights: refused, with the context that fits
    const v = plan(load("moonshotai/Kimi-K2.5"), RTX, "vllm");
    expect(v.checks.find((c) => c.id === "vram")?.fix).toMatch(/set context-length to [0-9]+ or less/);
  });

  it("a hybrid model's long context counts only its full-attention layers: Llama 4 Scout's 10M tokens fit vLLM on 8× H200, not on 8× RTX PRO 6000", () => {
    const scout = load("meta-llama/Llama-4-Scout-17B-16E-Instruct");
    expect(modelFacts(scout)).toMatchObject({ layers: 48, fullAttentionLayers: 12, maxContext: 10485760 });
    const h200 = plan(scout, "8x-h200", "vllm");
    expect(h200.checks.find((c) => c.id === "vram")?.detail).toMatch(
      /one 10485760-token sequence \(the model's whole context/,
    );
    const rtx = plan(scout, RTX, "vllm");
    expect(rtx.checks.find((c) => c.id === "vram")?.fix).toMatch(
      /about [0-9]+ tokens do: set context-length to/,
    );
    expect(modelFacts(load("Qwen/Qwen3-Next-80B-A3B-Instruct")).fullAttentionLayers).toBe(12);
    expect(modelFacts(load("openai/gpt-oss-120b")).fullAttentionLayers).toBe(18);
  });

  it("MiniMax-M2: its own parsers, spelled per engine", () => {
    const m = load("MiniMaxAI/MiniMax-M2");
    expect(flag(plan(m, "8x-b200", "sglang"), "reasoning-parser")?.value).toBe("minimax-append-think");
    expect(flag(plan(m, "8x-b200", "vllm"), "tool-call-parser")?.value).toBe("minimax_m2");
  });

  it("phi-4's empty auto_map names no code: no --trust-remote-code", () => {
    expect(flag(plan(load("microsoft/phi-4"), "8x-h200", "sglang"), "trust-remote-code")).toBeUndefined();
  });

  it("bitsandbytes: --quantization bitsandbytes, and SGLang's bitsandbytes loader", () => {
    const s = plan(load("unsloth/Meta-Llama-3.1-8B-Instruct-bnb-4bit"), "8x-h200", "sglang");
    expect(flag(s, "quantization")?.value).toBe("bitsandbytes");
    expect(flag(s, "load-format")?.value).toBe("bitsandbytes");
    expect(
      flag(plan(load("unsloth/Meta-Llama-3.1-8B-Instruct-bnb-4bit"), "8x-h200", "vllm"), "load-format"),
    ).toBeUndefined();
  });

  it("4-bit HQQ: vLLM serves it through HQQ Marlin; SGLang has no HQQ method, and its refusal sends it to vLLM", () => {
    const info = load("mobiuslabsgmbh/Llama-3.1-8b-instruct_4bitgs64_hqq_calib");
    expect(modelFacts(info).quant).toMatchObject({ format: "int4", method: "hqq", groupSize: 64 });
    expect(plan(info, RTX, "vllm").ok).toBe(true);
    expect(plan(info, RTX, "sglang").checks.find((c) => c.id === "quantization")).toMatchObject({
      ok: false,
      detail: expect.stringMatching(/with SGLang: SGLang does not serve it at all$/),
      fix: expect.stringMatching(
        /^vLLM runs it on these GPUs \(4-bit HQQ weights through vLLM's HQQ Marlin kernels\): add --engine vllm/,
      ),
    });
  });

  it("a format modelswap cannot read (exl2) is refused, naming what was read and where; an admin's own compatibility row lets it be served where they say an engine serves it", () => {
    const hqq = load("mobiuslabsgmbh/Llama-3.1-8b-instruct_4bitgs64_hqq_calib");
    const info: ModelInfo = {
      ...hqq,
      repo: "someone/Llama-3.1-8B-Instruct-exl2",
      config: { ...hqq.config, quantization_config: { quant_method: "exl2", version: "0.2.2", bits: 4.0 } },
      quantConfig: { quant_method: "exl2", version: "0.2.2", bits: 4.0 },
    };
    const refused = plan(info, RTX, "sglang").checks.find((c) => c.id === "quantization");
    expect(refused).toMatchObject({
      ok: false,
      detail:
        'could not tell the weights\' format: quant_method "exl2" (config.json quantization_config), so modelswap cannot say whether SGLang runs it',
    });
    expect(refused?.fix).toMatch(/recipes\.compatibility \(a row with format unknown and methods \[exl2\]/);
    const host = hostFactsOf(RTX);
    const p = makePlan({
      model: info,
      facts: modelFacts(info),
      host,
      hostConfig: {
        name: host.host,
        modelsDir: "/models",
        venv: "/opt/vllm/.venv",
        unitDir: "/etc/systemd/system",
        servingPort: 30000,
        currentUnit: "x.service",
      },
      swapId: "sw-20261129-0001",
      engine: ENGINE_MAIN,
      engineKind: "vllm",
      remoteCodeOrgs: [],
      ownCompatibility: [
        {
          format: "unknown",
          methods: ["exl2"],
          engine: "vllm",
          cc: [">=8.0"],
          how: "EXL2 through our patched vLLM build, as we served it",
          source: "served by hand on gpu-1",
        },
      ],
    });
    expect(p.checks.find((c) => c.id === "quantization")).toMatchObject({
      ok: true,
      detail: expect.stringMatching(/with vLLM: EXL2 through our patched vLLM build, as we served it$/),
    });
  });

  it("every accepted plan's flags pass the build's --help, with values its choices take", () => {
    let accepted = 0;
    for (const [repo] of EXPECTED)
      for (const set of KINDS)
        for (const engine of ["sglang", "vllm"] as const) {
          const p = plan(load(repo), set, engine);
          if (!p.ok) continue;
          accepted += 1;
          expect(
            p.checks.find((c) => c.id === "flags"),
            `${repo} ${set} ${engine}`,
          ).toMatchObject({ ok: true });
        }
    expect(accepted).toBeGreaterThan(250);
  });
});
