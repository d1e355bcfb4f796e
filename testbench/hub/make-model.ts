import { defaultSha } from "./sim-hub.ts";
import type { GatedMode, SimModel, SimModelFile } from "./types.ts";

/**
 * Realistic model repositories for the simulated Hub: the config.json, quantization files, shard
 * names, index and tokenizer files of real checkpoints. Weights are scaled down by default (a few MB,
 * so tests can really download them); `sizes: "claimed"` gives the real sizes (only numbers: nothing
 * is generated unless someone downloads it).
 */

export type ModelPreset =
  | "qwen3.5-moe-nvfp4"
  | "kimi-k2-int4"
  | "llama-bf16-small"
  | "qwen3-fp8-dense"
  | "tiny";

export interface MakeModelOptions {
  /** Repository id. Default: the real checkpoint's id. */
  id?: string;
  /** "scaled" (default): small weights; "claimed": the real checkpoint's sizes and shard count. */
  sizes?: "scaled" | "claimed";
  /** Total bytes of all weight shards when scaled. Default 6 MiB. */
  weightBytes?: number;
  /** Number of safetensors shards. Default: the real count when claimed, 3 when scaled (1 for single-file models). */
  shards?: number;
  gated?: GatedMode;
  approvedTokens?: string[];
  private?: boolean;
  license?: string;
  sha?: string;
  revisions?: Record<string, string>;
}

interface PresetSpec {
  id: string;
  license: string;
  gated: GatedMode;
  /** Real checkpoint: total weight bytes and number of shards (1 = a single `model.safetensors`). */
  claimedWeightBytes: number;
  claimedShards: number;
  /** Digits of the shard total in file names: 5 → `-of-00019`, 6 → `-of-000062`. */
  shardTotalDigits: number;
  layers: number;
  config: Record<string, unknown>;
  extraFiles: (scaled: boolean) => SimModelFile[];
  tokenizerConfig: Record<string, unknown>;
  /** Real tokenizer.json size (it is an LFS file on the Hub when > 10 MiB). 0 = no tokenizer.json. */
  tokenizerJsonBytes: number;
  safetensorsParameters: Record<string, number>;
  tags: string[];
  pipelineTag: string;
  /** Tensor names per layer for the index's weight_map (a representative subset). */
  layerTensors: (layer: number) => string[];
  baseModel?: string;
  description: string;
}

const json = (value: unknown): string => `${JSON.stringify(value, null, 2)}\n`;

const GITATTRIBUTES = [
  "*.7z filter=lfs diff=lfs merge=lfs -text",
  "*.arrow filter=lfs diff=lfs merge=lfs -text",
  "*.bin filter=lfs diff=lfs merge=lfs -text",
  "*.bz2 filter=lfs diff=lfs merge=lfs -text",
  "*.ckpt filter=lfs diff=lfs merge=lfs -text",
  "*.ftz filter=lfs diff=lfs merge=lfs -text",
  "*.gz filter=lfs diff=lfs merge=lfs -text",
  "*.h5 filter=lfs diff=lfs merge=lfs -text",
  "*.joblib filter=lfs diff=lfs merge=lfs -text",
  "*.lfs.* filter=lfs diff=lfs merge=lfs -text",
  "*.mlmodel filter=lfs diff=lfs merge=lfs -text",
  "*.model filter=lfs diff=lfs merge=lfs -text",
  "*.msgpack filter=lfs diff=lfs merge=lfs -text",
  "*.npy filter=lfs diff=lfs merge=lfs -text",
  "*.npz filter=lfs diff=lfs merge=lfs -text",
  "*.onnx filter=lfs diff=lfs merge=lfs -text",
  "*.ot filter=lfs diff=lfs merge=lfs -text",
  "*.parquet filter=lfs diff=lfs merge=lfs -text",
  "*.pb filter=lfs diff=lfs merge=lfs -text",
  "*.pickle filter=lfs diff=lfs merge=lfs -text",
  "*.pkl filter=lfs diff=lfs merge=lfs -text",
  "*.pt filter=lfs diff=lfs merge=lfs -text",
  "*.pth filter=lfs diff=lfs merge=lfs -text",
  "*.rar filter=lfs diff=lfs merge=lfs -text",
  "*.safetensors filter=lfs diff=lfs merge=lfs -text",
  "saved_model/**/* filter=lfs diff=lfs merge=lfs -text",
  "*.tar.* filter=lfs diff=lfs merge=lfs -text",
  "*.tar filter=lfs diff=lfs merge=lfs -text",
  "*.tflite filter=lfs diff=lfs merge=lfs -text",
  "*.tgz filter=lfs diff=lfs merge=lfs -text",
  "*.wasm filter=lfs diff=lfs merge=lfs -text",
  "*.xz filter=lfs diff=lfs merge=lfs -text",
  "*.zip filter=lfs diff=lfs merge=lfs -text",
  "*.zst filter=lfs diff=lfs merge=lfs -text",
  "*tfevents* filter=lfs diff=lfs merge=lfs -text",
  "tokenizer.json filter=lfs diff=lfs merge=lfs -text",
  "",
].join("\n");

/** A small but valid tokenizers-format tokenizer.json (byte-level BPE with a handful of tokens). */
function tinyTokenizerJson(specialTokens: string[]): string {
  const vocab: Record<string, number> = {};
  const base = ["!", '"', "#", "a", "b", "c", "Ġ", "Ġt", "he", "Ġthe", "Hello", "Ġworld", "4"];
  base.forEach((t, i) => {
    vocab[t] = i;
  });
  return json({
    version: "1.0",
    truncation: null,
    padding: null,
    added_tokens: specialTokens.map((content, i) => ({
      id: base.length + i,
      content,
      single_word: false,
      lstrip: false,
      rstrip: false,
      normalized: false,
      special: true,
    })),
    normalizer: { type: "NFC" },
    pre_tokenizer: { type: "ByteLevel", add_prefix_space: false, trim_offsets: true, use_regex: true },
    post_processor: null,
    decoder: { type: "ByteLevel", add_prefix_space: true, trim_offsets: true, use_regex: true },
    model: {
      type: "BPE",
      dropout: null,
      unk_token: null,
      continuing_subword_prefix: "",
      end_of_word_suffix: "",
      fuse_unk: false,
      byte_fallback: false,
      ignore_merges: false,
      vocab,
      merges: [
        ["Ġ", "t"],
        ["h", "e"],
        ["Ġt", "he"],
      ],
    },
  });
}

function readme(spec: PresetSpec, license: string, gated: GatedMode): string {
  const front = [
    "---",
    `license: ${license}`,
    "library_name: transformers",
    `pipeline_tag: ${spec.pipelineTag}`,
    ...(spec.baseModel ? ["base_model:", `- ${spec.baseModel}`] : []),
    ...(gated
      ? ["extra_gated_prompt: You agree to the license and acceptable use policy of this model."]
      : []),
    "---",
  ];
  return `${front.join("\n")}\n\n# ${spec.id.split("/")[1]}\n\n${spec.description}\n`;
}

const QWEN35_NVFP4: PresetSpec = {
  id: "nvidia/Qwen3.5-397B-A17B-NVFP4",
  license: "apache-2.0",
  gated: false,
  claimedWeightBytes: 223_006_523_392,
  claimedShards: 19,
  shardTotalDigits: 5,
  layers: 60,
  baseModel: "Qwen/Qwen3.5-397B-A17B",
  description:
    "NVFP4 quantization of Qwen3.5-397B-A17B produced with NVIDIA TensorRT Model Optimizer. Requires a GPU with compute capability 10.0 or newer (Blackwell).",
  config: {
    architectures: ["Qwen3_5MoeForConditionalGeneration"],
    model_type: "qwen3_5_moe",
    image_token_id: 248056,
    video_token_id: 248057,
    vision_start_token_id: 248053,
    vision_end_token_id: 248054,
    tie_word_embeddings: false,
    torch_dtype: "bfloat16",
    transformers_version: "4.57.0.dev0",
    text_config: {
      model_type: "qwen3_5_moe_text",
      hidden_size: 4096,
      num_hidden_layers: 60,
      num_attention_heads: 32,
      num_key_value_heads: 2,
      head_dim: 256,
      linear_num_key_heads: 16,
      linear_num_value_heads: 64,
      linear_key_head_dim: 128,
      linear_value_head_dim: 128,
      linear_conv_kernel_dim: 4,
      full_attention_interval: 4,
      num_experts: 512,
      num_experts_per_tok: 10,
      moe_intermediate_size: 1024,
      shared_expert_intermediate_size: 1024,
      norm_topk_prob: true,
      max_position_embeddings: 262144,
      vocab_size: 248320,
      rms_norm_eps: 1e-6,
      rope_theta: 10000000,
      partial_rotary_factor: 0.25,
      torch_dtype: "bfloat16",
    },
    vision_config: {
      model_type: "qwen3_5_moe_vision",
      depth: 27,
      hidden_size: 1152,
      num_heads: 16,
      out_hidden_size: 4096,
      patch_size: 16,
      spatial_merge_size: 2,
      temporal_patch_size: 2,
    },
    quantization_config: {
      quant_method: "modelopt",
      quant_algo: "NVFP4",
      kv_cache_quant_algo: "FP8",
      group_size: 16,
      exclude_modules: ["lm_head", "model.visual*", "*linear_attn*", "*mlp.gate", "*shared_expert_gate"],
    },
  },
  extraFiles: () => [
    {
      path: "hf_quant_config.json",
      size: 0,
      content: json({
        producer: { name: "modelopt", version: "0.37.0" },
        quantization: {
          quant_algo: "NVFP4",
          kv_cache_quant_algo: "FP8",
          group_size: 16,
          exclude_modules: ["lm_head", "model.visual*", "*linear_attn*", "*mlp.gate", "*shared_expert_gate"],
        },
      }),
    },
    {
      path: "generation_config.json",
      size: 0,
      content: json({
        bos_token_id: 248044,
        do_sample: true,
        eos_token_id: [248046, 248044],
        pad_token_id: 248044,
        temperature: 0.6,
        top_k: 20,
        top_p: 0.95,
        transformers_version: "4.57.0.dev0",
      }),
    },
    {
      path: "chat_template.jinja",
      size: 0,
      content:
        "{%- for message in messages %}{{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>\\n' }}{%- endfor %}{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n<think>\\n' }}{%- endif %}\n",
    },
    {
      path: "preprocessor_config.json",
      size: 0,
      content: json({ image_processor_type: "Qwen2VLImageProcessorFast", patch_size: 16, merge_size: 2 }),
    },
  ],
  tokenizerConfig: {
    add_bos_token: false,
    bos_token: null,
    eos_token: "<|im_end|>",
    pad_token: "<|endoftext|>",
    model_max_length: 262144,
    tokenizer_class: "Qwen2Tokenizer",
  },
  tokenizerJsonBytes: 12_807_982,
  safetensorsParameters: {
    BF16: 8_861_106_176,
    F8_E4M3: 12_264_046_592,
    U8: 196_224_745_472,
    F32: 1_212_416,
  },
  tags: [
    "transformers",
    "safetensors",
    "qwen3_5_moe",
    "nvidia",
    "ModelOpt",
    "NVFP4",
    "text-generation",
    "conversational",
    "8-bit",
    "modelopt",
  ],
  pipelineTag: "image-text-to-text",
  layerTensors: (l) => [
    `model.language_model.layers.${l}.input_layernorm.weight`,
    l % 4 === 3
      ? `model.language_model.layers.${l}.self_attn.q_proj.weight`
      : `model.language_model.layers.${l}.linear_attn.in_proj_qkvz.weight`,
    `model.language_model.layers.${l}.mlp.gate.weight`,
    `model.language_model.layers.${l}.mlp.experts.0.down_proj.weight`,
    `model.language_model.layers.${l}.mlp.experts.0.down_proj.weight_scale`,
    `model.language_model.layers.${l}.mlp.experts.0.down_proj.weight_scale_2`,
    `model.language_model.layers.${l}.mlp.shared_expert.down_proj.weight`,
  ],
};

const KIMI_K2_INT4: PresetSpec = {
  id: "moonshotai/Kimi-K2-Thinking",
  license: "other",
  gated: false,
  claimedWeightBytes: 594_308_471_296,
  claimedShards: 62,
  shardTotalDigits: 6,
  layers: 61,
  description:
    "Kimi K2 Thinking: a 1T-parameter MoE (32B active) with native INT4 weights (quantization-aware training, compressed-tensors format).",
  config: {
    architectures: ["DeepseekV3ForCausalLM"],
    auto_map: {
      AutoConfig: "configuration_deepseek.DeepseekV3Config",
      AutoModel: "modeling_deepseek.DeepseekV3Model",
      AutoModelForCausalLM: "modeling_deepseek.DeepseekV3ForCausalLM",
    },
    model_type: "kimi_k2",
    aux_loss_alpha: 0.001,
    bos_token_id: 163584,
    eos_token_id: 163586,
    first_k_dense_replace: 1,
    hidden_act: "silu",
    hidden_size: 7168,
    initializer_range: 0.02,
    intermediate_size: 18432,
    kv_lora_rank: 512,
    max_position_embeddings: 262144,
    moe_intermediate_size: 2048,
    moe_layer_freq: 1,
    n_group: 1,
    n_routed_experts: 384,
    n_shared_experts: 1,
    norm_topk_prob: true,
    num_attention_heads: 64,
    num_experts_per_tok: 8,
    num_hidden_layers: 61,
    num_key_value_heads: 64,
    num_nextn_predict_layers: 0,
    q_lora_rank: 1536,
    qk_nope_head_dim: 128,
    qk_rope_head_dim: 64,
    rms_norm_eps: 1e-5,
    rope_scaling: {
      beta_fast: 1.0,
      beta_slow: 1.0,
      factor: 64.0,
      mscale: 1.0,
      mscale_all_dim: 1.0,
      original_max_position_embeddings: 4096,
      type: "yarn",
    },
    rope_theta: 50000.0,
    routed_scaling_factor: 2.827,
    scoring_func: "sigmoid",
    tie_word_embeddings: false,
    topk_group: 1,
    topk_method: "noaux_tc",
    torch_dtype: "bfloat16",
    transformers_version: "4.56.2",
    use_cache: true,
    v_head_dim: 128,
    vocab_size: 163840,
    quantization_config: {
      config_groups: {
        group_0: {
          input_activations: null,
          output_activations: null,
          targets: ["Linear"],
          weights: {
            actorder: null,
            block_structure: null,
            dynamic: false,
            group_size: 32,
            num_bits: 4,
            observer: "minmax",
            observer_kwargs: {},
            strategy: "group",
            symmetric: true,
            type: "int",
          },
        },
      },
      format: "pack-quantized",
      ignore: [
        "lm_head",
        "re:.*self_attn.*",
        "re:.*shared_experts.*",
        "re:.*mlp\\.(gate|up|gate_up|down)_proj.*",
      ],
      kv_cache_scheme: null,
      quant_method: "compressed-tensors",
      quantization_status: "compressed",
    },
  },
  extraFiles: (scaled) => [
    {
      path: "generation_config.json",
      size: 0,
      content: json({ bos_token_id: 163584, eos_token_id: 163586, max_length: 262144, temperature: 1.0 }),
    },
    { path: "tiktoken.model", size: scaled ? 65_536 : 2_795_286, lfs: true },
    {
      path: "tokenization_kimi.py",
      size: 0,
      content: "# Tokenization classes for Kimi K2 (tiktoken based).\nclass TikTokenTokenizer:\n    pass\n",
    },
    {
      path: "configuration_deepseek.py",
      size: 0,
      content: "# Copied from DeepSeek-V3.\nclass DeepseekV3Config:\n    model_type = 'kimi_k2'\n",
    },
    {
      path: "modeling_deepseek.py",
      size: 0,
      content: "# Copied from DeepSeek-V3.\nclass DeepseekV3ForCausalLM:\n    pass\n",
    },
    {
      path: "chat_template.jinja",
      size: 0,
      content:
        "{%- for message in messages -%}<|im_{{ message.role }}|>{{ message.role }}<|im_middle|>{{ message.content }}<|im_end|>{%- endfor -%}{%- if add_generation_prompt -%}<|im_assistant|>assistant<|im_middle|>{%- endif -%}\n",
    },
  ],
  tokenizerConfig: {
    bos_token: "[BOS]",
    eos_token: "[EOS]",
    pad_token: "[PAD]",
    unk_token: "[UNK]",
    model_max_length: 262144,
    tokenizer_class: "TikTokenTokenizer",
    auto_map: { AutoTokenizer: ["tokenization_kimi.TikTokenTokenizer", null] },
  },
  tokenizerJsonBytes: 0,
  safetensorsParameters: {
    BF16: 20_934_066_176,
    I32: 141_113_360_384,
    F32: 19_464_192,
  },
  tags: [
    "transformers",
    "safetensors",
    "kimi_k2",
    "text-generation",
    "conversational",
    "custom_code",
    "compressed-tensors",
  ],
  pipelineTag: "text-generation",
  layerTensors: (l) => [
    `model.layers.${l}.input_layernorm.weight`,
    `model.layers.${l}.self_attn.kv_a_proj_with_mqa.weight`,
    `model.layers.${l}.self_attn.q_a_proj.weight`,
    `model.layers.${l}.self_attn.o_proj.weight`,
    ...(l === 0
      ? [`model.layers.${l}.mlp.down_proj.weight`]
      : [
          `model.layers.${l}.mlp.gate.weight`,
          `model.layers.${l}.mlp.experts.0.down_proj.weight_packed`,
          `model.layers.${l}.mlp.experts.0.down_proj.weight_scale`,
          `model.layers.${l}.mlp.experts.0.down_proj.weight_shape`,
          `model.layers.${l}.mlp.shared_experts.down_proj.weight`,
        ]),
  ],
};

const LLAMA_1B: PresetSpec = {
  id: "meta-llama/Llama-3.2-1B-Instruct",
  license: "llama3.2",
  gated: "manual",
  claimedWeightBytes: 2_471_645_608,
  claimedShards: 1,
  shardTotalDigits: 5,
  layers: 16,
  description: "The Llama 3.2 collection of multilingual large language models (1B, instruction tuned).",
  config: {
    architectures: ["LlamaForCausalLM"],
    attention_bias: false,
    attention_dropout: 0.0,
    bos_token_id: 128000,
    eos_token_id: [128001, 128008, 128009],
    head_dim: 64,
    hidden_act: "silu",
    hidden_size: 2048,
    initializer_range: 0.02,
    intermediate_size: 8192,
    max_position_embeddings: 131072,
    mlp_bias: false,
    model_type: "llama",
    num_attention_heads: 32,
    num_hidden_layers: 16,
    num_key_value_heads: 8,
    pretraining_tp: 1,
    rms_norm_eps: 1e-5,
    rope_scaling: {
      factor: 32.0,
      high_freq_factor: 4.0,
      low_freq_factor: 1.0,
      original_max_position_embeddings: 8192,
      rope_type: "llama3",
    },
    rope_theta: 500000.0,
    tie_word_embeddings: true,
    torch_dtype: "bfloat16",
    transformers_version: "4.45.0.dev0",
    use_cache: true,
    vocab_size: 128256,
  },
  extraFiles: (scaled) => [
    {
      path: "generation_config.json",
      size: 0,
      content: json({
        bos_token_id: 128000,
        do_sample: true,
        eos_token_id: [128001, 128008, 128009],
        temperature: 0.6,
        top_p: 0.9,
        transformers_version: "4.45.0.dev0",
      }),
    },
    { path: "LICENSE.txt", size: 0, content: "LLAMA 3.2 COMMUNITY LICENSE AGREEMENT\n(simulated copy)\n" },
    { path: "USE_POLICY.md", size: 0, content: "# Llama 3.2 Acceptable Use Policy\n(simulated copy)\n" },
    {
      path: "special_tokens_map.json",
      size: 0,
      content: json({ bos_token: "<|begin_of_text|>", eos_token: "<|eot_id|>" }),
    },
    { path: "original/consolidated.00.pth", size: scaled ? 1_048_576 : 2_471_677_246, lfs: true },
    {
      path: "original/params.json",
      size: 0,
      content: json({
        dim: 2048,
        n_layers: 16,
        n_heads: 32,
        n_kv_heads: 8,
        vocab_size: 128256,
        ffn_dim_multiplier: 1.5,
        multiple_of: 256,
        norm_eps: 1e-5,
        rope_theta: 500000.0,
        use_scaled_rope: true,
      }),
    },
    { path: "original/tokenizer.model", size: scaled ? 32_768 : 2_183_982, lfs: true },
  ],
  tokenizerConfig: {
    bos_token: "<|begin_of_text|>",
    eos_token: "<|eot_id|>",
    model_max_length: 131072,
    tokenizer_class: "PreTrainedTokenizerFast",
  },
  tokenizerJsonBytes: 9_085_657,
  safetensorsParameters: { BF16: 1_235_814_400 },
  tags: [
    "transformers",
    "safetensors",
    "llama",
    "text-generation",
    "facebook",
    "meta",
    "pytorch",
    "llama-3",
    "conversational",
  ],
  pipelineTag: "text-generation",
  layerTensors: (l) => [
    `model.layers.${l}.input_layernorm.weight`,
    `model.layers.${l}.self_attn.q_proj.weight`,
    `model.layers.${l}.self_attn.k_proj.weight`,
    `model.layers.${l}.self_attn.v_proj.weight`,
    `model.layers.${l}.self_attn.o_proj.weight`,
    `model.layers.${l}.mlp.gate_proj.weight`,
    `model.layers.${l}.mlp.up_proj.weight`,
    `model.layers.${l}.mlp.down_proj.weight`,
  ],
};

const QWEN3_FP8: PresetSpec = {
  id: "Qwen/Qwen3-8B-FP8",
  license: "apache-2.0",
  gated: false,
  claimedWeightBytes: 9_428_742_144,
  claimedShards: 2,
  shardTotalDigits: 5,
  layers: 36,
  baseModel: "Qwen/Qwen3-8B",
  description: "FP8 (fine-grained, block size 128) version of Qwen3-8B.",
  config: {
    architectures: ["Qwen3ForCausalLM"],
    attention_bias: false,
    attention_dropout: 0.0,
    bos_token_id: 151643,
    eos_token_id: 151645,
    head_dim: 128,
    hidden_act: "silu",
    hidden_size: 4096,
    initializer_range: 0.02,
    intermediate_size: 12288,
    max_position_embeddings: 40960,
    max_window_layers: 36,
    model_type: "qwen3",
    num_attention_heads: 32,
    num_hidden_layers: 36,
    num_key_value_heads: 8,
    rms_norm_eps: 1e-6,
    rope_scaling: null,
    rope_theta: 1000000,
    sliding_window: null,
    tie_word_embeddings: false,
    torch_dtype: "bfloat16",
    transformers_version: "4.51.0",
    use_cache: true,
    use_sliding_window: false,
    vocab_size: 151936,
    quantization_config: {
      activation_scheme: "dynamic",
      fmt: "e4m3",
      quant_method: "fp8",
      weight_block_size: [128, 128],
    },
  },
  extraFiles: () => [
    {
      path: "generation_config.json",
      size: 0,
      content: json({
        bos_token_id: 151643,
        do_sample: true,
        eos_token_id: [151645, 151643],
        pad_token_id: 151643,
        temperature: 0.6,
        top_k: 20,
        top_p: 0.95,
      }),
    },
    { path: "LICENSE", size: 0, content: "Apache License\nVersion 2.0, January 2004\n(simulated copy)\n" },
    { path: "merges.txt", size: 0, content: "#version: 0.2\nĠ t\nh e\nĠt he\n" },
    { path: "vocab.json", size: 0, content: json({ "!": 0, '"': 1, "#": 2, a: 3, b: 4, c: 5 }) },
  ],
  tokenizerConfig: {
    bos_token: null,
    eos_token: "<|im_end|>",
    pad_token: "<|endoftext|>",
    model_max_length: 131072,
    tokenizer_class: "Qwen2Tokenizer",
  },
  tokenizerJsonBytes: 11_422_654,
  safetensorsParameters: { BF16: 1_258_291_200, F8_E4M3: 6_945_767_424, F32: 1_474_560 },
  tags: ["transformers", "safetensors", "qwen3", "text-generation", "conversational", "fp8"],
  pipelineTag: "text-generation",
  layerTensors: (l) => [
    `model.layers.${l}.input_layernorm.weight`,
    `model.layers.${l}.self_attn.q_proj.weight`,
    `model.layers.${l}.self_attn.q_proj.weight_scale_inv`,
    `model.layers.${l}.self_attn.o_proj.weight`,
    `model.layers.${l}.mlp.down_proj.weight`,
    `model.layers.${l}.mlp.down_proj.weight_scale_inv`,
  ],
};

const TINY: PresetSpec = {
  id: "sim-org/tiny-llama",
  license: "mit",
  gated: false,
  claimedWeightBytes: 1_048_576,
  claimedShards: 1,
  shardTotalDigits: 5,
  layers: 2,
  description: "A tiny Llama-shaped test model.",
  config: {
    architectures: ["LlamaForCausalLM"],
    hidden_size: 64,
    intermediate_size: 256,
    max_position_embeddings: 2048,
    model_type: "llama",
    num_attention_heads: 4,
    num_hidden_layers: 2,
    num_key_value_heads: 2,
    torch_dtype: "bfloat16",
    vocab_size: 32000,
  },
  extraFiles: () => [],
  tokenizerConfig: { bos_token: "<s>", eos_token: "</s>", tokenizer_class: "PreTrainedTokenizerFast" },
  tokenizerJsonBytes: 4096,
  safetensorsParameters: { BF16: 524_288 },
  tags: ["transformers", "safetensors", "llama", "text-generation"],
  pipelineTag: "text-generation",
  layerTensors: (l) => [
    `model.layers.${l}.self_attn.q_proj.weight`,
    `model.layers.${l}.mlp.down_proj.weight`,
  ],
};

const PRESETS: Record<ModelPreset, PresetSpec> = {
  "qwen3.5-moe-nvfp4": QWEN35_NVFP4,
  "kimi-k2-int4": KIMI_K2_INT4,
  "llama-bf16-small": LLAMA_1B,
  "qwen3-fp8-dense": QWEN3_FP8,
  tiny: TINY,
};

/** Splits `total` bytes over `n` shards: equal-ish shards with a little jitter, the last one smaller. */
function shardSizes(total: number, n: number): number[] {
  if (n === 1) return [total];
  const base = Math.floor(total / (n - 0.35));
  const sizes: number[] = [];
  let left = total;
  for (let i = 0; i < n - 1; i++) {
    const jitter = Math.floor(base * 0.004 * (((i * 7) % 5) - 2));
    const size = Math.min(left - (n - 1 - i), Math.max(1, base + jitter));
    sizes.push(size);
    left -= size;
  }
  sizes.push(Math.max(1, left));
  return sizes;
}

function shardName(i: number, n: number, totalDigits: number): string {
  return `model-${String(i + 1).padStart(5, "0")}-of-${String(n).padStart(totalDigits, "0")}.safetensors`;
}

/** The preset's published name (id) and headline numbers, for docs and plan tests. */
export function presetInfo(kind: ModelPreset): {
  id: string;
  claimedWeightBytes: number;
  claimedShards: number;
} {
  const spec = PRESETS[kind];
  return { id: spec.id, claimedWeightBytes: spec.claimedWeightBytes, claimedShards: spec.claimedShards };
}

/** A realistic model repository for `SimHub.addModel`. */
export function makeModel(kind: ModelPreset, opts: MakeModelOptions = {}): SimModel {
  const spec = PRESETS[kind];
  const claimed = opts.sizes === "claimed";
  const id = opts.id ?? spec.id;
  const license = opts.license ?? spec.license;
  const gated = opts.gated ?? spec.gated;
  const shards = opts.shards ?? (claimed ? spec.claimedShards : spec.claimedShards === 1 ? 1 : 3);
  const weightBytes = claimed ? spec.claimedWeightBytes : (opts.weightBytes ?? 6 * 1024 * 1024);
  if (!Number.isInteger(shards) || shards < 1)
    throw new Error(`shards must be a positive integer, got ${shards}`);

  const sizes = shardSizes(weightBytes, shards);
  const names =
    shards === 1 ? ["model.safetensors"] : sizes.map((_, i) => shardName(i, shards, spec.shardTotalDigits));
  const files: SimModelFile[] = [
    { path: ".gitattributes", size: 0, content: GITATTRIBUTES },
    { path: "README.md", size: 0, content: readme({ ...spec, id }, license, gated) },
    { path: "config.json", size: 0, content: json(spec.config) },
    { path: "tokenizer_config.json", size: 0, content: json(spec.tokenizerConfig) },
    ...spec.extraFiles(!claimed),
    ...names.map((path, i) => ({ path, size: sizes[i]!, lfs: true })),
  ];
  if (spec.tokenizerJsonBytes > 0) {
    const specials = ["<|endoftext|>", "<|im_start|>", "<|im_end|>"];
    files.push(
      claimed
        ? {
            path: "tokenizer.json",
            size: spec.tokenizerJsonBytes,
            lfs: spec.tokenizerJsonBytes > 10 * 1024 * 1024,
          }
        : { path: "tokenizer.json", size: 0, content: tinyTokenizerJson(specials) },
    );
  }
  if (shards > 1) {
    const weightMap: Record<string, string> = {};
    weightMap["model.embed_tokens.weight"] = names[0]!;
    for (let l = 0; l < spec.layers; l++) {
      const shard = names[Math.min(shards - 1, Math.floor((l * shards) / spec.layers))]!;
      for (const tensor of spec.layerTensors(l)) weightMap[tensor] = shard;
    }
    weightMap["model.norm.weight"] = names[shards - 1]!;
    weightMap["lm_head.weight"] = names[shards - 1]!;
    files.push({
      path: "model.safetensors.index.json",
      size: 0,
      content: json({
        metadata: { total_size: Math.max(0, weightBytes - shards * 4096) },
        weight_map: weightMap,
      }),
    });
  }
  files.sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  for (const f of files) if (f.content !== undefined) f.size = Buffer.byteLength(f.content);

  const model: SimModel = {
    id,
    files,
    gated,
    license,
    tags: [...spec.tags, `license:${license}`],
    pipelineTag: spec.pipelineTag,
    library: "transformers",
    cardData: {
      license,
      library_name: "transformers",
      pipeline_tag: spec.pipelineTag,
      ...(spec.baseModel ? { base_model: [spec.baseModel] } : {}),
    },
    safetensorsParameters: spec.safetensorsParameters,
    sha: opts.sha ?? opts.revisions?.main ?? defaultSha(id),
    totalBytes: files.reduce((sum, f) => sum + f.size, 0),
  };
  if (opts.revisions !== undefined) model.revisions = opts.revisions;
  if (opts.approvedTokens !== undefined) model.approvedTokens = opts.approvedTokens;
  if (opts.private !== undefined) model.private = opts.private;
  return model;
}
