/**
 * The `choices=` lists of SGLang's ServerArgs flags (python/sglang/srt/server_args.py, current
 * upstream), for the built-in flag table (sglang-flag-table.mjs).
 */

export const QUANTIZATION_CHOICES = [
  "awq",
  "fp8",
  "mxfp8",
  "gptq",
  "marlin",
  "gptq_marlin",
  "awq_marlin",
  "bitsandbytes",
  "gguf",
  "modelopt",
  "modelopt_fp8",
  "modelopt_fp4",
  "nvfp4_online",
  "modelopt_mixed",
  "petit_nvfp4",
  "w8a8_int8",
  "w8a8_fp8",
  "moe_wna16",
  "w4afp8",
  "mxfp4",
  "auto-round",
  "compressed-tensors",
  "modelslim",
  "quark",
  "unquant",
];

export const ATTENTION_BACKEND_CHOICES = [
  "triton",
  "torch_native",
  "flex_attention",
  "dsa",
  "nsa",
  "cutlass_mla",
  "fa3",
  "fa4",
  "flashinfer",
  "flashmla",
  "trtllm_mla",
  "trtllm_mha",
  "dual_chunk_flash_attn",
  "aiter",
  "wave",
  "intel_amx",
  "ascend",
  "intel_xpu",
];

export const MOE_RUNNER_BACKEND_CHOICES = [
  "auto",
  "deep_gemm",
  "triton",
  "triton_kernel",
  "flashinfer_trtllm",
  "flashinfer_trtllm_routed",
  "flashinfer_cutlass",
  "flashinfer_mxfp4",
  "flashinfer_cutedsl",
  "cutlass",
  "aiter",
  "marlin",
];

export const MOE_A2A_BACKEND_CHOICES = [
  "none",
  "deepep",
  "mooncake",
  "nixl",
  "mori",
  "ascend_fuseep",
  "flashinfer",
];

export const FP8_GEMM_BACKEND_CHOICES = [
  "auto",
  "deep_gemm",
  "flashinfer_trtllm",
  "flashinfer_cutlass",
  "flashinfer_deepgemm",
  "flashinfer_cutedsl",
  "cutlass",
  "triton",
  "aiter",
];

export const FP4_GEMM_BACKEND_CHOICES = [
  "auto",
  "flashinfer_cudnn",
  "flashinfer_cutedsl",
  "flashinfer_cutlass",
  "flashinfer_trtllm",
  "marlin",
];

export const LOAD_FORMAT_CHOICES = [
  "auto",
  "pt",
  "safetensors",
  "npcache",
  "dummy",
  "sharded_state",
  "gguf",
  "bitsandbytes",
  "mistral",
  "layered",
  "remote",
  "remote_instance",
  "fastsafetensors",
  "private",
  "runai_streamer",
];

export const KV_CACHE_DTYPE_CHOICES = [
  "auto",
  "fp8_e5m2",
  "fp8_e4m3",
  "mxfp8",
  "bf16",
  "bfloat16",
  "fp4_e2m1",
];

export const REASONING_PARSER_CHOICES = [
  "deepseek-r1",
  "deepseek-v3",
  "glm45",
  "gpt-oss",
  "kimi",
  "kimi_k2",
  "minimax",
  "minimax-append-think",
  "qwen3",
  "qwen3-thinking",
  "step3",
  "nano_v3",
  "interns1",
];

export const TOOL_CALL_PARSER_CHOICES = [
  "deepseekv3",
  "deepseekv31",
  "deepseekv32",
  "glm",
  "glm45",
  "glm47",
  "gpt-oss",
  "hermes",
  "kimi_k2",
  "llama3",
  "mimo",
  "minimax-m2",
  "mistral",
  "pythonic",
  "qwen",
  "qwen25",
  "qwen3_coder",
  "step3",
  "interns1",
];
