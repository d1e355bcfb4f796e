import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CodedError } from "../../src/errors.ts";
import { HubClient } from "../../src/hub/hub-client.ts";
import type { ModelInfo } from "../../src/hub/types.ts";
import { modelFacts } from "../../src/plan/model-facts.ts";
import type { ModelFacts } from "../../src/plan/types.ts";
import {
  type ModelPreset,
  makeModel,
  presetInfo,
  SIM_HUB_TOKEN,
  type SimHub,
  startSimHub,
} from "../../testbench/hub/index.ts";

let hub: SimHub;
let client: HubClient;

beforeAll(async () => {
  hub = await startSimHub();
  client = new HubClient({ endpoint: hub.url, token: SIM_HUB_TOKEN });
});
afterAll(() => hub.stop());

/** The preset with its real ("claimed") sizes, resolved through the Hub API as a swap does it. */
async function resolvePreset(kind: ModelPreset): Promise<ModelInfo> {
  const model = hub.addModel(makeModel(kind, { sizes: "claimed" }));
  return await client.resolve({ repo: model.id, revision: "main" });
}

const EXPECTED: Record<ModelPreset, Omit<ModelFacts, "weightBytes">> = {
  "qwen3.5-moe-nvfp4": {
    family: "qwen3.5-moe",
    architecture: "Qwen3_5MoeForConditionalGeneration",
    quantization: "nvfp4",
    attentionHeads: 32,
    kvHeads: 2,
    layers: 60,
    hiddenSize: 4096,
    headDim: 256,
    experts: 512,
    maxContext: 262144,
    needsRemoteCode: false,
  },
  "kimi-k2-int4": {
    family: "kimi-k2",
    architecture: "DeepseekV3ForCausalLM",
    quantization: "int4",
    attentionHeads: 64,
    kvHeads: 64,
    layers: 61,
    hiddenSize: 7168,
    // MLA: qk_nope_head_dim 128 + qk_rope_head_dim 64.
    headDim: 192,
    experts: 384,
    maxContext: 262144,
    needsRemoteCode: true,
  },
  "llama-bf16-small": {
    family: "llama",
    architecture: "LlamaForCausalLM",
    quantization: "bf16",
    attentionHeads: 32,
    kvHeads: 8,
    layers: 16,
    hiddenSize: 2048,
    headDim: 64,
    experts: undefined,
    maxContext: 131072,
    needsRemoteCode: false,
  },
  "qwen3-fp8-dense": {
    family: "qwen3",
    architecture: "Qwen3ForCausalLM",
    quantization: "fp8",
    attentionHeads: 32,
    kvHeads: 8,
    layers: 36,
    hiddenSize: 4096,
    headDim: 128,
    experts: undefined,
    maxContext: 40960,
    needsRemoteCode: false,
  },
  tiny: {
    family: "llama",
    architecture: "LlamaForCausalLM",
    quantization: "bf16",
    attentionHeads: 4,
    kvHeads: 2,
    layers: 2,
    hiddenSize: 64,
    // No head_dim in its config: hidden_size / num_attention_heads.
    headDim: 16,
    experts: undefined,
    maxContext: 2048,
    needsRemoteCode: false,
  },
};

describe("modelFacts of the simulated Hub's presets (real config shapes)", () => {
  for (const kind of Object.keys(EXPECTED) as ModelPreset[]) {
    it(kind, async () => {
      const info = await resolvePreset(kind);
      const facts = modelFacts(info);
      expect(facts).toEqual({ ...EXPECTED[kind], weightBytes: presetInfo(kind).claimedWeightBytes });
    });
  }

  it("reads the real checkpoint sizes: 223 GB for the NVFP4 Qwen3.5, 594 GB for Kimi K2", async () => {
    expect(modelFacts(await resolvePreset("qwen3.5-moe-nvfp4")).weightBytes).toBe(223_006_523_392);
    expect(modelFacts(await resolvePreset("kimi-k2-int4")).weightBytes).toBe(594_308_471_296);
  });
});

// ---------------------------------------------------------------------------------------------
// Shapes of other real checkpoints, as ModelInfo values.

function info(
  config: Record<string, unknown>,
  opts: { repo?: string; quantConfig?: Record<string, unknown> } = {},
): ModelInfo {
  const quant = config.quantization_config;
  return {
    repo: opts.repo ?? "org/model",
    revision: "main",
    sha: "0".repeat(40),
    files: [],
    totalBytes: 1000,
    weightBytes: 900,
    gated: false,
    license: undefined,
    config,
    quantConfig:
      opts.quantConfig ??
      (typeof quant === "object" && quant !== null ? (quant as Record<string, unknown>) : undefined),
  };
}

const llamaConfig = (extra: Record<string, unknown> = {}): Record<string, unknown> => ({
  architectures: ["LlamaForCausalLM"],
  model_type: "llama",
  hidden_size: 4096,
  num_attention_heads: 32,
  num_key_value_heads: 8,
  num_hidden_layers: 32,
  max_position_embeddings: 8192,
  torch_dtype: "bfloat16",
  ...extra,
});

/** DeepSeek-V3's own config.json (abridged): MLA, 256 routed experts, block FP8. */
const deepseekV3Config = (extra: Record<string, unknown> = {}): Record<string, unknown> => ({
  architectures: ["DeepseekV3ForCausalLM"],
  auto_map: { AutoConfig: "configuration_deepseek.DeepseekV3Config" },
  model_type: "deepseek_v3",
  hidden_size: 7168,
  kv_lora_rank: 512,
  max_position_embeddings: 163840,
  n_routed_experts: 256,
  num_attention_heads: 128,
  num_hidden_layers: 61,
  num_key_value_heads: 128,
  qk_nope_head_dim: 128,
  qk_rope_head_dim: 64,
  v_head_dim: 128,
  torch_dtype: "bfloat16",
  quantization_config: {
    activation_scheme: "dynamic",
    fmt: "e4m3",
    quant_method: "fp8",
    weight_block_size: [128, 128],
  },
  ...extra,
});

function unsupported(run: () => unknown): CodedError {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(CodedError);
    expect((error as CodedError).code).toBe("MODEL_CONFIG_UNSUPPORTED");
    return error as CodedError;
  }
  throw new Error("expected MODEL_CONFIG_UNSUPPORTED");
}

describe("modelFacts families", () => {
  it("DeepSeek-V3 naming: deepseek-v3, or kimi-k2 in a repo named Kimi-K2*", () => {
    const deepseek = modelFacts(info(deepseekV3Config(), { repo: "deepseek-ai/DeepSeek-V3" }));
    expect(deepseek).toMatchObject({
      family: "deepseek-v3",
      quantization: "fp8",
      attentionHeads: 128,
      kvHeads: 128,
      headDim: 192,
      experts: 256,
      maxContext: 163840,
      needsRemoteCode: true,
    });
    expect(modelFacts(info(deepseekV3Config(), { repo: "moonshotai/Kimi-K2-Instruct" })).family).toBe(
      "kimi-k2",
    );
    expect(
      modelFacts(info(deepseekV3Config({ model_type: "kimi_k2" }), { repo: "someone/fork" })).family,
    ).toBe("kimi-k2");
  });

  it("MLA without num_key_value_heads: one KV head per attention head", () => {
    const { num_key_value_heads: _, ...config } = deepseekV3Config();
    expect(modelFacts(info(config)).kvHeads).toBe(128);
  });

  it("Qwen3 MoE, Qwen3.5 by architecture name, and generic models", () => {
    const qwen3Moe = llamaConfig({
      architectures: ["Qwen3MoeForCausalLM"],
      model_type: "qwen3_moe",
      num_experts: 128,
      head_dim: 128,
    });
    expect(modelFacts(info(qwen3Moe))).toMatchObject({ family: "qwen3-moe", experts: 128, headDim: 128 });
    const byArch = llamaConfig({ architectures: ["Qwen3_5MoeForCausalLM"], model_type: "unknown" });
    expect(modelFacts(info(byArch)).family).toBe("qwen3.5-moe");
    const mixtral = llamaConfig({
      architectures: ["MixtralForCausalLM"],
      model_type: "mixtral",
      num_local_experts: 8,
    });
    expect(modelFacts(info(mixtral))).toMatchObject({ family: "generic", experts: 8, headDim: 128 });
  });
});

describe("modelFacts quantization", () => {
  const cases: Array<
    [string, Partial<Parameters<typeof info>[1]> & { config?: Record<string, unknown> }, string]
  > = [
    [
      "ModelOpt FP8 in hf_quant_config.json",
      { quantConfig: { producer: { name: "modelopt" }, quantization: { quant_algo: "FP8" } } },
      "fp8",
    ],
    [
      "ModelOpt NVFP4 only in config.json's quantization_config",
      { config: { quantization_config: { quant_method: "modelopt", quant_algo: "NVFP4" } } },
      "nvfp4",
    ],
    [
      "quant_method modelopt_fp4",
      { config: { quantization_config: { quant_method: "modelopt_fp4" } } },
      "nvfp4",
    ],
    [
      "compressed-tensors NVFP4",
      {
        config: {
          quantization_config: {
            quant_method: "compressed-tensors",
            format: "nvfp4-pack-quantized",
            config_groups: { group_0: { weights: { num_bits: 4, type: "float", group_size: 16 } } },
          },
        },
      },
      "nvfp4",
    ],
    [
      "compressed-tensors FP8",
      {
        config: {
          quantization_config: {
            quant_method: "compressed-tensors",
            format: "float-quantized",
            config_groups: { group_0: { weights: { num_bits: 8, type: "float" } } },
          },
        },
      },
      "fp8",
    ],
    ["AWQ", { config: { quantization_config: { quant_method: "awq", bits: 4, group_size: 128 } } }, "int4"],
    ["GPTQ 4-bit", { config: { quantization_config: { quant_method: "gptq", bits: 4 } } }, "int4"],
    ["GPTQ 8-bit", { config: { quantization_config: { quant_method: "gptq", bits: 8 } } }, "unknown"],
    [
      "a method modelswap does not know, over a bf16 dtype",
      { config: { quantization_config: { quant_method: "bitsandbytes", load_in_4bit: true } } },
      "unknown",
    ],
    ["torch_dtype float16", { config: { torch_dtype: "float16" } }, "fp16"],
    ["the newer `dtype` key", { config: { torch_dtype: undefined, dtype: "bfloat16" } }, "bf16"],
    ["float32", { config: { torch_dtype: "float32" } }, "unknown"],
  ];
  for (const [name, opts, expected] of cases) {
    it(`${name} → ${expected}`, () => {
      const { config = {}, ...rest } = opts;
      expect(modelFacts(info(llamaConfig(config), rest)).quantization).toBe(expected);
    });
  }
});

describe("modelFacts refuses configs it cannot plan with, naming the field", () => {
  it("a missing number", () => {
    const { num_hidden_layers: _, ...config } = llamaConfig();
    const error = unsupported(() => modelFacts(info(config, { repo: "org/odd" })));
    expect(error.message).toBe(
      "Cannot plan org/odd: config.json has no num_hidden_layers (nor n_layer, n_layers, num_layers)",
    );
    expect(error.fix).toContain("num_hidden_layers");
  });

  it("a missing number in a multimodal config says where it looked", async () => {
    const model = hub.addModel(makeModel("qwen3.5-moe-nvfp4", { id: "sim-org/qwen35-copy" }));
    const resolved = await client.resolve({ repo: model.id, revision: "main" });
    const text = { ...(resolved.config.text_config as Record<string, unknown>) };
    delete text.max_position_embeddings;
    const error = unsupported(() =>
      modelFacts({ ...resolved, config: { ...resolved.config, text_config: text } }),
    );
    expect(error.message).toContain("no max_position_embeddings");
    expect(error.message).toContain("looked in text_config and at the top level");
  });

  it("no architectures, a number that is not a number, an impossible head layout", () => {
    const { architectures: _, ...noArch } = llamaConfig();
    expect(unsupported(() => modelFacts(info(noArch))).message).toContain("no architectures");
    expect(unsupported(() => modelFacts(info(llamaConfig({ num_attention_heads: "32" })))).message).toContain(
      'num_attention_heads is "32", not a whole number',
    );
    expect(unsupported(() => modelFacts(info(llamaConfig({ num_attention_heads: 0 })))).message).toContain(
      "no num_attention_heads",
    );
    expect(unsupported(() => modelFacts(info(llamaConfig({ num_attention_heads: 30 })))).message).toContain(
      "head_dim",
    );
    expect(unsupported(() => modelFacts(info(llamaConfig({ num_key_value_heads: 3 })))).message).toContain(
      "3 KV heads for 32 attention heads",
    );
  });
});
