import { CodedError } from "../errors.ts";
import type { ModelInfo } from "../hub/types.ts";
import type { ModelFacts, Quantization } from "./types.ts";

type Json = Record<string, unknown>;

function isObject(value: unknown): value is Json {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

const str = (value: unknown): string | undefined => (typeof value === "string" ? value : undefined);

/**
 * What the planner needs to know about a model, from its config.json and quantization config.
 *
 * Shapes handled: plain transformers configs (Llama, Qwen3, Qwen3-MoE); multimodal configs with the
 * language model under `text_config` (Qwen3.5-MoE); DeepSeek-V3 naming (`n_routed_experts`, MLA
 * attention) as Kimi K2 uses it. Numbers are read from `text_config` first, then the top level.
 * A number the planner cannot do without is an error naming the field (MODEL_CONFIG_UNSUPPORTED).
 */
export function modelFacts(info: ModelInfo): ModelFacts {
  const config = info.config;
  const text = isObject(config.text_config) ? config.text_config : undefined;
  const read = new ConfigReader(info.repo, config, text);

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
  const maxContext = read.required([
    "max_position_embeddings",
    "max_sequence_length",
    "seq_length",
    "n_positions",
  ]);
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

  return {
    family: familyOf(info.repo, architecture, str(config.model_type), str(text?.model_type)),
    architecture,
    quantization: quantizationOf(info, text),
    attentionHeads,
    kvHeads,
    layers,
    hiddenSize,
    headDim,
    experts: experts === 0 ? undefined : experts,
    maxContext,
    weightBytes: info.weightBytes,
    needsRemoteCode: isObject(config.auto_map) || isObject(text?.auto_map),
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
  if (type === "kimi_k2" || (deepseekV3 && /^kimi-k2/i.test(name))) return "kimi-k2";
  if (deepseekV3) return "deepseek-v3";
  if (type === "llama" || architecture === "LlamaForCausalLM") return "llama";
  return "generic";
}

/**
 * The weights' number format. A quantization config wins over the dtype: hf_quant_config.json
 * (ModelOpt), then config.json's quantization_config (ModelOpt, fp8, compressed-tensors, AWQ, GPTQ).
 * A quantization method modelswap does not know is "unknown", never the dtype.
 */
export function quantizationOf(info: ModelInfo, text?: Json): Quantization {
  const sources = [info.quantConfig, info.config.quantization_config, text?.quantization_config].filter(
    isObject,
  );
  for (const q of sources) {
    const found = fromQuantConfig(q);
    if (found !== undefined) return found;
  }
  if (sources.length > 0) return "unknown";
  const dtype =
    str(info.config.torch_dtype) ?? str(info.config.dtype) ?? str(text?.torch_dtype) ?? str(text?.dtype);
  if (dtype === "bfloat16") return "bf16";
  if (dtype === "float16") return "fp16";
  return "unknown";
}

function fromQuantConfig(q: Json): Quantization | undefined {
  const nested = isObject(q.quantization) ? q.quantization : undefined;
  const algo = (str(nested?.quant_algo) ?? str(q.quant_algo))?.toUpperCase();
  const method = str(q.quant_method)?.toLowerCase();
  if (algo !== undefined) {
    if (algo.includes("NVFP4")) return "nvfp4";
    if (algo.startsWith("FP8")) return "fp8";
    if (algo.includes("W4A16") || algo.includes("INT4")) return "int4";
  }
  switch (method) {
    case "modelopt_fp4":
      return "nvfp4";
    case "fp8":
    case "fbgemm_fp8":
    case "modelopt_fp8":
      return "fp8";
    case "awq":
    case "awq_marlin":
    case "gptq":
    case "gptq_marlin": {
      const bits = typeof q.bits === "number" ? q.bits : typeof q.w_bit === "number" ? q.w_bit : 4;
      return bits === 4 ? "int4" : "unknown";
    }
    case "compressed-tensors":
      return fromCompressedTensors(q);
    default:
      return undefined;
  }
}

/** compressed-tensors: the weights' `num_bits` and `type` of its config groups (Kimi K2: 4-bit int). */
function fromCompressedTensors(q: Json): Quantization | undefined {
  const format = str(q.format) ?? "";
  if (format.startsWith("nvfp4")) return "nvfp4";
  const groups = isObject(q.config_groups) ? Object.values(q.config_groups) : [];
  for (const group of groups) {
    const weights = isObject(group) && isObject(group.weights) ? group.weights : undefined;
    if (weights === undefined) continue;
    const bits = weights.num_bits;
    const type = str(weights.type);
    if (bits === 4 && type === "float") return "nvfp4";
    if (bits === 4) return "int4";
    if (bits === 8 && type === "float") return "fp8";
  }
  return undefined;
}

/** Reads positive integers from text_config, then from the top level of config.json. */
class ConfigReader {
  constructor(
    private readonly repo: string,
    private readonly config: Json,
    private readonly text: Json | undefined,
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
            `config.json's ${scope === this.text ? "text_config." : ""}${name} is ${JSON.stringify(value)}, not a whole number`,
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
      const where = this.text === undefined ? "" : " (looked in text_config and at the top level)";
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
