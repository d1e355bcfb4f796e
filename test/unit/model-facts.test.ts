import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CodedError } from "../../src/errors.ts";
import { HubClient } from "../../src/hub/hub-client.ts";
import type { ModelInfo } from "../../src/hub/types.ts";
import { modelFacts } from "../../src/plan/model-facts.ts";
import { describeRemoteCode } from "../../src/plan/remote-code.ts";
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
    // 15 of its 60 layers are full attention, the rest Gated DeltaNet (layer_types)
    fullAttentionLayers: 15,
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
    // MLA's KV cache: the compressed rank and the rope part, one copy per token and layer
    kvLoraRank: 512,
    qkRopeHeadDim: 64,
    experts: 384,
    maxContext: 262144,
    needsRemoteCode: true,
    remoteCode: {
      files: [
        { file: "configuration_deepseek.py", namedBy: ["config.json"] },
        { file: "modeling_deepseek.py", namedBy: ["config.json"] },
        { file: "tokenization_kimi.py", namedBy: ["tokenizer_config.json"] },
      ],
      moreFiles: 0,
      otherRepos: [],
      moreOtherRepos: 0,
      unreadable: [],
      moreUnreadable: 0,
      otherPy: [],
      moreOtherPy: 0,
    },
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
      const { quant, modelType: _type, textModelType: _text, ...facts } = modelFacts(info);
      expect(facts).toEqual({ ...EXPECTED[kind], weightBytes: presetInfo(kind).claimedWeightBytes });
      expect(quant?.format).toBe(EXPECTED[kind].quantization);
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
  opts: {
    repo?: string;
    quantConfig?: Record<string, unknown>;
    codeConfigs?: ModelInfo["codeConfigs"];
    files?: string[];
  } = {},
): ModelInfo {
  const quant = config.quantization_config;
  return {
    repo: opts.repo ?? "org/model",
    revision: "main",
    sha: "0".repeat(40),
    files: (opts.files ?? []).map((path) => ({ path, size: 10 })),
    totalBytes: 1000,
    weightBytes: 900,
    gated: false,
    license: undefined,
    config,
    quantConfig:
      opts.quantConfig ??
      (typeof quant === "object" && quant !== null ? (quant as Record<string, unknown>) : undefined),
    codeConfigs: opts.codeConfigs ?? {},
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
    // GPTQ 8-bit and bitsandbytes were "unknown" (refused) before issue 28: both engines serve them
    ["GPTQ 8-bit", { config: { quantization_config: { quant_method: "gptq", bits: 8 } } }, "int8"],
    [
      "GPTQ 3-bit: the 4-bit-or-less row",
      { config: { quantization_config: { quant_method: "gptq", bits: 3 } } },
      "int4",
    ],
    [
      "AWQ 8-bit: no engine has it",
      { config: { quantization_config: { quant_method: "awq", bits: 8 } } },
      "unknown",
    ],
    [
      "bitsandbytes 4-bit",
      { config: { quantization_config: { quant_method: "bitsandbytes", load_in_4bit: true } } },
      "int4",
    ],
    [
      "bitsandbytes 8-bit",
      { config: { quantization_config: { quant_method: "bitsandbytes", load_in_8bit: true } } },
      "int8",
    ],
    // gpt-oss: "could not tell the weights' format" before issue 28
    ["MXFP4 (gpt-oss)", { config: { quantization_config: { quant_method: "mxfp4" } } }, "mxfp4"],
    [
      "FP8 per channel (fbgemm_fp8, Meta's Llama 3.1 405B FP8)",
      { config: { quantization_config: { quant_method: "fbgemm_fp8", activation_scale_ub: 1200 } } },
      "fp8",
    ],
    [
      "ModelOpt FP8 in config.json alone",
      { config: { quantization_config: { quant_method: "modelopt", quant_algo: "FP8" } } },
      "fp8",
    ],
    [
      "compressed-tensors W4A16",
      {
        config: {
          quantization_config: {
            quant_method: "compressed-tensors",
            format: "pack-quantized",
            config_groups: {
              group_0: {
                weights: { num_bits: 4, type: "int", strategy: "group", group_size: 128 },
                input_activations: null,
              },
            },
          },
        },
      },
      "int4",
    ],
    [
      "compressed-tensors W8A8 INT8",
      {
        config: {
          quantization_config: {
            quant_method: "compressed-tensors",
            format: "int-quantized",
            config_groups: {
              group_0: {
                weights: { num_bits: 8, type: "int", strategy: "channel" },
                input_activations: { num_bits: 8, type: "int", strategy: "token", dynamic: true },
              },
            },
          },
        },
      },
      "int8",
    ],
    [
      "a method modelswap does not know, over a bf16 dtype",
      { config: { quantization_config: { quant_method: "exl2", bits: 4.0 } } },
      "unknown",
    ],
    ["torch_dtype float16", { config: { torch_dtype: "float16" } }, "fp16"],
    ["the newer `dtype` key", { config: { torch_dtype: undefined, dtype: "bfloat16" } }, "bf16"],
    ["float32", { config: { torch_dtype: "float32" } }, "fp32"],
    // GPT-2's config names no dtype: transformers' default is float32, which the engines serve in 16-bit
    ["no dtype at all", { config: { torch_dtype: undefined } }, "fp32"],
    ["a dtype no engine serves", { config: { torch_dtype: "int64" } }, "unknown"],
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

// ---------------------------------------------------------------------------------------------
// Which of the repo's Python runs: every config transformers reads, and the repo's .py files.

const NONE = {
  moreFiles: 0,
  otherRepos: [],
  moreOtherRepos: 0,
  unreadable: [],
  moreUnreadable: 0,
  otherPy: [],
  moreOtherPy: 0,
};

describe("remote code, from the repo's files", () => {
  it("tokenizer_config.json's auto_map alone names tokenization_kimi.py: remote code, named", () => {
    const facts = modelFacts(
      info(deepseekV3Config({ auto_map: undefined }), {
        codeConfigs: {
          "tokenizer_config.json": {
            tokenizer_class: "TokenizationKimi",
            auto_map: { AutoTokenizer: ["tokenization_kimi.TokenizationKimi", null] },
          },
        },
        files: ["config.json", "tokenization_kimi.py", "model.safetensors"],
      }),
    );
    expect(facts.needsRemoteCode).toBe(true);
    expect(facts.remoteCode).toEqual({
      ...NONE,
      files: [{ file: "tokenization_kimi.py", namedBy: ["tokenizer_config.json"] }],
    });
    expect(describeRemoteCode(facts.remoteCode!)).toBe(
      "tokenization_kimi.py (tokenizer_config.json auto_map)",
    );
  });

  it("no auto_map, an empty one, or one naming only null: none of the repo's Python runs, .py files or not", () => {
    const files = ["config.json", "tokenization_kimi.py", "modeling_deepseek.py"];
    for (const autoMap of [undefined, {}, { AutoTokenizer: [null, null] }, [null, null]]) {
      const facts = modelFacts(
        info(deepseekV3Config({ auto_map: autoMap }), {
          codeConfigs: { "tokenizer_config.json": { auto_map: autoMap } },
          files,
        }),
      );
      expect(facts.needsRemoteCode, JSON.stringify(autoMap)).toBe(false);
      expect(facts).not.toHaveProperty("remoteCode");
    }
  });

  it("reads every config transformers follows: nested configs, processor, preprocessor, video, the tokenizer's list form", () => {
    const config = llamaConfig({
      vision_config: { auto_map: { AutoConfig: "configuration_vision.VisionConfig" } },
    });
    const facts = modelFacts(
      info(config, {
        codeConfigs: {
          "tokenizer_config.json": {
            auto_map: ["tokenization_x.XTokenizer", "tokenization_x.XTokenizerFast"],
          },
          "processor_config.json": { auto_map: { AutoProcessor: "processing_x.XProcessor" } },
          "preprocessor_config.json": {
            auto_map: {
              AutoImageProcessor: "image_processing_x.XImageProcessor",
              AutoProcessor: "processing_x.XProcessor",
            },
          },
          "video_preprocessor_config.json": { auto_map: { AutoVideoProcessor: "video_processing_x.XVideo" } },
        },
        files: [
          "configuration_vision.py",
          "tokenization_x.py",
          "processing_x.py",
          "image_processing_x.py",
          "video_processing_x.py",
          "utils/helpers.py",
        ],
      }),
    );
    expect(facts.remoteCode).toEqual({
      ...NONE,
      files: [
        { file: "configuration_vision.py", namedBy: ["config.json vision_config"] },
        { file: "tokenization_x.py", namedBy: ["tokenizer_config.json"] },
        { file: "processing_x.py", namedBy: ["processor_config.json", "preprocessor_config.json"] },
        { file: "image_processing_x.py", namedBy: ["preprocessor_config.json"] },
        { file: "video_processing_x.py", namedBy: ["video_preprocessor_config.json"] },
      ],
      otherPy: ["utils/helpers.py"],
    });
    expect(describeRemoteCode(facts.remoteCode!)).toBe(
      "configuration_vision.py (config.json vision_config auto_map), tokenization_x.py (tokenizer_config.json auto_map), processing_x.py (processor_config.json, preprocessor_config.json auto_map), image_processing_x.py (preprocessor_config.json auto_map), video_processing_x.py (video_preprocessor_config.json auto_map); they may import the repo's other .py file (utils/helpers.py)",
    );
  });

  it("names code of another repo (org/name--module.Class) with that repo, and a module the repo lacks", () => {
    const facts = modelFacts(
      info(
        deepseekV3Config({
          auto_map: {
            AutoConfig: "deepseek-ai/DeepSeek-V3--configuration_deepseek.DeepseekV3Config",
            AutoModelForCausalLM: "org/model--modeling_deepseek.DeepseekV3ForCausalLM",
          },
        }),
        { files: ["config.json"] },
      ),
    );
    expect(facts.remoteCode).toEqual({
      ...NONE,
      files: [
        // naming its own repo is its own code; and that file is not in it
        { file: "modeling_deepseek.py", namedBy: ["config.json"], missing: true },
        { file: "configuration_deepseek.py", repo: "deepseek-ai/DeepSeek-V3", namedBy: ["config.json"] },
      ],
      otherRepos: ["deepseek-ai/DeepSeek-V3"],
    });
    expect(describeRemoteCode(facts.remoteCode!)).toBe(
      "modeling_deepseek.py (config.json auto_map; not in the repo), configuration_deepseek.py of deepseek-ai/DeepSeek-V3 (config.json auto_map; another repo's code, at its main branch)",
    );
  });

  it("keeps what is not a class reference as unreadable, quoted, escaped and cut", () => {
    const facts = modelFacts(
      info(
        llamaConfig({
          auto_map: {
            A: "a.b.C",
            B: "$(touch pwned).C",
            C: 42,
            D: "no-org--m.C",
            E: "x/y--z--m.C",
            F: { nested: "m.C" },
            G: `m\u202e.${"C".repeat(100)}`,
          },
        }),
      ),
    );
    expect(facts.needsRemoteCode).toBe(true);
    expect(facts.remoteCode?.files).toEqual([]);
    expect(facts.remoteCode?.unreadable).toEqual([
      "42 (config.json auto_map)",
      '{"nested":"m.C"} (config.json auto_map)',
      '"a.b.C" (config.json auto_map)',
    ]);
    expect(facts.remoteCode?.moreUnreadable).toBe(4);
  });

  it("is bounded whatever the repo holds: 20 names of each kind, then a count", () => {
    const autoMap = Object.fromEntries(
      Array.from({ length: 100 }, (_, i) => [`Auto${i}`, `org${i}/repo--module_${i}.Class`]),
    );
    const own = Object.fromEntries(Array.from({ length: 30 }, (_, i) => [`Own${i}`, `own_${i}.Class`]));
    const facts = modelFacts(
      info(llamaConfig({ auto_map: { ...autoMap, ...own } }), {
        files: Array.from({ length: 50 }, (_, i) => `extra_${i}.py`),
      }),
    );
    const code = facts.remoteCode!;
    expect([code.files.length, code.moreFiles]).toEqual([20, 110]);
    expect([code.otherRepos.length, code.moreOtherRepos]).toEqual([20, 80]);
    expect([code.otherPy.length, code.moreOtherPy]).toEqual([20, 30]);
    expect(describeRemoteCode(code).length).toBeLessThan(1400);
    expect(describeRemoteCode(code)).toMatch(
      /\d+ more files; they may import the repo's other \.py files \(extra_0\.py, .* and 45 more\)$/,
    );
  });
});

describe("modelFacts quantization in full (issue 28)", () => {
  it("says the method, the scheme and where it was read", () => {
    const fp8 = modelFacts(info(llamaConfig({ quantization_config: undefined }), {})).quant;
    expect(fp8).toMatchObject({ format: "bf16", method: "none", source: "config.json torch_dtype" });
    const block = modelFacts(
      info(
        llamaConfig({
          quantization_config: {
            quant_method: "fp8",
            fmt: "e4m3",
            activation_scheme: "dynamic",
            weight_block_size: [128, 128],
          },
        }),
        {},
      ),
    ).quant;
    expect(block).toMatchObject({ format: "fp8", method: "fp8", scheme: "block", blockSize: [128, 128] });
    expect(block?.description).toBe("FP8 e4m3 in 128×128 blocks, dynamic activations");
    const modelopt = modelFacts(
      info(llamaConfig({}), {
        quantConfig: {
          producer: { name: "modelopt" },
          quantization: { quant_algo: "NVFP4", group_size: 16 },
        },
      }),
    ).quant;
    expect(modelopt).toMatchObject({
      format: "nvfp4",
      method: "modelopt",
      groupSize: 16,
      source: "hf_quant_config.json",
    });
    const awq = modelFacts(
      info(
        llamaConfig({
          quantization_config: { quant_method: "awq", bits: 4, group_size: 128, version: "gemm" },
        }),
        {},
      ),
    ).quant;
    expect(awq?.description).toBe("AWQ 4-bit (group 128, gemm), 16-bit activations");
    const unknown = modelFacts(
      info(llamaConfig({ quantization_config: { quant_method: "exl2" } }), {}),
    ).quant;
    expect(unknown).toMatchObject({ format: "unknown", method: "exl2", description: 'quant_method "exl2"' });
    // HQQ of 4 bits (vLLM's HQQ Marlin); other widths no engine serves
    const hqq = (nbits: number) =>
      modelFacts(
        info(
          llamaConfig({
            quantization_config: {
              quant_method: "hqq",
              quant_config: { weight_quant_params: { nbits, group_size: 64 } },
            },
          }),
          {},
        ),
      ).quant;
    expect(hqq(4)).toMatchObject({ format: "int4", method: "hqq", groupSize: 64 });
    expect(hqq(2)?.format).toBe("unknown");
  });
});
