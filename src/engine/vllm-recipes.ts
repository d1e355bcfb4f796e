import {
  atLeast,
  QUANT_MIN_CC,
  type Recipe,
  type RecipeResult,
  type RecipeSetting,
} from "../plan/recipes.ts";
import type { ModelFacts } from "../plan/types.ts";

/*
 * vLLM's known-good settings (0.18), for the families SGLang's recipes cover (src/plan/recipes.ts), each
 * with its reason and its source. Settings are vLLM's own flags without dashes; environment variables
 * are vLLM's (vllm/envs.py). Sources:
 * - tool calling: docs.vllm.ai "Tool Calling" (`--enable-auto-tool-choice` with `--tool-call-parser`; the
 *   API server refuses the first without the second, vllm/entrypoints/openai/api_server.py);
 * - reasoning: docs.vllm.ai "Reasoning Outputs" (`--reasoning-parser qwen3`, `kimi_k2`);
 * - NVFP4 MoE on SM120: vllm/envs.py VLLM_USE_FLASHINFER_MOE_FP4 and VLLM_FLASHINFER_MOE_BACKEND
 *   ("throughput": FlashInfer's CUTLASS MoE; the default "latency" is TensorRT-LLM's, built for sm_100
 *   only), as testbench/gpu-host/VLLM.md records the failure without them.
 */

const isQwen35Moe = (facts: ModelFacts): boolean => facts.family === "qwen3.5-moe";
const isKimiK2 = (facts: ModelFacts): boolean => facts.family.startsWith("kimi-k2");

const only = (
  settings: RecipeSetting[],
  notes: string[] = [],
  env: RecipeResult["env"] = [],
): RecipeResult => ({
  settings,
  notes,
  env,
});

function trustRemoteCode(facts: ModelFacts, why?: string): RecipeSetting[] {
  if (!facts.needsRemoteCode && why === undefined) return [];
  return [
    {
      setting: "trust-remote-code",
      value: undefined,
      reason:
        why ??
        "config.json has auto_map: the model ships its own code, which the engine must be allowed to load",
    },
  ];
}

function toolCalls(parser: string, why: string): RecipeSetting[] {
  return [
    {
      setting: "enable-auto-tool-choice",
      value: undefined,
      reason:
        "lets the model call tools when a request offers them (tool_choice auto); vLLM needs a parser with it",
    },
    { setting: "tool-call-parser", value: parser, reason: why },
  ];
}

const QWEN35_TOOLS = [
  ...toolCalls(
    "qwen3_coder",
    "Qwen3.5 writes tool calls in the Qwen3-Coder XML format; the parser turns them into OpenAI tool_calls",
  ),
  {
    setting: "reasoning-parser",
    value: "qwen3",
    reason:
      "Qwen3.5 thinks inside <think>…</think>; the parser returns it as reasoning_content, apart from the answer",
  },
];

const MODELOPT_FP4: RecipeSetting = {
  setting: "quantization",
  value: "modelopt_fp4",
  reason:
    "NVFP4 checkpoint made with NVIDIA ModelOpt (hf_quant_config.json quant_algo NVFP4); vLLM reads it from there too, and refuses a mismatch at start",
};

/** The table, most specific first; the generic recipe is last. */
export const VLLM_RECIPES: readonly Recipe[] = [
  {
    key: "qwen3.5-moe",
    title: "Qwen3.5 MoE NVFP4 on SM120 (RTX PRO 6000 Blackwell), vLLM",
    matches: (facts, cc) => isQwen35Moe(facts) && facts.quantization === "nvfp4" && cc.major === 12,
    settings: (ctx) =>
      only(
        [MODELOPT_FP4, ...QWEN35_TOOLS, ...trustRemoteCode(ctx.facts)],
        [],
        [
          {
            name: "VLLM_USE_FLASHINFER_MOE_FP4",
            value: "1",
            reason:
              "vLLM's default NVFP4 MoE kernels answer NaN on SM120 (every token “!”); FlashInfer's FP4 MoE is correct there (vllm/envs.py)",
          },
          {
            name: "VLLM_FLASHINFER_MOE_BACKEND",
            value: "throughput",
            reason:
              "FlashInfer's CUTLASS MoE: the default “latency” backend is TensorRT-LLM's, which runs on sm_100 only (vllm/envs.py)",
          },
        ],
      ),
  },
  {
    key: "qwen3.5-moe",
    title: "Qwen3.5 MoE NVFP4 on SM100 (B200/B300), vLLM",
    matches: (facts, cc) => isQwen35Moe(facts) && facts.quantization === "nvfp4" && cc.major === 10,
    settings: (ctx) =>
      only(
        [MODELOPT_FP4, ...QWEN35_TOOLS, ...trustRemoteCode(ctx.facts)],
        ["SM100: vLLM's default FP4 GEMM and MoE kernels are correct here, so no backend switch."],
      ),
  },
  {
    key: "qwen3.5-moe",
    title: "Qwen3.5 MoE BF16/FP8, vLLM",
    matches: (facts) => isQwen35Moe(facts) && ["bf16", "fp16", "fp8"].includes(facts.quantization),
    settings: (ctx) =>
      only(
        [...QWEN35_TOOLS, ...trustRemoteCode(ctx.facts)],
        ctx.facts.quantization === "fp8"
          ? ["FP8 checkpoint: vLLM reads its quantization from config.json, no flag needed."]
          : [],
      ),
  },
  {
    key: "kimi-k2",
    title: "Kimi K2.x INT4 (compressed-tensors), vLLM",
    matches: (facts, cc) =>
      isKimiK2(facts) && facts.quantization === "int4" && atLeast(cc, QUANT_MIN_CC.int4),
    settings: (ctx) =>
      only(
        [
          ...toolCalls(
            "kimi_k2",
            "Kimi K2 marks tool calls with its own tokens (<|tool_calls_section_begin|>…)",
          ),
          {
            setting: "reasoning-parser",
            value: "kimi_k2",
            reason: "separates K2's thinking from the answer (reasoning_content)",
          },
          ...trustRemoteCode(
            ctx.facts,
            "Kimi K2 ships its own tokenizer and config code (tokenization_kimi.py, tiktoken)",
          ),
        ],
        [
          "INT4 weights in compressed-tensors format: vLLM reads the quantization from config.json, no flag needed.",
        ],
      ),
  },
  {
    key: "generic",
    title: "Generic BF16/FP16/FP8 (vLLM defaults)",
    matches: (facts) => ["bf16", "fp16", "fp8"].includes(facts.quantization),
    settings: (ctx) =>
      only(trustRemoteCode(ctx.facts), [
        "No model-specific recipe: vLLM defaults; tool-call and reasoning parsers stay off.",
        ...(ctx.facts.quantization === "fp8"
          ? ["FP8 checkpoint: vLLM reads its quantization from config.json, no flag needed."]
          : []),
      ]),
  },
];
