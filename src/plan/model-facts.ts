import { CodedError } from "../errors.ts";
import type { ModelInfo } from "../hub/types.ts";
import { quantOf } from "./quant-facts.ts";
import { remoteCodeOf } from "./remote-code.ts";
import type { ModelFacts } from "./types.ts";

type Json = Record<string, unknown>;

function isObject(value: unknown): value is Json {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

const str = (value: unknown): string | undefined => (typeof value === "string" ? value : undefined);

/**
 * What the planner needs to know about a model, from its config.json and quantization config, and
 * which of the repo's Python would run (remote-code.ts: every config's auto_map and the repo's *.py).
 *
 * Shapes handled: plain transformers configs (Llama, Qwen3, Qwen3-MoE); multimodal configs with the
 * language model under `text_config` (Qwen3.5-MoE, Gemma 3, Llama 4), `llm_config` (InternVL) or
 * `language_config` (DeepSeek-VL2); DeepSeek-V3 naming (`n_routed_experts`, MLA attention) as Kimi K2 uses
 * it. Numbers are read from the nested language model's config first, then the top level.
 * A number the planner cannot do without is an error naming the field (MODEL_CONFIG_UNSUPPORTED).
 */
export function modelFacts(info: ModelInfo): ModelFacts {
  const config = info.config;
  const nested = NESTED_LANGUAGE_CONFIGS.find((key) => isObject(config[key]));
  const text = nested === undefined ? undefined : (config[nested] as Json);
  const read = new ConfigReader(info.repo, config, text, nested ?? "text_config");

  const architectures = config.architectures ?? text?.architectures;
  const architecture = Array.isArray(architectures) ? str(architectures[0]) : undefined;
  if (architecture === undefined || architecture === "") {
    throw unsupported(info.repo, "config.json has no architectures", "architectures");
  }

  const attentionHeads = read.required(["num_attention_heads", "n_head", "n_heads"]);
  const isMla = read.optional(["kv_lora_rank"]) !== undefined;
  // transformers' default when a config omits it (and MLA's equivalent): one KV head per attention head.
  const kvHeads = read.optional(["num_key_value_heads", "num_kv_heads"]) ?? attentionHeads;
  const layers = read.required(["num_hidden_layers", "n_layer", "n_layers", "num_layers"]);
  const hiddenSize = read.required(["hidden_size", "d_model", "n_embd"]);
  // a config may leave a field at its config class's default, which transformers (and so the engines) fill in
  const defaults = CONFIG_DEFAULTS[str(text?.model_type) ?? str(config.model_type) ?? ""];
  const maxContext =
    read.optional(["max_position_embeddings", "max_sequence_length", "seq_length", "n_positions"]) ??
    defaults?.maxContext ??
    read.required(["max_position_embeddings", "max_sequence_length", "seq_length", "n_positions"]);
  const experts = read.optional(["num_experts", "n_routed_experts", "num_local_experts"]);

  let headDim = read.optional(["head_dim"]);
  if (isMla) {
    // MLA: a query/key head is the no-rope part plus the rope part (192 for DeepSeek-V3 and Kimi K2).
    const nope = read.optional(["qk_nope_head_dim"]);
    const rope = read.optional(["qk_rope_head_dim"]);
    if (nope !== undefined && rope !== undefined) headDim = nope + rope;
  }
  if (headDim === undefined) {
    if (hiddenSize % attentionHeads !== 0) {
      throw unsupported(
        info.repo,
        `config.json has no head_dim and hidden_size ${hiddenSize} is not a multiple of num_attention_heads ${attentionHeads}`,
        "head_dim",
      );
    }
    headDim = hiddenSize / attentionHeads;
  }
  if (kvHeads > attentionHeads || attentionHeads % kvHeads !== 0) {
    throw unsupported(
      info.repo,
      `config.json has ${kvHeads} KV heads for ${attentionHeads} attention heads, which no attention layout allows`,
      "num_key_value_heads",
    );
  }

  const remoteCode = remoteCodeOf(info);
  const quant = quantOf(info, text);
  const modelType = str(config.model_type);
  const textModelType = str(text?.model_type);
  return {
    family: familyOf(info.repo, architecture, modelType, textModelType),
    architecture,
    ...(modelType === undefined ? {} : { modelType }),
    ...(textModelType === undefined ? {} : { textModelType }),
    quantization: quant.format,
    quant,
    attentionHeads,
    kvHeads,
    layers,
    hiddenSize,
    headDim,
    ...(isMla ? mlaFacts(read) : {}),
    ...fullAttention(read, config, text, layers),
    experts: experts === 0 ? undefined : experts,
    maxContext,
    weightBytes: info.weightBytes,
    needsRemoteCode: remoteCode !== undefined,
    ...(remoteCode === undefined ? {} : { remoteCode }),
  };
}

/**
 * Fields real configs leave out because their transformers config class has a default (Gemma 3's
 * text_config has no max_position_embeddings: Gemma3TextConfig's default, 131072).
 */
const CONFIG_DEFAULTS: Readonly<Record<string, { maxContext: number }>> = {
  gemma3_text: { maxContext: 131_072 },
  gemma2: { maxContext: 8192 },
  gemma: { maxContext: 8192 },
};

/**
 * How many layers keep every token's KV (the rest keep a sliding window, a chunk, or a linear-attention
 * state): what a long context costs. From `layer_types` (gpt-oss, Qwen3.5, newer Gemma: "full_attention"
 * among "sliding_attention" / "linear_attention"), `full_attention_interval` (Qwen3-Next: one in 4),
 * `sliding_window_pattern` (Gemma 2 and 3: one in 2 or 6) or `attention_chunk_size` (Llama 4: chunked
 * attention with a global layer every 4th, transformers' Llama4TextConfig no_rope_layers). Absent: all of them.
 */
function fullAttention(
  read: ConfigReader,
  config: Json,
  text: Json | undefined,
  layers: number,
): { fullAttentionLayers?: number } {
  const types = text?.layer_types ?? config.layer_types;
  if (Array.isArray(types) && types.length === layers && types.every((t) => typeof t === "string")) {
    const full = types.filter((t) => t === "full_attention" || t === "attention").length;
    return full > 0 && full < layers ? { fullAttentionLayers: full } : {};
  }
  const every =
    read.optional(["full_attention_interval"]) ??
    read.optional(["sliding_window_pattern"]) ??
    (read.optional(["attention_chunk_size"]) === undefined ? undefined : 4);
  return every === undefined || every <= 1 ? {} : { fullAttentionLayers: Math.ceil(layers / every) };
}

/** MLA's KV cache per token and layer is the compressed rank plus the rope part (one copy, not per head). */
function mlaFacts(read: ConfigReader): { kvLoraRank?: number; qkRopeHeadDim?: number } {
  const rank = read.optional(["kv_lora_rank"]);
  const rope = read.optional(["qk_rope_head_dim"]);
  return {
    ...(rank === undefined ? {} : { kvLoraRank: rank }),
    ...(rope === undefined ? {} : { qkRopeHeadDim: rope }),
  };
}

/** Recipe family: which known-good flag set applies. */
export function familyOf(
  repo: string,
  architecture: string,
  modelType: string | undefined,
  textModelType?: string,
): string {
  const type = modelType ?? "";
  const name = repo.split("/")[1] ?? "";
  if (
    type === "qwen3_5_moe" ||
    textModelType === "qwen3_5_moe_text" ||
    architecture.startsWith("Qwen3_5Moe")
  ) {
    return "qwen3.5-moe";
  }
  if (type === "qwen3_moe" || architecture.startsWith("Qwen3Moe")) return "qwen3-moe";
  if (type === "qwen3" || architecture.startsWith("Qwen3ForCausalLM")) return "qwen3";
  const deepseekV3 = type === "deepseek_v3" || architecture.startsWith("DeepseekV3");
  if (
    type === "kimi_k2" ||
    type === "kimi_k25" ||
    textModelType === "kimi_k2" ||
    (deepseekV3 && /^kimi-k2/i.test(name))
  )
    return "kimi-k2";
  if (deepseekV3) return "deepseek-v3";
  if (type === "llama" || architecture === "LlamaForCausalLM") return "llama";
  return "generic";
}

/** Where a multimodal config nests its language model's config. */
const NESTED_LANGUAGE_CONFIGS = ["text_config", "llm_config", "language_config"] as const;

/** Reads positive integers from the nested language model's config, then from the top level of config.json. */
class ConfigReader {
  constructor(
    private readonly repo: string,
    private readonly config: Json,
    private readonly text: Json | undefined,
    private readonly nestedKey = "text_config",
  ) {}

  optional(names: readonly string[]): number | undefined {
    for (const scope of [this.text, this.config]) {
      if (scope === undefined) continue;
      for (const name of names) {
        const value = scope[name];
        if (value === undefined || value === null) continue;
        if (typeof value !== "number" || !Number.isSafeInteger(value) || value < 0) {
          throw unsupported(
            this.repo,
            `config.json's ${scope === this.text ? `${this.nestedKey}.` : ""}${name} is ${JSON.stringify(value)}, not a whole number`,
            name,
          );
        }
        return value;
      }
    }
    return undefined;
  }

  required(names: readonly string[]): number {
    const value = this.optional(names);
    if (value === undefined || value === 0) {
      const where = this.text === undefined ? "" : ` (looked in ${this.nestedKey} and at the top level)`;
      throw unsupported(
        this.repo,
        `config.json has no ${names[0]}${names.length > 1 ? ` (nor ${names.slice(1).join(", ")})` : ""}${where}`,
        names[0]!,
      );
    }
    return value;
  }
}

function unsupported(repo: string, what: string, field: string): CodedError {
  return new CodedError(
    "MODEL_CONFIG_UNSUPPORTED",
    `Cannot plan ${repo}: ${what}`,
    `modelswap reads the standard transformers config fields; this model's config.json lacks a usable ${field}. Pick a transformers-format checkpoint of the model, or open an issue with its config.json.`,
  );
}
