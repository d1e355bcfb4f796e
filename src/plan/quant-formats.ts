import type { QuantFacts } from "./types.ts";

/*
 * How each quantization tool writes its config (ModelOpt, FP8, GPTQ/AWQ-style int groups, compressed-tensors,
 * HQQ, bitsandbytes), read into QuantFacts; quant-facts.ts picks the reader.
 */

export type Json = Record<string, unknown>;

export const isObject = (value: unknown): value is Json =>
  typeof value === "object" && value !== null && !Array.isArray(value);
export const str = (value: unknown): string | undefined => (typeof value === "string" ? value : undefined);
export const int = (value: unknown): number | undefined =>
  typeof value === "number" && Number.isSafeInteger(value) ? value : undefined;

export function nvfp4(method: string, what: string, group: number, source: string): QuantFacts {
  return {
    format: "nvfp4",
    method,
    description: `${what} (4-bit float weights and activations, FP8 scales per group of ${group})`,
    weightBits: 4,
    activationBits: 4,
    groupSize: group,
    source,
  };
}

/** ModelOpt's quant_algo (hf_quant_config.json `quantization`, or config.json quantization_config). */
export function fromModelOpt(algo: string, q: Json, source: string): QuantFacts | undefined {
  if (algo.includes("NVFP4") && !algo.includes("AWQ"))
    return nvfp4("modelopt", "ModelOpt NVFP4", int(q.group_size) ?? 16, source);
  if (
    algo === "FP8" ||
    algo === "FP8_PER_CHANNEL_PER_TOKEN" ||
    algo === "FP8_PB_WO" ||
    algo === "FP8_BLOCK"
  ) {
    const scheme = algo === "FP8" ? "tensor" : algo === "FP8_PER_CHANNEL_PER_TOKEN" ? "channel" : "block";
    return {
      format: "fp8",
      method: "modelopt",
      description: `ModelOpt FP8 (${algo}, per ${scheme})`,
      weightBits: 8,
      activationBits: 8,
      scheme,
      source,
    };
  }
  return undefined;
}

/** quant_method fp8: block-wise with weight_block_size (DeepSeek-V3, Qwen3 FP8), else per tensor. */
export function fromFp8(q: Json, source: string): QuantFacts {
  const block = Array.isArray(q.weight_block_size) ? q.weight_block_size.map(int) : undefined;
  const dynamic = str(q.activation_scheme) !== "static";
  const activations = dynamic ? "dynamic activations" : "static activation scales";
  if (block !== undefined && block.length === 2 && block.every((b) => b !== undefined)) {
    return {
      format: "fp8",
      method: "fp8",
      description: `FP8 ${str(q.fmt) ?? "e4m3"} in ${block[0]}×${block[1]} blocks, ${activations}`,
      weightBits: 8,
      activationBits: 8,
      scheme: "block",
      blockSize: block as number[],
      source,
    };
  }
  return {
    format: "fp8",
    method: "fp8",
    description: `FP8 per tensor, ${activations}`,
    weightBits: 8,
    activationBits: 8,
    scheme: "tensor",
    source,
  };
}

/** AWQ and GPTQ: integer weights in groups, 16-bit activations. */
export function fromIntGroup(method: string, label: string, q: Json, source: string): QuantFacts | undefined {
  const bits = int(q.bits) ?? int(q.w_bit) ?? 4;
  const group = int(q.group_size) ?? int(q.q_group_size);
  // GPTQ of 2 and 3 bits runs through both engines' GPTQ kernels (GPTQConfig: 2, 3, 4 and 8 bits); AWQ is
  // 4-bit only (AWQConfig: "Currently, only 4-bit weight quantization is supported for AWQ")
  const lowBits = method === "gptq" && (bits === 2 || bits === 3);
  if (method === "awq" && bits !== 4) return undefined;
  if (bits !== 4 && bits !== 8 && !lowBits) return undefined;
  const groupText = group === undefined || group < 0 ? "per channel" : `group ${group}`;
  const version = str(q.version);
  return {
    format: bits === 8 ? "int8" : "int4",
    method,
    description: `${label} ${bits}-bit (${groupText}${version === undefined ? "" : `, ${version}`}), 16-bit activations`,
    weightBits: bits,
    activationBits: 16,
    ...(group === undefined || group < 0
      ? { scheme: "channel" as const }
      : { groupSize: group, scheme: "group" as const }),
    source,
  };
}

/**
 * compressed-tensors (llm-compressor): the scheme is in each config group's `weights` and
 * `input_activations` (W4A16: 4-bit int weights, no activation quantization; W8A8: 8-bit int or float
 * both; NVFP4: 4-bit float weights in groups of 16). The widest group decides (the others are a layer or two).
 */
export function fromCompressedTensors(q: Json, source: string): QuantFacts | undefined {
  const format = str(q.format) ?? "";
  const groups = isObject(q.config_groups) ? Object.values(q.config_groups).filter(isObject) : [];
  for (const group of groups) {
    const weights = isObject(group.weights) ? group.weights : undefined;
    if (weights === undefined) continue;
    const bits = int(weights.num_bits);
    const type = str(weights.type) ?? "int";
    const acts = isObject(group.input_activations) ? group.input_activations : undefined;
    const actBits = acts === undefined ? 16 : (int(acts.num_bits) ?? 16);
    const strategy = str(weights.strategy);
    const groupSize = int(weights.group_size);
    const scheme: QuantFacts["scheme"] =
      strategy === "block"
        ? "block"
        : strategy === "channel"
          ? "channel"
          : strategy === "tensor"
            ? "tensor"
            : strategy === "group"
              ? "group"
              : undefined;
    const name = `W${bits}A${actBits}`;
    const dynamic =
      acts === undefined
        ? ""
        : acts.dynamic === true
          ? ", dynamic activations"
          : ", static activation scales";
    const common = {
      method: "compressed-tensors",
      weightBits: bits ?? 0,
      activationBits: actBits,
      ...(scheme === undefined ? {} : { scheme }),
      ...(groupSize === undefined ? {} : { groupSize }),
      source,
    };
    if (bits === 4 && type === "float" && format.startsWith("mxfp4")) {
      return {
        ...common,
        format: "mxfp4",
        description: `compressed-tensors MXFP4 ${name} (group ${groupSize ?? 32})`,
      };
    }
    if (bits === 4 && (type === "float" || format.startsWith("nvfp4"))) {
      return {
        ...common,
        format: "nvfp4",
        description: `compressed-tensors NVFP4 ${name} (group ${groupSize ?? 16})`,
      };
    }
    if (bits === 4 && type === "int") {
      return {
        ...common,
        format: "int4",
        description: `compressed-tensors ${name} INT4 (${format || "pack-quantized"}${groupSize === undefined ? "" : `, group ${groupSize}`}${dynamic})`,
      };
    }
    if (bits === 8 && type === "float") {
      return {
        ...common,
        format: "fp8",
        description: `compressed-tensors ${name} FP8 (${strategy ?? "tensor"}${dynamic})`,
      };
    }
    if (bits === 8 && type === "int") {
      return {
        ...common,
        format: "int8",
        description: `compressed-tensors ${name} INT8 (${strategy ?? "channel"}${dynamic})`,
      };
    }
  }
  if (format.startsWith("nvfp4")) return nvfp4("compressed-tensors", "compressed-tensors NVFP4", 16, source);
  if (format.startsWith("mxfp4"))
    return {
      format: "mxfp4",
      method: "compressed-tensors",
      description: "compressed-tensors MXFP4",
      weightBits: 4,
      groupSize: 32,
      source,
    };
  return undefined;
}

/**
 * HQQ (transformers' HqqConfig: quant_config.weight_quant_params.nbits and group_size): vLLM serves 4-bit
 * HQQ through its HQQ Marlin kernels (vllm/model_executor/layers/quantization/hqq_marlin.py: 4 bits only).
 */
export function fromHqq(q: Json, source: string): QuantFacts | undefined {
  const inner = isObject(q.quant_config) ? q.quant_config : q;
  const weights = isObject(inner.weight_quant_params) ? inner.weight_quant_params : inner;
  const bits = int(weights.nbits);
  const group = int(weights.group_size);
  if (bits !== 4) return undefined;
  return {
    format: "int4",
    method: "hqq",
    description: `HQQ 4-bit${group === undefined ? "" : ` (group ${group})`}, 16-bit activations`,
    weightBits: 4,
    activationBits: 16,
    ...(group === undefined ? {} : { groupSize: group, scheme: "group" as const }),
    source,
  };
}

/** bitsandbytes: load_in_4bit (nf4 or fp4) or load_in_8bit (LLM.int8). */
export function fromBitsandbytes(q: Json, source: string): QuantFacts {
  if (q.load_in_8bit === true) {
    return {
      format: "int8",
      method: "bitsandbytes",
      description: "bitsandbytes 8-bit (LLM.int8)",
      weightBits: 8,
      activationBits: 16,
      source,
    };
  }
  const kind = str(q.bnb_4bit_quant_type) ?? "nf4";
  return {
    format: "int4",
    method: "bitsandbytes",
    description: `bitsandbytes 4-bit ${kind}`,
    weightBits: 4,
    activationBits: 16,
    source,
  };
}
