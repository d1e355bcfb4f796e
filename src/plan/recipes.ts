import { formatGiB, GiB } from "./byte-units.ts";
import type { ModelFacts, Quantization } from "./types.ts";

/**
 * Known-good engine settings per (model family, quantization, GPU architecture), each with the reason
 * the plan shows. Settings are named by meaning ("fp4-gemm-backend"); the engine build's `--help`
 * decides how they are spelled (flag-spellings.ts). A recipe is only listed here once it has served
 * real traffic on that hardware: an unknown combination is refused rather than guessed.
 */

export interface ComputeCapability {
  major: number;
  minor: number;
}

/** One setting of a recipe. `value` is undefined for boolean flags. */
export interface RecipeSetting {
  setting: string;
  value: string | undefined;
  reason: string;
}

/** What a recipe needs to know beyond the model: the hardware and the memory estimate at the chosen tp. */
export interface RecipeContext {
  facts: ModelFacts;
  cc: ComputeCapability;
  tp: number;
  /** The engine's GPU KV cache over all tp GPUs (choose-tp.ts estimate). */
  kvCacheBytes: number;
  hostMemoryBytes: number;
}

/** One environment variable of a recipe (the engine reads some switches only from its environment). */
export interface EnvSetting {
  name: string;
  value: string;
  reason: string;
}

export interface RecipeResult {
  settings: RecipeSetting[];
  /** Things the plan should say that are not flags ("hierarchical cache off: …"). */
  notes: string[];
  /** Environment variables of the unit; none when absent. */
  env?: EnvSetting[];
}

export interface Recipe {
  /** Family key of the id: the family, or "generic". */
  key: string;
  /** For people: "Qwen3.5 MoE NVFP4 on SM120 (RTX PRO 6000 Blackwell)". */
  title: string;
  matches(facts: ModelFacts, cc: ComputeCapability): boolean;
  settings(ctx: RecipeContext): RecipeResult;
}

/** Oldest compute capability that runs each weight format (8.0 Ampere, 8.9 Ada, 9.0 Hopper, 10.0/12.0 Blackwell). */
export const QUANT_MIN_CC: Record<Exclude<Quantization, "unknown">, ComputeCapability> = {
  nvfp4: { major: 10, minor: 0 },
  fp8: { major: 8, minor: 9 },
  int4: { major: 8, minor: 0 },
  bf16: { major: 8, minor: 0 },
  fp16: { major: 7, minor: 0 },
};

const QUANT_LABEL: Record<Quantization, string> = {
  nvfp4: "NVFP4",
  fp8: "FP8",
  int4: "INT4",
  bf16: "BF16",
  fp16: "FP16",
  unknown: "unknown",
};

/** Where each format runs, for the fix of a refused quantization. */
const WHERE_IT_RUNS: Record<Exclude<Quantization, "unknown">, string> = {
  nvfp4: "a Blackwell host (B200/B300 sm_100, RTX PRO 6000 sm_120)",
  fp8: "an Ada, Hopper or Blackwell host (L40S, H100/H200, B200, RTX PRO 6000)",
  int4: "an Ampere or newer host (A100 and later)",
  bf16: "an Ampere or newer host (A100 and later)",
  fp16: "a Volta or newer host",
};

export function atLeast(cc: ComputeCapability, min: ComputeCapability): boolean {
  return cc.major > min.major || (cc.major === min.major && cc.minor >= min.minor);
}

export const ccLabel = (cc: ComputeCapability): string => `${cc.major}.${cc.minor}`;
export const smLabel = (cc: ComputeCapability): string => `sm_${cc.major}${cc.minor}`;
export const quantLabel = (q: Quantization): string => QUANT_LABEL[q];

export interface QuantizationVerdict {
  ok: boolean;
  detail: string;
  fix?: string;
}

/** Whether GPUs of this compute capability run this weight format at all. */
export function quantizationSupport(
  quantization: Quantization,
  cc: ComputeCapability,
  gpuName: string,
): QuantizationVerdict {
  if (quantization === "unknown") {
    return {
      ok: false,
      detail: "could not tell the weights' format from config.json or hf_quant_config.json",
      fix: "check the model card for the quantization and teach src/plan/model-facts.ts to read it",
    };
  }
  const min = QUANT_MIN_CC[quantization];
  const label = QUANT_LABEL[quantization];
  if (atLeast(cc, min)) {
    return {
      ok: true,
      detail: `${label} runs on ${gpuName} (compute capability ${ccLabel(cc)} ≥ ${ccLabel(min)})`,
    };
  }
  return {
    ok: false,
    detail: `${label} weights need compute capability ≥ ${ccLabel(min)}; ${gpuName} is ${ccLabel(cc)}`,
    fix: `serve it on ${WHERE_IT_RUNS[quantization]} with --host, or pick a checkpoint of this model in a format these GPUs run (${formatsFor(cc)})`,
  };
}

function formatsFor(cc: ComputeCapability): string {
  const ok = (Object.keys(QUANT_MIN_CC) as (keyof typeof QUANT_MIN_CC)[]).filter((q) =>
    atLeast(cc, QUANT_MIN_CC[q]),
  );
  return ok.length === 0 ? "none modelswap knows" : ok.map((q) => QUANT_LABEL[q]).join(", ");
}

/** Host cache size as a multiple of the GPU KV cache (`--hicache-ratio`). */
export const HICACHE_RATIO = 4;
/** RAM left to the OS, the engine's processes and the page cache when the host cache is on. */
export const HICACHE_HEADROOM_BYTES = 64 * GiB;

/**
 * Hierarchical KV cache: prefixes evicted from the GPUs stay in host RAM. SGLang pins
 * `hicache-ratio × the GPU KV pool` of RAM per rank at start and refuses to start without it, so it is
 * only turned on when RAM holds that much plus headroom.
 */
export function hierarchicalCache(ctx: RecipeContext): RecipeResult {
  const hostCache = HICACHE_RATIO * ctx.kvCacheBytes;
  const needed = hostCache + HICACHE_HEADROOM_BYTES;
  const sizes = `${HICACHE_RATIO} × the ${formatGiB(ctx.kvCacheBytes)} GPU KV cache = ${formatGiB(hostCache)}, plus ${formatGiB(HICACHE_HEADROOM_BYTES)} headroom`;
  if (ctx.kvCacheBytes <= 0 || ctx.hostMemoryBytes < needed) {
    return {
      settings: [],
      notes: [
        `Hierarchical KV cache off: host RAM ${formatGiB(ctx.hostMemoryBytes)} is less than the ${formatGiB(needed)} it needs (${sizes}).`,
      ],
    };
  }
  return {
    settings: [
      {
        setting: "enable-hierarchical-cache",
        value: undefined,
        reason: `host RAM ${formatGiB(ctx.hostMemoryBytes)} holds ${sizes}: prefixes evicted from the GPUs stay in RAM instead of being recomputed`,
      },
      {
        setting: "hicache-ratio",
        value: String(HICACHE_RATIO),
        reason: `host cache ${HICACHE_RATIO}× the GPU KV cache (${formatGiB(hostCache)})`,
      },
    ],
    notes: [],
  };
}

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

const MODELOPT_FP4: RecipeSetting = {
  setting: "quantization",
  value: "modelopt_fp4",
  reason:
    "NVFP4 checkpoint made with NVIDIA ModelOpt (hf_quant_config.json quant_algo NVFP4); the model card asks for it explicitly",
};

const QWEN35_PARSERS: RecipeSetting[] = [
  {
    setting: "tool-call-parser",
    value: "qwen3_coder",
    reason:
      "Qwen3.5 writes tool calls in the Qwen3-Coder XML format; the parser turns them into OpenAI tool_calls",
  },
  {
    setting: "reasoning-parser",
    value: "qwen3",
    reason:
      "Qwen3.5 thinks inside <think>…</think>; the parser returns it as reasoning_content, apart from the answer",
  },
];

const SM120_FP4_BACKENDS: RecipeSetting[] = [
  {
    setting: "moe-runner-backend",
    value: "flashinfer_cutlass",
    reason:
      "the default MoE kernels produce NaN on SM120 (every token is “!”, id 0); FlashInfer's CUTLASS MoE is correct there",
  },
  {
    setting: "fp4-gemm-backend",
    value: "flashinfer_cudnn",
    reason:
      "the default FP4 GEMM produces NaN on SM120 (“!!!!” output); FlashInfer's cuDNN FP4 GEMM is correct there",
  },
];

function combine(...parts: RecipeResult[]): RecipeResult {
  return {
    settings: parts.flatMap((p) => p.settings),
    notes: parts.flatMap((p) => p.notes),
    env: parts.flatMap((p) => p.env ?? []),
  };
}

const only = (settings: RecipeSetting[], notes: string[] = []): RecipeResult => ({ settings, notes });

const isQwen35Moe = (facts: ModelFacts): boolean => facts.family === "qwen3.5-moe";
const isKimiK2 = (facts: ModelFacts): boolean => facts.family.startsWith("kimi-k2");

/** The table, most specific first; the generic recipe is last. */
export const RECIPES: readonly Recipe[] = [
  {
    key: "qwen3.5-moe",
    title: "Qwen3.5 MoE NVFP4 on SM120 (RTX PRO 6000 Blackwell)",
    matches: (facts, cc) => isQwen35Moe(facts) && facts.quantization === "nvfp4" && cc.major === 12,
    settings: (ctx) =>
      combine(
        only([MODELOPT_FP4, ...SM120_FP4_BACKENDS, ...QWEN35_PARSERS, ...trustRemoteCode(ctx.facts)]),
        hierarchicalCache(ctx),
      ),
  },
  {
    key: "qwen3.5-moe",
    title: "Qwen3.5 MoE NVFP4 on SM100 (B200/B300)",
    matches: (facts, cc) => isQwen35Moe(facts) && facts.quantization === "nvfp4" && cc.major === 10,
    settings: (ctx) =>
      combine(
        only(
          [MODELOPT_FP4, ...QWEN35_PARSERS, ...trustRemoteCode(ctx.facts)],
          ["SM100: the engine's default FP4 GEMM and MoE kernels are correct here, so no backend override."],
        ),
        hierarchicalCache(ctx),
      ),
  },
  {
    key: "qwen3.5-moe",
    title: "Qwen3.5 MoE BF16/FP8",
    matches: (facts) => isQwen35Moe(facts) && ["bf16", "fp16", "fp8"].includes(facts.quantization),
    settings: (ctx) =>
      combine(
        only(
          [...QWEN35_PARSERS, ...trustRemoteCode(ctx.facts)],
          ctx.facts.quantization === "fp8"
            ? ["FP8 checkpoint: the engine reads its quantization from config.json, no flag needed."]
            : [],
        ),
        hierarchicalCache(ctx),
      ),
  },
  {
    key: "kimi-k2",
    title: "Kimi K2.x INT4 (compressed-tensors)",
    matches: (facts, cc) =>
      isKimiK2(facts) && facts.quantization === "int4" && atLeast(cc, QUANT_MIN_CC.int4),
    settings: (ctx) =>
      only(
        [
          {
            setting: "tool-call-parser",
            value: "kimi_k2",
            reason: "Kimi K2 marks tool calls with its own tokens (<|tool_calls_section_begin|>…)",
          },
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
          "INT4 weights in compressed-tensors format: the engine reads the quantization from config.json, no flag needed.",
        ],
      ),
  },
  {
    key: "generic",
    title: "Generic BF16/FP16/FP8 (engine defaults)",
    matches: (facts) => ["bf16", "fp16", "fp8"].includes(facts.quantization),
    settings: (ctx) =>
      only(trustRemoteCode(ctx.facts), [
        "No model-specific recipe: engine defaults; tool-call and reasoning parsers stay off.",
        ...(ctx.facts.quantization === "fp8"
          ? ["FP8 checkpoint: the engine reads its quantization from config.json, no flag needed."]
          : []),
      ]),
  },
];

/** The first recipe for this model on GPUs of this compute capability, and its id ("qwen3.5-moe/nvfp4/sm_120"). */
export function findRecipe(
  facts: ModelFacts,
  cc: ComputeCapability,
  recipes: readonly Recipe[] = RECIPES,
): { recipe: Recipe; id: string } | undefined {
  const recipe = recipes.find((r) => r.matches(facts, cc));
  if (recipe === undefined) return undefined;
  return { recipe, id: `${recipe.key}/${facts.quantization}/${smLabel(cc)}` };
}
