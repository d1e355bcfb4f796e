/**
 * The built-in flag table of the simulated `python -m sglang.launch_server`: the current upstream
 * spellings, aliases, types, choices and help texts of SGLang's ServerArgs, used when the installed
 * engine has no server_args.py to read the flags from (loadFlagSpecs in sglang-flags.mjs).
 */
import {
  ATTENTION_BACKEND_CHOICES,
  FP4_GEMM_BACKEND_CHOICES,
  FP8_GEMM_BACKEND_CHOICES,
  KV_CACHE_DTYPE_CHOICES,
  LOAD_FORMAT_CHOICES,
  MOE_A2A_BACKEND_CHOICES,
  MOE_RUNNER_BACKEND_CHOICES,
  QUANTIZATION_CHOICES,
  REASONING_PARSER_CHOICES,
  TOOL_CALL_PARSER_CHOICES,
} from "./sglang-flag-choices.mjs";

/**
 * @typedef {{flags:string[], dest:string, type:"str"|"int"|"float"|"hint"|"bool"|"list",
 *   choices?:(string|number)[], required?:boolean, help?:string, default?:unknown}} FlagSpec
 */

/** @returns {FlagSpec} */
function f(flags, type, help, extra = {}) {
  const list = Array.isArray(flags) ? flags : [flags];
  const dest = list[0].replace(/^--/, "").replaceAll("-", "_");
  return { flags: list, dest, type, help, default: type === "bool" ? false : null, ...extra };
}

/** Built-in flags: current upstream spellings (python/sglang/srt/server_args.py). */
export const BUILTIN_FLAGS = [
  // Model and tokenizer
  f(
    ["--model-path", "--model"],
    "str",
    "The path of the model weights. This can be a local folder or a Hugging Face repo ID.",
    {
      required: true,
    },
  ),
  f("--tokenizer-path", "str", "The path of the tokenizer."),
  f(
    "--tokenizer-mode",
    "str",
    "Tokenizer mode. 'auto' will use the fast tokenizer if available, and 'slow' will always use the slow tokenizer.",
    { choices: ["auto", "slow"], default: "auto" },
  ),
  f("--tokenizer-worker-num", "int", "The worker num of the tokenizer manager.", { default: 1 }),
  f("--skip-tokenizer-init", "bool", "If set, skip init tokenizer and pass input_ids in generate request."),
  f("--load-format", "str", "The format of the model weights to load.", {
    choices: LOAD_FORMAT_CHOICES,
    default: "auto",
  }),
  f(
    "--model-loader-extra-config",
    "str",
    "Extra config for model loader. This will be passed to the model loader corresponding to the chosen load_format.",
    { default: "{}" },
  ),
  f(
    "--trust-remote-code",
    "bool",
    "Whether or not to allow for custom models defined on the Hub in their own modeling files.",
  ),
  f(
    "--context-length",
    "hint",
    "The model's maximum context length. Defaults to None (will use the value from the model's config.json instead).",
  ),
  f("--is-embedding", "bool", "Whether to use a CausalLM as an embedding model."),
  f(
    "--enable-multimodal",
    "bool",
    "Enable the multimodal functionality for the served model. If the model being served is not multimodal, nothing will happen",
  ),
  f(
    "--revision",
    "str",
    "The specific model version to use. It can be a branch name, a tag name, or a commit id. If unspecified, will use the default version.",
  ),
  f("--model-impl", "str", "Which implementation of the model to use.", { default: "auto" }),
  f(
    "--json-model-override-args",
    "str",
    "A dictionary in JSON string format used to override default model configurations.",
    { default: "{}" },
  ),
  // Quantization and data type
  f("--dtype", "str", "Data type for model weights and activations.", {
    choices: ["auto", "half", "float16", "bfloat16", "float", "float32"],
    default: "auto",
  }),
  f("--quantization", "str", "The quantization method.", { choices: QUANTIZATION_CHOICES }),
  f(
    "--quantization-param-path",
    "str",
    "Path to the JSON file containing the KV cache scaling factors. This should generally be supplied, when KV cache dtype is FP8.",
  ),
  f("--kv-cache-dtype", "str", 'Data type for kv cache storage. "auto" will use model data type.', {
    choices: KV_CACHE_DTYPE_CHOICES,
    default: "auto",
  }),
  f("--enable-fp32-lm-head", "bool", "If set, the LM head outputs (logits) are in FP32."),
  f("--modelopt-quant", "str", "The ModelOpt quantization configuration."),
  // Memory and scheduling
  f(
    "--mem-fraction-static",
    "float",
    "The fraction of the memory used for static allocation (model weights and KV cache memory pool). Use a smaller value if you see out-of-memory errors.",
  ),
  f("--max-running-requests", "int", "The maximum number of running requests."),
  f("--max-queued-requests", "int", "The maximum number of queued requests."),
  f("--max-total-tokens", "hint", "The maximum number of tokens in the memory pool."),
  f(
    "--chunked-prefill-size",
    "int",
    "The maximum number of tokens in a chunk for the chunked prefill. Setting this to -1 means disabling chunked prefill.",
  ),
  f("--max-prefill-tokens", "hint", "The maximum number of tokens in a prefill batch.", { default: 16384 }),
  f("--schedule-policy", "str", "The scheduling policy of the requests.", {
    choices: ["lpm", "random", "fcfs", "dfs-weight", "lof", "priority", "routing-key"],
    default: "fcfs",
  }),
  f("--enable-priority-scheduling", "bool", "Enable priority scheduling."),
  f("--schedule-conservativeness", "float", "How conservative the schedule policy is.", { default: 1.0 }),
  f("--page-size", "int", "The number of tokens in a page."),
  f("--swa-full-tokens-ratio", "float", "The ratio of SWA layer KV tokens / full layer KV tokens.", {
    default: 0.8,
  }),
  f("--disable-radix-cache", "bool", "Disable RadixAttention for prefix caching."),
  f(
    "--disable-chunked-prefix-cache",
    "bool",
    "Disable chunked prefix cache feature for deepseek, which should save overhead for short sequences.",
  ),
  f(
    "--disable-overlap-schedule",
    "bool",
    "Disable the overlap scheduler, which overlaps the CPU scheduler with GPU model worker.",
  ),
  f("--num-continuous-decode-steps", "int", "Run multiple continuous decoding steps.", { default: 1 }),
  f(
    "--enable-mixed-chunk",
    "bool",
    "Enabling mixing prefill and decode in a batch when using chunked prefill.",
  ),
  // Parallelism
  f("--nccl-port", "int", "The port for NCCL distributed environment setup. Defaults to a random port."),
  f("--dist-timeout", "int", "Set timeout for torch.distributed initialization."),
  f(
    ["--dist-init-addr", "--nccl-init-addr"],
    "str",
    "The host address for initializing distributed backend (e.g., `192.168.0.2:25000`).",
  ),
  f("--nnodes", "int", "The number of nodes.", { default: 1 }),
  f("--node-rank", "int", "The node rank.", { default: 0 }),
  f(["--tp-size", "--tensor-parallel-size"], "int", "The tensor parallelism size.", { default: 1 }),
  f(["--pp-size", "--pipeline-parallel-size"], "int", "The pipeline parallelism size.", { default: 1 }),
  f(["--dp-size", "--data-parallel-size"], "int", "The data parallelism size.", { default: 1 }),
  f("--load-balance-method", "str", "The load balancing strategy for data parallelism.", {
    choices: ["auto", "round_robin", "follow_bootstrap_room", "total_requests", "total_tokens"],
    default: "auto",
  }),
  f(
    "--enable-dp-attention",
    "bool",
    "Enabling data parallelism for attention and tensor parallelism for FFN.",
  ),
  f("--enable-dp-lm-head", "bool", "Enable vocabulary parallel across the attention TP group."),
  f("--enable-p2p-check", "bool", "Enable P2P check for GPU access."),
  // Device
  f("--device", "str", "The device to use ('cuda', 'xpu', 'hpu', 'npu', 'cpu', 'musa')."),
  f("--base-gpu-id", "int", "The base GPU ID to start allocating GPUs from.", { default: 0 }),
  f("--gpu-id-step", "int", "The delta between consecutive GPU IDs that are used.", { default: 1 }),
  f("--random-seed", "int", "The random seed."),
  f("--watchdog-timeout", "float", "Set watchdog timeout in seconds.", { default: 300 }),
  f("--sleep-on-idle", "bool", "Reduce CPU usage when sglang is idle."),
  // HTTP server
  f("--host", "str", "The host of the HTTP server.", { default: "127.0.0.1" }),
  f("--port", "int", "The port of the HTTP server.", { default: 30000 }),
  f("--skip-server-warmup", "bool", "If set, skip warmup."),
  f("--warmups", "str", "Specify custom warmup functions (csv) to run before server starts."),
  f("--api-key", "str", "Set API key of the server. It is also used in the OpenAI API compatible server."),
  f("--admin-api-key", "str", "Set admin API key for sensitive management endpoints."),
  f(
    "--served-model-name",
    "str",
    "Override the model name returned by the v1/models endpoint in OpenAI API server.",
  ),
  f("--weight-version", "str", "Version identifier for the model weights.", { default: "default" }),
  f("--chat-template", "str", "The buliltin chat template name or the path of the chat template file."),
  f("--completion-template", "str", "The buliltin completion template name or the path of the file."),
  f("--file-storage-path", "str", "The path of the file storage in backend.", { default: "sglang_storage" }),
  f("--enable-cache-report", "bool", "Return number of cached tokens in usage.prompt_tokens_details."),
  f("--reasoning-parser", "str", "Specify the parser for reasoning models.", {
    choices: REASONING_PARSER_CHOICES,
  }),
  f("--tool-call-parser", "str", "Specify the parser for handling tool-call interactions.", {
    choices: TOOL_CALL_PARSER_CHOICES,
  }),
  f("--tool-server", "str", "Either 'demo' or a comma-separated list of tool server urls."),
  f("--sampling-defaults", "str", "Where to get default sampling parameters.", {
    choices: ["openai", "model"],
    default: "model",
  }),
  f("--preferred-sampling-params", "str", "json-formatted sampling settings returned in /get_model_info"),
  f(
    "--allow-auto-truncate",
    "bool",
    "Allow automatically truncating requests that exceed the maximum input length.",
  ),
  f("--stream-interval", "int", "The interval (or buffer size) for streaming in terms of the token length.", {
    default: 1,
  }),
  f("--incremental-streaming-output", "bool", "Whether to output as a sequence of disjoint segments."),
  // Logging and metrics
  f("--log-level", "str", "The logging level of all loggers.", { default: "info" }),
  f("--log-level-http", "str", "The logging level of HTTP server. If not set, reuse --log-level by default."),
  f("--log-requests", "bool", "Log metadata, inputs, outputs of all requests."),
  f(
    "--log-requests-level",
    "int",
    "0: Log metadata. 1: and sampling parameters. 2: partial input/output. 3: all.",
    {
      choices: [0, 1, 2, 3],
      default: 2,
    },
  ),
  f("--crash-dump-folder", "str", "Folder path to dump requests from the last 5 min before a crash."),
  f("--show-time-cost", "bool", "Show time cost of custom marks."),
  f("--enable-metrics", "bool", "Enable log prometheus metrics."),
  f("--decode-log-interval", "int", "The log interval of decode batch.", { default: 40 }),
  f("--enable-trace", "bool", "Enable opentelemetry trace"),
  f("--otlp-traces-endpoint", "str", "Config opentelemetry collector endpoint if --enable-trace is set.", {
    default: "localhost:4317",
  }),
  // Kernel backends
  f("--attention-backend", "str", "Choose the kernels for attention layers.", {
    choices: ATTENTION_BACKEND_CHOICES,
  }),
  f("--decode-attention-backend", "str", "Choose the kernels for decode attention layers.", {
    choices: ATTENTION_BACKEND_CHOICES,
  }),
  f("--prefill-attention-backend", "str", "Choose the kernels for prefill attention layers.", {
    choices: ATTENTION_BACKEND_CHOICES,
  }),
  f("--sampling-backend", "str", "Choose the kernels for sampling layers.", {
    choices: ["flashinfer", "pytorch", "ascend"],
  }),
  f("--grammar-backend", "str", "Choose the backend for grammar-guided decoding.", {
    choices: ["xgrammar", "outlines", "llguidance", "none"],
  }),
  f("--fp8-gemm-backend", "str", "Choose the runner backend for Blockwise FP8 GEMM operations.", {
    choices: FP8_GEMM_BACKEND_CHOICES,
    default: "auto",
    dest: "fp8_gemm_runner_backend",
  }),
  f(
    "--fp4-gemm-backend",
    "str",
    "Choose the runner backend for NVFP4 GEMM operations. Options: 'auto' (default; selects flashinfer_cutedsl on SM100, marlin on SM80-SM90, flashinfer_cutlass otherwise (including SM120)), 'flashinfer_cutlass', 'flashinfer_cudnn' (FlashInfer cuDNN backend, optimal on CUDA 13+ with cuDNN 9.15+), 'flashinfer_cutedsl', 'flashinfer_trtllm', 'marlin'.",
    { choices: FP4_GEMM_BACKEND_CHOICES, default: "auto", dest: "fp4_gemm_runner_backend" },
  ),
  f("--disable-flashinfer-autotune", "bool", "Disable FlashInfer autotuning."),
  // CUDA graphs and compilation
  f("--disable-cuda-graph", "bool", "Disable cuda graph."),
  f("--cuda-graph-max-bs", "int", "Set the maximum batch size for cuda graph."),
  f("--disable-cuda-graph-padding", "bool", "Disable cuda graph when padding is needed."),
  f("--enable-torch-compile", "bool", "Optimize the model with torch.compile. Experimental feature."),
  f("--torch-compile-max-bs", "int", "Set the maximum batch size when using torch compile.", { default: 32 }),
  // Communication
  f("--disable-custom-all-reduce", "bool", "Disable the custom all-reduce kernel and fall back to NCCL."),
  f("--enable-nccl-nvls", "bool", "Enable NCCL NVLS for prefill heavy requests when available."),
  f("--enable-symm-mem", "bool", "Enable NCCL symmetric memory for fast collectives."),
  f("--enable-mscclpp", "bool", "Enable using mscclpp for small messages for all-reduce kernel."),
  // Speculative decoding
  f("--speculative-algorithm", "str", "Speculative algorithm."),
  f(
    ["--speculative-draft-model-path", "--speculative-draft-model"],
    "str",
    "The path of the draft model weights.",
  ),
  f(
    "--speculative-num-steps",
    "int",
    "The number of steps sampled from draft model in Speculative Decoding.",
  ),
  f(
    "--speculative-eagle-topk",
    "int",
    "The number of tokens sampled from the draft model in eagle2 each step.",
  ),
  f("--speculative-num-draft-tokens", "int", "The number of tokens sampled from the draft model."),
  // Expert parallelism / MoE
  f(["--ep-size", "--expert-parallel-size", "--ep"], "int", "The expert parallelism size.", { default: 1 }),
  f("--moe-a2a-backend", "str", "Choose the backend for MoE A2A.", {
    choices: MOE_A2A_BACKEND_CHOICES,
    default: "none",
  }),
  f("--moe-runner-backend", "str", "Choose the runner backend for MoE.", {
    choices: MOE_RUNNER_BACKEND_CHOICES,
    default: "auto",
  }),
  f("--flashinfer-mxfp4-moe-precision", "str", "Choose the computation precision of flashinfer mxfp4 moe", {
    choices: ["default", "bf16"],
    default: "default",
  }),
  f("--enable-eplb", "bool", "Enable EPLB algorithm"),
  f("--ep-num-redundant-experts", "int", "Allocate this number of redundant experts in expert parallel.", {
    default: 0,
  }),
  f("--moe-dense-tp-size", "int", "TP size for MoE dense MLP layers."),
  f("--disable-shared-experts-fusion", "bool", "Disable the built-in shared experts fusion optimization."),
  // Mamba
  f("--max-mamba-cache-size", "int", "The maximum size of the mamba cache."),
  f("--mamba-ssm-dtype", "str", "The data type of the SSM states in mamba cache.", {
    choices: ["float32", "bfloat16", "float16"],
  }),
  // Hierarchical cache
  f("--enable-hierarchical-cache", "bool", "Enable hierarchical cache"),
  f(
    "--hicache-ratio",
    "float",
    "The ratio of the size of host KV cache memory pool to the size of device pool.",
  ),
  f("--hicache-size", "int", "The size of host KV cache memory pool in gigabytes.", { default: 0 }),
  f("--hicache-write-policy", "str", "The write policy of hierarchical cache.", {
    choices: ["write_back", "write_through", "write_through_selective"],
    default: "write_through",
  }),
  f("--hicache-io-backend", "str", "The IO backend for KV cache transfer between CPU and GPU", {
    choices: ["direct", "kernel", "kernel_ascend"],
    default: "kernel",
  }),
  f("--hicache-mem-layout", "str", "The layout of host memory pool for hierarchical cache.", {
    choices: ["layer_first", "page_first", "page_first_direct", "page_first_kv_split", "page_head"],
    default: "page_first",
  }),
  f("--hicache-storage-backend", "str", "The storage backend for hierarchical KV cache.", {
    choices: ["file", "mooncake", "hf3fs", "nixl", "aibrix", "dynamic", "eic"],
  }),
  // LoRA
  f("--enable-lora", "bool", "Enable LoRA support for the model."),
  f("--max-lora-rank", "int", "The maximum rank of LoRA adapters."),
  f("--lora-paths", "list", "The list of LoRA adapters to load."),
  f("--max-loras-per-batch", "int", "Maximum number of adapters for a running batch.", { default: 8 }),
  f("--lora-backend", "str", "Choose the kernel backend for multi-LoRA serving.", {
    choices: ["triton", "csgmv", "ascend", "torch_native"],
    default: "csgmv",
  }),
  // Offloading, disaggregation, misc
  f("--cpu-offload-gb", "int", "How many GBs of RAM to reserve for CPU offloading.", { default: 0 }),
  f("--disaggregation-mode", "str", "Only used for PD disaggregation.", {
    choices: ["null", "prefill", "decode"],
    default: "null",
  }),
  f("--disaggregation-transfer-backend", "str", "The backend for disaggregation transfer.", {
    choices: ["mooncake", "nixl", "ascend", "fake", "mori"],
    default: "mooncake",
  }),
  f("--disaggregation-bootstrap-port", "int", "Bootstrap server port on the prefill server.", {
    default: 8998,
  }),
  f("--download-dir", "str", "Model download directory for huggingface."),
  f("--delete-ckpt-after-loading", "bool", "Delete the model checkpoint after loading the model."),
  f("--weight-loader-disable-mmap", "bool", "Disable mmap while loading weight using safetensors."),
  f(
    "--enable-memory-saver",
    "bool",
    "Allow saving memory using release_memory_occupation and resume_memory_occupation",
  ),
  f(
    "--enable-weights-cpu-backup",
    "bool",
    "Save model weights (both main model and draft model, if any) to CPU memory during release_weights_occupation and resume_weights_occupation",
  ),
  f("--enable-custom-logit-processor", "bool", "Enable users to pass custom logit processors to the server."),
  f("--enable-return-hidden-states", "bool", "Enable returning hidden states with responses."),
  f(
    "--enable-deterministic-inference",
    "bool",
    "Enable deterministic inference mode with batch invariant ops.",
  ),
  f(
    "--config",
    "str",
    "Read CLI options from a config file. Must be a YAML file with configuration options.",
  ),
];

/** Every built-in spelling → its spec. */
export const BUILTIN_BY_FLAG = new Map();
for (const spec of BUILTIN_FLAGS) for (const flag of spec.flags) BUILTIN_BY_FLAG.set(flag, spec);
