import type { ModelInfo } from "../hub/types.ts";
import {
  fromBitsandbytes,
  fromCompressedTensors,
  fromFp8,
  fromHqq,
  fromIntGroup,
  fromModelOpt,
  int,
  isObject,
  type Json,
  nvfp4,
  str,
} from "./quant-formats.ts";
import type { QuantFacts, Quantization } from "./types.ts";

/*
 * The weights' number format, read in full from what the checkpoint says, as the engines read it
 * themselves (SGLang python/sglang/srt/configs/model_config.py _parse_quant_hf_config, vLLM
 * vllm/config/model.py _verify_quantization: config.json's quantization_config first, else a ModelOpt
 * hf_quant_config.json). Formats (the compatibility table's rows, src/plan/catalogue.yaml):
 *   nvfp4  ModelOpt NVFP4 (quant_algo NVFP4), compressed-tensors NVFP4 (4-bit float weights, group 16)
 *   mxfp4  quant_method mxfp4 (gpt-oss)
 *   fp8    quant_method fp8 (block `weight_block_size`, or per tensor), fbgemm_fp8 (per channel), ModelOpt
 *          FP8, compressed-tensors 8-bit float weights (W8A8 FP8, FP8 dynamic)
 *   int8   compressed-tensors W8A8 / W8A16 int, GPTQ 8-bit, bitsandbytes 8-bit
 *   int4   AWQ, GPTQ 4-bit, compressed-tensors W4A16 (pack-quantized), bitsandbytes 4-bit (nf4, fp4)
 *   bf16, fp16, fp32 from torch_dtype (or the newer dtype) when no quantization config says otherwise
 * Anything else is "unknown", with the method as the checkpoint names it, so the plan can say what it saw.
 */
export function quantOf(info: ModelInfo, text?: Json): QuantFacts {
  const sources: Array<[string, unknown]> = [
    ["config.json quantization_config", info.config.quantization_config],
    ["config.json text_config.quantization_config", text?.quantization_config],
    // the Hub client gives hf_quant_config.json here when the repo has one, else config.json's again
    [info.quantConfig === info.config.quantization_config ? "" : "hf_quant_config.json", info.quantConfig],
  ];
  let seen: QuantFacts | undefined;
  for (const [source, q] of sources) {
    if (source === "" || !isObject(q)) continue;
    const found = fromQuantConfig(q, source);
    if (found.format !== "unknown") return found;
    seen ??= found;
  }
  if (seen !== undefined) return seen;
  const dtype =
    str(info.config.torch_dtype) ?? str(info.config.dtype) ?? str(text?.torch_dtype) ?? str(text?.dtype);
  const byDtype: Record<string, Quantization> = {
    bfloat16: "bf16",
    float16: "fp16",
    half: "fp16",
    float32: "fp32",
    float: "fp32",
  };
  if (dtype === undefined) {
    // transformers (and so both engines) takes float32 when a config names no dtype (GPT-2's)
    return {
      format: "fp32",
      method: "none",
      description: "FP32 weights (config.json names no torch_dtype: transformers' default, float32)",
      weightBits: 32,
      source: "config.json (no torch_dtype)",
    };
  }
  const format = byDtype[dtype];
  if (format === undefined) {
    return {
      format: "unknown",
      method: "none",
      description: `torch_dtype ${dtype}, which no engine serves`,
      source: "config.json torch_dtype",
    };
  }
  const bits = format === "fp32" ? 32 : 16;
  return {
    format,
    method: "none",
    description: `${format.toUpperCase()} weights, not quantized`,
    weightBits: bits,
    source: `config.json ${str(info.config.torch_dtype) === undefined ? "dtype" : "torch_dtype"}`,
  };
}

function fromQuantConfig(q: Json, source: string): QuantFacts {
  const nested = isObject(q.quantization) ? q.quantization : undefined;
  const algo = (str(nested?.quant_algo) ?? str(q.quant_algo))?.toUpperCase();
  const method = (str(q.quant_method) ?? (nested !== undefined || algo !== undefined ? "modelopt" : ""))
    .toLowerCase()
    .replace(/_/g, "-");
  const producer = isObject(q.producer) ? str(q.producer.name) : undefined;
  const unknown = (what: string): QuantFacts => ({
    format: "unknown",
    method: method === "" ? "unnamed" : method,
    description: what,
    source,
  });
  if (algo !== undefined && (method === "modelopt" || producer === "modelopt" || nested !== undefined)) {
    return fromModelOpt(algo, nested ?? q, source) ?? unknown(`ModelOpt ${algo}`);
  }
  switch (method) {
    case "modelopt-fp4":
      return nvfp4("modelopt", "ModelOpt NVFP4", int(q.group_size) ?? 16, source);
    case "modelopt-fp8":
      return {
        format: "fp8",
        method: "modelopt",
        description: "ModelOpt FP8 (per tensor)",
        weightBits: 8,
        activationBits: 8,
        scheme: "tensor",
        source,
      };
    case "mxfp4":
      return {
        format: "mxfp4",
        method: "mxfp4",
        description: "MXFP4 (MoE experts in 4-bit microscaling float, group 32; the rest BF16)",
        weightBits: 4,
        groupSize: 32,
        source,
      };
    case "fp8":
      return fromFp8(q, source);
    case "fbgemm-fp8":
      return {
        format: "fp8",
        method: "fbgemm_fp8",
        description: "FP8 per channel (FBGEMM), dynamic per-token activations",
        weightBits: 8,
        activationBits: 8,
        scheme: "channel",
        source,
      };
    case "awq":
    case "awq-marlin":
      return fromIntGroup("awq", "AWQ", q, source) ?? unknown(`AWQ ${int(q.bits) ?? int(q.w_bit)}-bit`);
    case "gptq":
    case "gptq-marlin":
      return fromIntGroup("gptq", "GPTQ", q, source) ?? unknown(`GPTQ ${int(q.bits)}-bit`);
    case "compressed-tensors":
      return (
        fromCompressedTensors(q, source) ?? unknown("compressed-tensors with a scheme modelswap cannot read")
      );
    case "bitsandbytes":
      return fromBitsandbytes(q, source);
    case "hqq":
      return fromHqq(q, source) ?? unknown(`HQQ (${JSON.stringify(q.quant_config ?? null).slice(0, 80)})`);
    case "auto-round":
      // Intel AutoRound: GPTQ- or AWQ-packed integer weights, which both engines read (auto-round in their choices)
      return fromIntGroup("auto-round", "AutoRound", q, source) ?? unknown(`AutoRound ${int(q.bits)}-bit`);
    default:
      return unknown(`quant_method ${JSON.stringify(str(q.quant_method) ?? null)}`);
  }
}
