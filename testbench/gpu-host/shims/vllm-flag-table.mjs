/**
 * The `vllm serve` flag table of the simulated vLLM 0.18: the argument groups in the order
 * make_arg_parser (vllm/entrypoints/openai/cli_args.py) and EngineArgs.add_cli_args
 * (vllm/engine/arg_utils.py) add them, each group titled by its config class and described by the
 * first paragraph of that class's docstring; the flags with their real spellings, short aliases
 * (-tp, -pp, -dp, -q, -asc, -O), types, choices and defaults. Config booleans are argparse
 * BooleanOptionalAction (`--enforce-eager` / `--no-enforce-eager`), as arg_utils.get_kwargs makes them.
 * Not every flag of vLLM is here: the ones modelswap and an operator would use, and enough of each
 * group that `--help=all` reads like the real one. The help texts are vLLM's, shortened to their first
 * sentence.
 */

/**
 * @typedef {{group:string, flags:string[], dest:string, type:"str"|"int"|"float"|"hint"|"bool"|"optbool"|"list",
 *   choices?:string[], default?:unknown, help:string, metavar?:string, positional?:boolean}} VllmFlag
 */

/** Argument groups: title → description (the first paragraph of the config class's docstring). */
export const GROUPS = [
  ["positional arguments", ""],
  ["options", ""],
  ["Frontend", "Arguments for the OpenAI-compatible frontend server."],
  ["ModelConfig", "Configuration for the model."],
  ["LoadConfig", "Configuration for loading the model weights."],
  ["AttentionConfig", "Configuration for attention mechanisms in vLLM."],
  ["StructuredOutputsConfig", "Dataclass which contains structured outputs config for the engine."],
  ["ParallelConfig", "Configuration for the distributed execution."],
  ["CacheConfig", "Configuration for the KV cache."],
  ["MultiModalConfig", "Controls the behavior of multimodal models."],
  ["LoRAConfig", "Configuration for LoRA."],
  ["ObservabilityConfig", "Configuration for observability - metrics and tracing."],
  ["SchedulerConfig", "Scheduler configuration."],
  [
    "CompilationConfig",
    "Configuration for compilation.\n\n    You must pass CompilationConfig to VLLMConfig constructor.\n    VLLMConfig's post_init does further initialization. If used outside of the\n    VLLMConfig, some fields will be left in an improper state.\n    ",
  ],
  [
    "VllmConfig",
    "Dataclass which contains all vllm-related configuration. This\n    simplifies passing around the distinct configurations in the codebase.\n    ",
  ],
];

/** Tool-call parsers registered in vLLM 0.18 (vllm/entrypoints/openai/tool_parsers). */
export const TOOL_CALL_PARSERS = [
  "deepseek_v3",
  "deepseek_v31",
  "ernie45",
  "glm45",
  "granite",
  "granite-20b-fc",
  "hermes",
  "hunyuan_a13b",
  "internlm",
  "jamba",
  "kimi_k2",
  "llama3_json",
  "llama4_json",
  "llama4_pythonic",
  "longcat",
  "minimax",
  "minimax_m2",
  "mistral",
  "olmo3",
  "openai",
  "phi4_mini_json",
  "pythonic",
  "qwen3_coder",
  "qwen3_xml",
  "seed_oss",
  "step3",
  "xlam",
];

/** Reasoning parsers registered in vLLM 0.18 (vllm/reasoning). */
export const REASONING_PARSERS = [
  "deepseek_r1",
  "deepseek_v3",
  "ernie45",
  "glm45",
  "gpt_oss",
  "granite",
  "hunyuan_a13b",
  "kimi_k2",
  "minimax_m2",
  "minimax_m2_append_think",
  "mistral",
  "olmo3",
  "qwen3",
  "seed_oss",
  "step3",
];

/** `--quantization` choices (vllm/model_executor/layers/quantization/__init__.py QuantizationMethods). */
export const QUANTIZATION_CHOICES = [
  "awq",
  "deepspeedfp",
  "tpu_int8",
  "fp8",
  "ptpc_fp8",
  "fbgemm_fp8",
  "fp_quant",
  "modelopt",
  "modelopt_fp4",
  "bitblas",
  "gguf",
  "gptq_marlin_24",
  "gptq_marlin",
  "gptq_bitblas",
  "awq_marlin",
  "gptq",
  "compressed-tensors",
  "bitsandbytes",
  "hqq",
  "experts_int8",
  "ipex",
  "quark",
  "moe_wna16",
  "torchao",
  "auto-round",
  "rtn",
  "inc",
  "mxfp4",
  "petit_nvfp4",
];

/** @returns {VllmFlag} */
function f(group, flags, type, help, extra = {}) {
  const list = Array.isArray(flags) ? flags : [flags];
  const long = list.find((x) => x.startsWith("--")) ?? list[0];
  const dest = long.replace(/^-+/, "").replaceAll("-", "_");
  const def = type === "bool" || type === "optbool" ? false : null;
  return { group, flags: list, dest, type, help, default: def, ...extra };
}

const O = "options";
const FE = "Frontend";
const MC = "ModelConfig";
const LC = "LoadConfig";
const AC = "AttentionConfig";
const SO = "StructuredOutputsConfig";
const PC = "ParallelConfig";
const CC = "CacheConfig";
const MM = "MultiModalConfig";
const LO = "LoRAConfig";
const OB = "ObservabilityConfig";
const SC = "SchedulerConfig";
const CO = "CompilationConfig";
const VC = "VllmConfig";

/** @type {VllmFlag[]} */
export const VLLM_FLAGS = [
  f("positional arguments", "model_tag", "str", "The model tag to serve (optional if specified in config)", {
    positional: true,
  }),
  f(
    O,
    "--headless",
    "bool",
    "Run in headless mode. See multi-node data parallel documentation for more details.",
  ),
  f(O, ["--api-server-count", "-asc"], "int", "How many API server processes to run.", { default: 1 }),
  f(
    O,
    "--config",
    "str",
    "Read CLI options from a config file. Must be a YAML with the following options: https://docs.vllm.ai/en/latest/configuration/serve_args.html",
  ),
  f(O, "--disable-log-stats", "bool", "Disable logging statistics."),
  f(O, "--enable-log-requests", "optbool", "Enable logging requests."),
  f(O, "--disable-log-requests", "optbool", "[DEPRECATED] Disable logging requests.", { default: true }),
  // Frontend (vllm/entrypoints/openai/cli_args.py FrontendArgs)
  f(FE, "--host", "str", "Host name."),
  f(FE, "--port", "int", "Port number.", { default: 8000 }),
  f(FE, "--uds", "str", "Unix domain socket path. If set, host and port arguments are ignored."),
  f(FE, "--uvicorn-log-level", "str", "Log level for uvicorn.", {
    choices: ["critical", "debug", "error", "info", "trace", "warning"],
    default: "info",
  }),
  f(FE, "--disable-uvicorn-access-log", "optbool", "Disable uvicorn access log."),
  f(FE, "--allow-credentials", "optbool", "Allow credentials."),
  f(FE, "--allowed-origins", "str", "Allowed origins.", { default: "['*']" }),
  f(FE, "--allowed-methods", "str", "Allowed methods.", { default: "['*']" }),
  f(FE, "--allowed-headers", "str", "Allowed headers.", { default: "['*']" }),
  f(
    FE,
    "--api-key",
    "list",
    "If provided, the server will require one of these keys to be presented in the header.",
  ),
  f(FE, "--lora-modules", "list", "LoRA modules configurations in either 'name=path' format or JSON format."),
  f(FE, "--chat-template", "str", "The file path to the chat template, or the template in single-line form."),
  f(
    FE,
    "--chat-template-content-format",
    "str",
    "The format to render message content within a chat template.",
    {
      choices: ["auto", "openai", "string"],
      default: "auto",
    },
  ),
  f(FE, "--response-role", "str", "The role name to return if `request.add_generation_prompt=true`.", {
    default: "assistant",
  }),
  f(FE, "--ssl-keyfile", "str", "The file path to the SSL key file."),
  f(FE, "--ssl-certfile", "str", "The file path to the SSL cert file."),
  f(FE, "--root-path", "str", "FastAPI root_path when app is behind a path based routing proxy."),
  f(FE, "--middleware", "list", "Additional ASGI middleware to apply to the app.", { default: "[]" }),
  f(
    FE,
    "--return-tokens-as-token-ids",
    "optbool",
    "When `--max-logprobs` is specified, represents single tokens as strings of the form 'token_id:{token_id}' so that tokens that are not JSON-encodable can be identified.",
  ),
  f(
    FE,
    "--disable-frontend-multiprocessing",
    "optbool",
    "If specified, will run the OpenAI frontend server in the same process as the model serving engine.",
  ),
  f(
    FE,
    "--enable-request-id-headers",
    "optbool",
    "If specified, API server will add X-Request-Id header to responses.",
  ),
  f(
    FE,
    "--enable-auto-tool-choice",
    "optbool",
    "Enable auto tool choice for supported models. Use `--tool-call-parser` to specify which parser to use.",
  ),
  f(
    FE,
    "--exclude-tools-when-tool-choice-none",
    "optbool",
    "If specified, exclude tool definitions in prompts when tool_choice='none'.",
  ),
  f(
    FE,
    "--tool-call-parser",
    "str",
    "Select the tool call parser depending on the model that you're using. This is used to parse the model-generated tool call into OpenAI API format. Required for `--enable-auto-tool-choice`.",
    { metavar: `{${TOOL_CALL_PARSERS.join(",")}} or name registered in --tool-parser-plugin` },
  ),
  f(
    FE,
    "--tool-parser-plugin",
    "str",
    "Special the tool parser plugin write to parse the model-generated tool into OpenAI API format.",
    {
      default: "",
    },
  ),
  f(FE, "--log-config-file", "str", "Path to logging config JSON file for both vllm and uvicorn"),
  f(FE, "--max-log-len", "int", "Max number of prompt characters or prompt ID numbers being printed in log."),
  f(
    FE,
    "--disable-fastapi-docs",
    "optbool",
    "Disable FastAPI's OpenAPI schema, Swagger UI, and ReDoc endpoint.",
  ),
  f(
    FE,
    "--enable-prompt-tokens-details",
    "optbool",
    "If set to True, enable prompt_tokens_details in usage.",
  ),
  f(
    FE,
    "--enable-server-load-tracking",
    "optbool",
    "If set to True, enable tracking server_load_metrics in the app state.",
  ),
  f(FE, "--enable-force-include-usage", "optbool", "If set to True, including usage on every request."),
  f(FE, "--enable-tokenizer-info-endpoint", "optbool", "Enable the /get_tokenizer_info endpoint."),
  f(FE, "--enable-log-outputs", "optbool", "If True, log model outputs (generations)."),
  f(FE, "--log-error-stack", "optbool", "If set to True, log the stack trace of error responses"),
  // ModelConfig (vllm/config/model.py)
  f(MC, "--model", "str", "Name or path of the Hugging Face model to use.", { default: "Qwen/Qwen3-0.6B" }),
  f(MC, "--runner", "str", "The type of model runner to use.", {
    choices: ["auto", "draft", "generate", "pooling"],
    default: "auto",
  }),
  f(
    MC,
    "--convert",
    "str",
    "Convert the model using adapters defined in vllm.model_executor.models.adapters.",
    {
      choices: ["auto", "classify", "embed", "none", "reward"],
      default: "auto",
    },
  ),
  f(MC, "--tokenizer", "str", "Name or path of the Hugging Face tokenizer to use."),
  f(MC, "--tokenizer-mode", "str", "Tokenizer mode.", {
    choices: ["auto", "deepseek_v32", "hf", "mistral", "slow"],
    default: "auto",
  }),
  f(
    MC,
    "--trust-remote-code",
    "optbool",
    "Trust remote code (e.g., from HuggingFace) when downloading the model and tokenizer.",
  ),
  f(MC, "--dtype", "str", "Data type for model weights and activations.", {
    choices: ["auto", "bfloat16", "float", "float16", "float32", "half"],
    default: "auto",
  }),
  f(MC, "--seed", "int", "Random seed for reproducibility.", { default: 0 }),
  f(MC, "--hf-config-path", "str", "Name or path of the Hugging Face config to use."),
  f(MC, "--revision", "str", "The specific model version to use."),
  f(MC, "--code-revision", "str", "The specific revision to use for the model code on the Hugging Face Hub."),
  f(
    MC,
    "--tokenizer-revision",
    "str",
    "The specific revision to use for the tokenizer on the Hugging Face Hub.",
  ),
  f(MC, "--max-model-len", "hint", "Model context length (prompt and output).", {
    metavar: "MAX_MODEL_LEN",
  }),
  f(MC, ["--quantization", "-q"], "str", "Method used to quantize the weights.", {
    choices: QUANTIZATION_CHOICES,
  }),
  f(MC, "--enforce-eager", "optbool", "Whether to always use eager-mode PyTorch."),
  f(
    MC,
    "--max-logprobs",
    "int",
    "Maximum number of log probabilities to return when `logprobs` is specified in `SamplingParams`.",
    {
      default: 20,
    },
  ),
  f(MC, "--logprobs-mode", "str", "Indicates the content returned in the logprobs and prompt_logprobs.", {
    choices: ["processed_logits", "processed_logprobs", "raw_logits", "raw_logprobs"],
    default: "raw_logprobs",
  }),
  f(MC, "--disable-sliding-window", "optbool", "Whether to disable sliding window."),
  f(MC, "--disable-cascade-attn", "optbool", "Disable cascade attention for V1."),
  f(MC, "--skip-tokenizer-init", "optbool", "Skip initialization of tokenizer and detokenizer."),
  f(
    MC,
    "--enable-prompt-embeds",
    "optbool",
    "If `True`, enables passing text embeddings as inputs via the `prompt_embeds` key.",
  ),
  f(MC, "--served-model-name", "list", "The model name(s) used in the API."),
  f(MC, "--config-format", "str", "The format of the model config to load.", {
    choices: ["auto", "hf", "mistral"],
    default: "auto",
  }),
  f(MC, "--hf-token", "str", "The token to use as HTTP bearer authorization for remote files."),
  f(
    MC,
    "--hf-overrides",
    "str",
    "If a dictionary, contains arguments to be forwarded to the Hugging Face config.",
    {
      default: "{}",
    },
  ),
  f(MC, "--generation-config", "str", "The folder path to the generation config.", { default: "auto" }),
  f(MC, "--override-generation-config", "str", "Overrides or sets generation config.", { default: "{}" }),
  f(
    MC,
    "--enable-sleep-mode",
    "optbool",
    "Enable sleep mode for the engine (only cuda and hip platforms are supported).",
  ),
  f(MC, "--model-impl", "str", "Which implementation of the model to use.", {
    choices: ["auto", "terratorch", "transformers", "vllm"],
    default: "auto",
  }),
  f(
    MC,
    "--logits-processors",
    "list",
    "One or more logits processors' fully-qualified class names or class definitions",
  ),
  // LoadConfig (vllm/config/load.py)
  f(LC, "--load-format", "str", "The format of the model weights to load.", { default: "auto" }),
  f(
    LC,
    "--download-dir",
    "str",
    "Directory to download and load the weights, default to the default cache directory of Hugging Face.",
  ),
  f(LC, "--safetensors-load-strategy", "str", "Specifies the loading strategy for safetensors weights.", {
    default: "lazy",
  }),
  f(LC, "--model-loader-extra-config", "str", "Extra config for model loader.", { default: "{}" }),
  f(LC, "--ignore-patterns", "list", "The list of patterns to ignore when loading the model.", {
    default: "['original/**/*']",
  }),
  f(
    LC,
    "--use-tqdm-on-load",
    "optbool",
    "Whether to enable tqdm for showing progress bar when loading model weights.",
    {
      default: true,
    },
  ),
  f(LC, "--pt-load-map-location", "str", "The map location for loading pytorch checkpoint.", {
    default: "cpu",
  }),
  // AttentionConfig (vllm/config/attention.py)
  f(AC, "--attention-backend", "str", "Attention backend to use. If None, will be selected automatically."),
  // StructuredOutputsConfig (vllm/config/structured_outputs.py)
  f(
    SO,
    "--reasoning-parser",
    "str",
    "Select the reasoning parser depending on the model that you're using.",
    {
      default: "",
      metavar: `{${REASONING_PARSERS.join(",")}}`,
    },
  ),
  f(
    SO,
    "--reasoning-parser-plugin",
    "str",
    "Path to a dynamically reasoning parser plugin that can be dynamically loaded and registered.",
    {
      default: "",
    },
  ),
  // ParallelConfig (vllm/config/parallel.py)
  f(PC, "--distributed-executor-backend", "str", "Backend to use for distributed model workers.", {
    choices: ["external_launcher", "mp", "ray", "uni"],
  }),
  f(PC, ["--pipeline-parallel-size", "-pp"], "int", "Number of pipeline parallel groups.", { default: 1 }),
  f(
    PC,
    "--master-addr",
    "str",
    "distributed master address for multi-node distributed inference when distributed_executor_backend is mp.",
    {
      default: "127.0.0.1",
    },
  ),
  f(
    PC,
    "--master-port",
    "int",
    "distributed master port for multi-node distributed inference when distributed_executor_backend is mp.",
    {
      default: 29501,
    },
  ),
  f(
    PC,
    ["--nnodes", "-n"],
    "int",
    "num of nodes for multi-node distributed inference when distributed_executor_backend is mp.",
    {
      default: 1,
    },
  ),
  f(
    PC,
    ["--node-rank", "-r"],
    "int",
    "distributed node rank for multi-node distributed inference when distributed_executor_backend is mp.",
    {
      default: 0,
    },
  ),
  f(PC, ["--tensor-parallel-size", "-tp"], "int", "Number of tensor parallel groups.", { default: 1 }),
  f(PC, ["--decode-context-parallel-size", "-dcp"], "int", "Number of decode context parallel groups.", {
    default: 1,
  }),
  f(PC, ["--data-parallel-size", "-dp"], "int", "Number of data parallel groups.", { default: 1 }),
  f(PC, ["--data-parallel-rank", "-dpn"], "int", "Data parallel rank of this instance."),
  f(PC, ["--data-parallel-start-rank", "-dpr"], "int", "Starting data parallel rank for secondary nodes."),
  f(
    PC,
    ["--data-parallel-size-local", "-dpl"],
    "int",
    "Number of data parallel replicas to run on this node.",
  ),
  f(PC, ["--data-parallel-address", "-dpa"], "str", "Address of data parallel cluster head-node."),
  f(PC, ["--data-parallel-rpc-port", "-dpp"], "int", "Port for data parallel RPC communication."),
  f(PC, ["--data-parallel-backend", "-dpb"], "str", 'Backend for data parallel, either "mp" or "ray".', {
    default: "mp",
  }),
  f(PC, ["--data-parallel-hybrid-lb", "-dph"], "optbool", 'Whether to use "hybrid" DP LB mode.'),
  f(PC, ["--data-parallel-external-lb", "-dpe"], "optbool", 'Whether to use "external" DP LB mode.'),
  f(
    PC,
    ["--enable-expert-parallel", "-ep"],
    "optbool",
    "Use expert parallelism instead of tensor parallelism for MoE layers.",
  ),
  f(PC, "--all2all-backend", "str", "All2All backend for MoE expert parallel communication.", {
    choices: [
      "allgather_reducescatter",
      "deepep_high_throughput",
      "deepep_low_latency",
      "flashinfer_all2allv",
      "naive",
      "pplx",
    ],
    default: "allgather_reducescatter",
  }),
  f(PC, "--enable-eplb", "optbool", "Enable expert parallelism load balancing for MoE layers."),
  f(
    PC,
    "--max-parallel-loading-workers",
    "int",
    "Maximum number of parallel loading workers when loading model sequentially in multiple batches.",
  ),
  f(
    PC,
    "--disable-custom-all-reduce",
    "optbool",
    "Disable the custom all-reduce kernel and fall back to NCCL.",
  ),
  f(PC, "--worker-cls", "str", "The full name of the worker class to use.", { default: "auto" }),
  f(PC, "--worker-extension-cls", "str", "The full name of the worker extension class to use.", {
    default: "",
  }),
  // CacheConfig (vllm/config/cache.py)
  f(CC, "--block-size", "int", "Size of a contiguous cache block in number of tokens.", {
    choices: ["1", "8", "16", "32", "64", "128", "256"],
  }),
  f(
    CC,
    "--gpu-memory-utilization",
    "float",
    "The fraction of GPU memory to be used for the model executor, which can range from 0 to 1. For example, a value of 0.5 would imply 50% GPU memory utilization. If unspecified, will use the default value of 0.9. This is a per-instance limit, and only applies to the current vLLM instance. It does not matter if you have another vLLM instance running on the same GPU.",
    { default: 0.9 },
  ),
  f(CC, "--kv-cache-memory-bytes", "hint", "Size of KV Cache per GPU in bytes.", {
    metavar: "KV_CACHE_MEMORY_BYTES",
  }),
  f(CC, "--swap-space", "float", "Size of the CPU swap space per GPU (in GiB).", { default: 4 }),
  f(CC, "--kv-cache-dtype", "str", "Data type for kv cache storage.", {
    choices: ["auto", "bfloat16", "fp8", "fp8_ds_mla", "fp8_e4m3", "fp8_e5m2", "fp8_inc"],
    default: "auto",
  }),
  f(
    CC,
    "--num-gpu-blocks-override",
    "int",
    "Number of GPU blocks to use. This overrides the profiled `num_gpu_blocks` if specified.",
  ),
  f(CC, "--enable-prefix-caching", "optbool", "Whether to enable prefix caching.", { default: null }),
  f(CC, "--prefix-caching-hash-algo", "str", "Set the hash algorithm for prefix caching.", {
    choices: ["sha256", "sha256_cbor", "xxhash", "xxhash_cbor"],
    default: "sha256",
  }),
  f(CC, "--cpu-offload-gb", "float", "The space in GiB to offload to CPU, per GPU.", { default: 0 }),
  f(
    CC,
    "--calculate-kv-scales",
    "optbool",
    "This enables dynamic calculation of `k_scale` and `v_scale` when kv_cache_dtype is fp8.",
  ),
  f(CC, "--kv-offloading-size", "float", "Size of the KV cache offloading buffer in GiB."),
  // MultiModalConfig (vllm/config/multimodal.py)
  f(
    MM,
    "--limit-mm-per-prompt",
    "str",
    "The maximum number of input items allowed per prompt for each modality.",
    { default: "{}" },
  ),
  f(
    MM,
    "--mm-processor-kwargs",
    "str",
    "Arguments to be forwarded to the model's processor for multi-modal data.",
  ),
  f(MM, "--mm-processor-cache-gb", "float", "The size (in GiB) of the multi-modal processor cache.", {
    default: 4,
  }),
  f(
    MM,
    "--mm-encoder-tp-mode",
    "str",
    "Indicates how to optimize multi-modal encoder inference using tensor parallelism (TP).",
    {
      choices: ["data", "weights"],
      default: "weights",
    },
  ),
  f(
    MM,
    "--skip-mm-profiling",
    "optbool",
    "When enabled, skips multimodal memory profiling and only profiles with language backbone model during engine initialization.",
  ),
  // LoRAConfig (vllm/config/lora.py)
  f(LO, "--enable-lora", "optbool", "If True, enable handling of LoRA adapters."),
  f(LO, "--max-loras", "int", "Max number of LoRAs in a single batch.", { default: 1 }),
  f(LO, "--max-lora-rank", "int", "Max LoRA rank.", {
    choices: ["1", "8", "16", "32", "64", "128", "256", "320", "512"],
    default: 16,
  }),
  f(LO, "--max-cpu-loras", "int", "Maximum number of LoRAs to store in CPU memory."),
  // ObservabilityConfig (vllm/config/observability.py)
  f(
    OB,
    "--show-hidden-metrics-for-version",
    "str",
    "Enable deprecated Prometheus metrics that have been hidden since the specified version.",
  ),
  f(OB, "--otlp-traces-endpoint", "str", "Target URL to which OpenTelemetry traces will be sent."),
  f(
    OB,
    "--collect-detailed-traces",
    "list",
    "It makes sense to set this only if `--otlp-traces-endpoint` is set.",
  ),
  // SchedulerConfig (vllm/config/scheduler.py)
  f(
    SC,
    "--max-num-batched-tokens",
    "hint",
    "Maximum number of tokens to be processed in a single iteration.",
    {
      metavar: "MAX_NUM_BATCHED_TOKENS",
    },
  ),
  f(SC, "--max-num-seqs", "int", "Maximum number of sequences to be processed in a single iteration."),
  f(
    SC,
    "--max-num-partial-prefills",
    "int",
    "For chunked prefill, the maximum number of sequences that can be partially prefilled concurrently.",
    {
      default: 1,
    },
  ),
  f(
    SC,
    "--long-prefill-token-threshold",
    "int",
    "For chunked prefill, a request is considered long if the prompt is longer than this number of tokens.",
    {
      default: 0,
    },
  ),
  f(SC, "--scheduling-policy", "str", "The scheduling policy to use.", {
    choices: ["fcfs", "priority"],
    default: "fcfs",
  }),
  f(
    SC,
    "--enable-chunked-prefill",
    "optbool",
    "If True, prefill requests can be chunked based on the remaining `max_num_batched_tokens`.",
    {
      default: null,
    },
  ),
  f(
    SC,
    "--disable-chunked-mm-input",
    "optbool",
    "If set to true and chunked prefill is enabled, we do not want to partially schedule a multimodal item.",
  ),
  f(
    SC,
    "--disable-hybrid-kv-cache-manager",
    "optbool",
    "If set to True, KV cache manager will allocate the same size of KV cache for all attention layers even if there are multiple type of attention layers like full attention and sliding window attention.",
  ),
  f(SC, "--async-scheduling", "optbool", "If set to True, perform async scheduling.", { default: null }),
  f(SC, "--stream-interval", "int", "The interval (or buffer size) for streaming in terms of token length.", {
    default: 1,
  }),
  // CompilationConfig (vllm/config/compilation.py)
  f(CO, "--cudagraph-capture-sizes", "list", "Sizes to capture cudagraph."),
  f(CO, "--max-cudagraph-capture-size", "int", "The maximum cudagraph capture size."),
  // VllmConfig (vllm/config/vllm.py)
  f(VC, ["--speculative-config", "-sc"], "str", "Speculative decoding configuration."),
  f(VC, "--kv-transfer-config", "str", "The configurations for distributed KV cache transfer."),
  f(VC, "--kv-events-config", "str", "The configurations for event publishing."),
  f(
    VC,
    ["--compilation-config", "-O"],
    "str",
    "`torch.compile` and cudagraph capture configuration for the model.",
    {
      default: "{}",
    },
  ),
  f(VC, "--additional-config", "str", "Additional config for specified platform.", { default: "{}" }),
  f(VC, "--structured-outputs-config", "str", "Structured outputs configuration."),
  f(
    VC,
    "--shutdown-timeout",
    "int",
    "Shutdown timeout in seconds. 0 = abort all in-flight requests immediately on SIGTERM; > 0 = stop accepting new requests and wait up to this many seconds for in-flight requests to finish.",
    { default: 0 },
  ),
];
