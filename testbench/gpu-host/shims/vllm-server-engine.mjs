/**
 * SimVllm's model resolution (API server) and engine core (mixed into SimVllm, vllm-server.mjs): the
 * checks the API server makes on the model before it starts the engine, then the engine core's startup
 * as vLLM 0.18's V1 engine logs it — devices, weight loading, memory profiling, KV cache sizing, CUDA
 * graphs — with the GPU memory registered for nvidia-smi, and the engine-core failure with its two
 * tracebacks and the API server's "Engine core initialization failed" one.
 *
 * Memory follows vllm/v1/worker/gpu_worker.py: init_device takes a snapshot of the free memory and
 * requested_memory = total_memory × gpu_memory_utilization (a fraction of the GPU's TOTAL memory, per
 * instance); if free < requested it raises "Free memory on device … on startup is less than desired GPU
 * memory utilization …". determine_available_memory then gives the KV cache requested_memory −
 * non_kv_cache_memory (weights + peak activation + non-torch memory), logged as "Available KV cache
 * memory: X GiB"; vllm/v1/core/kv_cache_utils.py _check_enough_kv_cache_memory rejects ≤ 0 ("No available
 * memory for the cache blocks…") and a cache smaller than one max_model_len request ("To serve at least
 * one request with the model's max seq len…"), and logs "GPU KV cache size: N tokens" / "Maximum
 * concurrency for M tokens per request: X.XXx". Weight and activation sizes are the sim's estimates.
 */
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { clearGpuUsage, memoryUsedByOthers, registerGpuUsage } from "./sglang-host.mjs";
import { hash32, isNvfp4, readModelDir, tokenizerError, tokenizerFrames } from "./sglang-model.mjs";
import { GiB, sleep } from "./sglang-server-util.mjs";
import { pyRound2, thousands } from "./vllm-host.mjs";

/** Memory a rank holds before the init_device snapshot: CUDA context and NCCL (GiB). */
const CONTEXT_GIB = 0.45;
const BLOCK_SIZE = 16;

/** Engine methods of SimVllm. */
export const engineMethods = {
  /** ModelConfig and friends, in the API server process: the model directory, then the checks on it. */
  resolveModel() {
    const a = this.args;
    if (a.enable_auto_tool_choice && !a.tool_call_parser) {
      // validate_parsed_serve_args (vllm/entrypoints/openai/cli_args.py)
      this.apiTraceback(
        [
          `  File "${this.src("entrypoints/openai/cli_args.py")}", line 312, in validate_parsed_serve_args`,
          '    raise TypeError("Error: --enable-auto-tool-choice requires --tool-call-parser")',
        ],
        "TypeError: Error: --enable-auto-tool-choice requires --tool-call-parser",
      );
    }
    const configFrames = [
      `  File "${this.src("engine/arg_utils.py")}", line 1329, in create_engine_config`,
      "    model_config = self.create_model_config()",
    ];
    if (this.visible.length === 0) {
      // vllm/config/device.py DeviceConfig.__post_init__: no platform detected (no GPU visible)
      this.apiTraceback(
        [
          `  File "${this.src("engine/arg_utils.py")}", line 1312, in create_engine_config`,
          "    device_config = DeviceConfig(device=cast(Device, current_platform.device_type))",
          `  File "${this.src("config/device.py")}", line 58, in __post_init__`,
          "    raise RuntimeError(",
        ],
        "RuntimeError: Failed to infer device type, please set the environment variable `VLLM_LOGGING_LEVEL=DEBUG` to turn on verbose logging to help debug the issue.",
      );
    }
    let model;
    try {
      model = readModelDir(this.modelPath);
    } catch (err) {
      const e = /** @type {any} */ (err);
      const where =
        e.kind === "missing-dir"
          ? `huggingface_hub.errors.HFValidationError: ${e.message}`
          : `OSError: ${e.message}`;
      this.apiTraceback(
        [
          ...configFrames,
          `  File "${this.src("transformers_utils/config.py")}", line 548, in get_config`,
          "    config_dict, _ = PretrainedConfig.get_config_dict(",
          `  File "${this.site}/transformers/configuration_utils.py", line 662, in get_config_dict`,
          "    config_dict, kwargs = cls._get_config_dict(pretrained_model_name_or_path, **kwargs)",
        ],
        where,
      );
      return;
    }
    this.model = model;
    if (model.autoMap && !a.trust_remote_code) {
      this.apiTraceback(
        [
          ...configFrames,
          `  File "${this.site}/transformers/dynamic_module_utils.py", line 739, in resolve_trust_remote_code`,
          "    raise ValueError(",
        ],
        `ValueError: The repository ${this.modelPath} contains custom code which must be executed to correctly load the model. You can inspect the repository content at ${this.modelPath} .\n You can inspect the repository content at https://hf.co/${this.modelPath}.\nPlease pass the argument \`trust_remote_code=True\` to allow custom code to be run.`,
      );
    }
    if (model.tokenizerAutoMap && !a.trust_remote_code) {
      // the API server loads the tokenizer, whose class is the repo's own
      this.apiTraceback(
        [
          `  File "${this.src("v1/engine/async_llm.py")}", line 134, in __init__`,
          "    self.tokenizer = init_tokenizer_from_configs(model_config=vllm_config.model_config)",
          `  File "${this.src("transformers_utils/tokenizer.py")}", line 217, in get_tokenizer`,
          "    tokenizer = AutoTokenizer.from_pretrained(",
          ...tokenizerFrames(this.site),
        ],
        tokenizerError(model, this.modelPath),
      );
    }
    const ckptQuant = model.quant.method;
    if (a.quantization && ckptQuant && a.quantization !== ckptQuant) {
      // vllm/config/model.py ModelConfig._verify_quantization
      this.apiTraceback(
        [
          ...configFrames,
          `  File "${this.src("config/model.py")}", line 1062, in _verify_quantization`,
          "    raise ValueError(",
        ],
        `ValueError: Quantization method specified in the model config (${ckptQuant}) does not match the quantization method specified in the \`quantization\` argument (${a.quantization}).`,
      );
    }
    this.quantMethod = a.quantization ?? ckptQuant ?? null;
    this.nvfp4 = isNvfp4(model.quant) || this.quantMethod === "modelopt_fp4";
    const derived = model.contextLength;
    const requestedLen = a.max_model_len;
    if (
      requestedLen !== null &&
      requestedLen !== undefined &&
      Number(requestedLen) > derived &&
      process.env.VLLM_ALLOW_LONG_MAX_MODEL_LEN !== "1"
    ) {
      // vllm/config/model.py _get_and_verify_max_len (raised inside the pydantic dataclass validation)
      this.apiTraceback(
        [...configFrames, `  File "${this.site}/pydantic/_internal/_dataclasses.py", line 121, in __init__`],
        `pydantic_core._pydantic_core.ValidationError: 1 validation error for ModelConfig\n  Value error, User-specified max_model_len (${requestedLen}) is greater than the derived max_model_len (max_position_embeddings=${derived} or model_max_length=None in model's config.json). To allow overriding this maximum, set the env var VLLM_ALLOW_LONG_MAX_MODEL_LEN=1. VLLM_ALLOW_LONG_MAX_MODEL_LEN must be used with extreme caution. If the model uses relative position encoding (RoPE), positions exceeding derived_max_model_len lead to nan. If the model uses absolute position encoding, positions exceeding derived_max_model_len will cause a CUDA array out-of-bounds error. [type=value_error, input_value=ArgsKwargs((), {...}), input_type=ArgsKwargs]`,
      );
    }
    this.maxModelLen = Number(requestedLen ?? derived);
    this.log("INFO", "model.py:547", `Resolved architecture: ${model.architecture}`);
    this.log("INFO", "model.py:1510", `Using max model len ${this.maxModelLen}`);
    this.maxBatchedTokens = Number(a.max_num_batched_tokens ?? 8192);
    this.log(
      "INFO",
      "scheduler.py:205",
      `Chunked prefill is enabled with max_num_batched_tokens=${this.maxBatchedTokens}.`,
    );
  },

  /** A rank's log line: the engine core's own with tp 1 (uniproc executor), a worker process's with tp > 1. */
  rankLog(rank, level, where, msg) {
    if (this.tp * this.pp === 1) this.engineLog(level, where, msg);
    else this.log(level, where, msg, `Worker_TP${rank}`, this.enginePid + 1 + rank);
  },

  /**
   * The engine core process: returns false when it never becomes ready (fault hang), exits the process
   * on a failure, true once the engine is up (weights, KV cache, graphs) and its memory registered.
   */
  async startEngine() {
    const a = this.args;
    const model = this.model;
    const t0 = Date.now();
    this.engineLog(
      "INFO",
      "core.py:93",
      `Initializing a V1 LLM engine (v${this.version}) with config: model='${this.modelPath}', speculative_config=None, tokenizer='${a.tokenizer ?? this.modelPath}', skip_tokenizer_init=False, tokenizer_mode=${a.tokenizer_mode}, revision=None, tokenizer_revision=None, trust_remote_code=${a.trust_remote_code ? "True" : "False"}, dtype=torch.bfloat16, max_seq_len=${this.maxModelLen}, download_dir=None, load_format=${a.load_format}, tensor_parallel_size=${this.tp}, pipeline_parallel_size=${this.pp}, data_parallel_size=1, disable_custom_all_reduce=False, quantization=${this.quantMethod ?? "None"}, enforce_eager=${a.enforce_eager ? "True" : "False"}, kv_cache_dtype=${a.kv_cache_dtype}, device_config=cuda, seed=${a.seed}, served_model_name=${this.servedModelName}, enable_prefix_caching=True, enable_chunked_prefill=True`,
    );
    if (!this.compiled) {
      // a checkout on PYTHONPATH without its compiled extensions (no precompiled wheel unpacked, nothing
      // built): vllm/_custom_ops.py warns at import, and the first kernel the worker loads fails
      this.log(
        "WARNING",
        "_custom_ops.py:20",
        `Failed to import from vllm._C with ModuleNotFoundError("No module named 'vllm._C'")`,
      );
      await sleep(30);
      this.engineCrash(
        [
          `  File "${this.src("v1/engine/core.py")}", line 83, in __init__`,
          "    self.model_executor = executor_class(vllm_config)",
          `  File "${this.src("v1/worker/gpu_worker.py")}", line 201, in init_device`,
          "    from vllm import _custom_ops as ops",
        ],
        "ModuleNotFoundError: No module named 'vllm._C'",
      );
    }
    if (this.faults.modes.has("crash-on-start")) {
      // fault crash-on-start: the engine's kernels do not run on this GPU (a wheel built for other archs)
      await sleep(30);
      this.engineCrash(
        [
          `  File "${this.src("v1/engine/core.py")}", line 83, in __init__`,
          "    self.model_executor = executor_class(vllm_config)",
          `  File "${this.src("v1/executor/abstract.py")}", line 54, in __init__`,
          "    self._init_executor()",
          `  File "${this.src("v1/executor/uniproc_executor.py")}", line 54, in _init_executor`,
          "    self.driver_worker.init_device()",
          `  File "${this.src("v1/worker/gpu_worker.py")}", line 201, in init_device`,
          "    torch.cuda.set_device(self.device)",
        ],
        "torch.AcceleratorError: CUDA error: no kernel image is available for execution on the device\nCUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect.\nFor debugging consider passing CUDA_LAUNCH_BLOCKING=1\nCompile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.",
      );
    }
    const world = this.tp * this.pp;
    if (world > this.visible.length) {
      // vllm/v1/executor/multiproc_executor.py _init_executor
      this.engineCrash(
        [
          `  File "${this.src("v1/engine/core.py")}", line 83, in __init__`,
          "    self.model_executor = executor_class(vllm_config)",
          `  File "${this.src("v1/executor/multiproc_executor.py")}", line 97, in _init_executor`,
          "    assert self.world_size <= cuda_device_count_stateless(), (",
        ],
        `AssertionError: please set tensor_parallel_size (${this.tp}) to less than max local gpu count (${this.visible.length})`,
      );
    }
    const totalGiB = this.gpu.memMiB / 1024;
    const others = memoryUsedByOthers();
    this.physical = Array.from({ length: world }, (_, r) => this.visible[r]);
    this.requestedGiB = totalGiB * this.util;
    let freeMin = Number.POSITIVE_INFINITY;
    for (let r = 0; r < world; r++) {
      const free = Math.max(0, totalGiB - (others.get(this.physical[r]) ?? 0) / 1024 - CONTEXT_GIB);
      freeMin = Math.min(freeMin, free);
      if (free < this.requestedGiB) {
        this.engineCrash(
          this.workerFrames("init_device", [
            `  File "${this.src("v1/worker/gpu_worker.py")}", line 239, in init_device`,
            "    raise ValueError(",
          ]),
          `ValueError: Free memory on device cuda:${r} (${pyRound2(free)}/${pyRound2(totalGiB)} GiB) on startup is less than desired GPU memory utilization (${this.util}, ${pyRound2(this.requestedGiB)} GiB). Decrease GPU memory utilization or reduce GPU memory used by other processes.`,
        );
      }
    }
    for (let r = 0; r < world; r++)
      this.rankLog(r, "INFO", "gpu_model_runner.py:2602", `Starting to load model ${this.modelPath}...`);
    const cc = this.gpu.cc;
    if (this.nvfp4 && cc < 10)
      this.engineLog(
        "WARNING",
        "marlin_utils_fp4.py:196",
        "Your GPU does not have native support for FP4 computation but FP4 quantization is being used. Weight-only FP4 compression will be used leveraging the Marlin kernel. This may degrade performance for compute-heavy workloads.",
      );
    this.rankLog(
      0,
      "INFO",
      "cuda.py:366",
      `Using ${cc >= 10 ? "FLASHINFER" : "FLASH_ATTN"} attention backend out of potential backends: ['FLASH_ATTN', 'FLASHINFER', 'TRITON_ATTN', 'FLEX_ATTENTION']`,
    );

    const weightsGiB = model.weightBytes / this.tp / GiB;
    const oom = this.faults.modes.has("oom") || weightsGiB > freeMin - 0.25;
    const hang = this.faults.modes.has("hang");
    const shards = model.shards;
    const stopAt = oom ? Math.max(1, Math.floor(shards * 0.6)) : hang ? Math.floor(shards / 2) : shards;
    const loadMs = this.faults.loadSeconds * 1000;
    const tLoad = Date.now();
    process.stderr.write(
      `Loading safetensors checkpoint shards:   0% Completed | 0/${shards} [00:00<?, ?it/s]\n`,
    );
    for (let i = 1; i <= stopAt; i++) {
      await sleep(loadMs / shards);
      if (oom && i === stopAt) break;
      const elapsed = (Date.now() - tLoad) / 1000;
      const pct = String(Math.floor((i / shards) * 100)).padStart(3);
      process.stderr.write(
        `Loading safetensors checkpoint shards: ${pct}% Completed | ${i}/${shards} [00:0${Math.min(9, Math.floor(elapsed))}<00:00, ${(i / Math.max(elapsed, 1e-3)).toFixed(2)}it/s]\n`,
      );
    }
    if (hang) {
      // never finishes loading: the API server waits for the engine's handshake, the port never listens
      setInterval(() => {}, 60_000);
      return false;
    }
    if (oom) this.weightsOom(weightsGiB, totalGiB, freeMin, shards);
    const loadSeconds = (Date.now() - tLoad) / 1000;
    for (let r = 0; r < world; r++) {
      this.rankLog(
        r,
        "INFO",
        "default_loader.py:267",
        `Loading weights took ${loadSeconds.toFixed(2)} seconds`,
      );
      this.rankLog(
        r,
        "INFO",
        "gpu_model_runner.py:2653",
        `Model loading took ${weightsGiB.toFixed(4)} GiB memory and ${(loadSeconds + 0.35).toFixed(6)} seconds`,
      );
    }
    if (!a.enforce_eager) await this.torchCompile();

    // determine_available_memory: requested − (weights + peak activation + non-torch)
    const hidden = Number(model.text.hidden_size) || 4096;
    const activationGiB = Math.min(4, 0.3 + (hidden * this.maxBatchedTokens * 20) / GiB);
    const nonTorchGiB = 0.12 + (world > 1 ? 0.25 : 0);
    const kvGiB = this.requestedGiB - (weightsGiB + activationGiB + nonTorchGiB);
    this.engineLog("INFO", "gpu_worker.py:298", `Available KV cache memory: ${kvGiB.toFixed(2)} GiB`);
    const kvFrames = [
      `  File "${this.src("v1/engine/core.py")}", line 92, in __init__`,
      "    num_gpu_blocks, num_cpu_blocks, kv_cache_config = self._initialize_kv_caches(",
      `  File "${this.src("v1/engine/core.py")}", line 199, in _initialize_kv_caches`,
      "    kv_cache_configs = get_kv_cache_configs(",
      `  File "${this.src("v1/core/kv_cache_utils.py")}", line 1243, in get_kv_cache_configs`,
      "    _check_enough_kv_cache_memory(",
      `  File "${this.src("v1/core/kv_cache_utils.py")}", line 686, in _check_enough_kv_cache_memory`,
      "    raise ValueError(",
    ];
    if (kvGiB <= 0) {
      this.engineCrash(
        kvFrames,
        "ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing the engine. See https://docs.vllm.ai/en/latest/configuration/conserving_memory/ for more details.",
      );
    }
    const kvDtype = String(a.kv_cache_dtype ?? "auto");
    const kvBytes = kvDtype.startsWith("fp8") ? 1 : 2;
    const kvHeads = Math.max(1, Math.floor(model.numKvHeads / this.tp));
    const bytesPerToken = 2 * model.numLayers * kvHeads * model.headDim * kvBytes;
    const blocks = Math.floor((kvGiB * GiB) / bytesPerToken / BLOCK_SIZE);
    const tokens = blocks * BLOCK_SIZE;
    const neededGiB = (Math.ceil(this.maxModelLen / BLOCK_SIZE) * BLOCK_SIZE * bytesPerToken) / GiB;
    if (neededGiB > kvGiB) {
      this.engineCrash(
        kvFrames,
        `ValueError: To serve at least one request with the model's max seq len (${this.maxModelLen}), (${neededGiB.toFixed(2)} GiB KV cache is needed, which is larger than the available KV cache memory (${kvGiB.toFixed(2)} GiB). Based on the available memory, the estimated maximum model length is ${tokens}. Try increasing \`gpu_memory_utilization\` or decreasing \`max_model_len\` when initializing the engine.`,
      );
    }
    this.kvTokens = tokens;
    this.kvGiB = kvGiB;
    this.engineLog("INFO", "kv_cache_utils.py:1087", `GPU KV cache size: ${thousands(tokens)} tokens`);
    this.engineLog(
      "INFO",
      "kv_cache_utils.py:1091",
      `Maximum concurrency for ${thousands(this.maxModelLen)} tokens per request: ${(tokens / this.maxModelLen).toFixed(2)}x`,
    );
    let graphGiB = 0;
    if (!a.enforce_eager) {
      process.stderr.write(
        "Capturing CUDA graphs (mixed prefill-decode, PIECEWISE): 100%|██████████| 67/67 [00:01<00:00, 52.41it/s]\n",
      );
      const captureStart = Date.now();
      await sleep(30);
      graphGiB = 0.52;
      // capture_model logs the time it took with "%.0f secs" (vllm/v1/worker/gpu_model_runner.py)
      this.engineLog(
        "INFO",
        "gpu_model_runner.py:3480",
        `Graph capturing finished in ${((Date.now() - captureStart) / 1000).toFixed(0)} secs, took ${graphGiB.toFixed(2)} GiB`,
      );
    }
    this.engineLog(
      "INFO",
      "core.py:210",
      `init engine (profile, create kv cache, warmup model) took ${((Date.now() - t0) / 1000).toFixed(2)} seconds`,
    );
    this.maxNumSeqs = Number(a.max_num_seqs ?? 256);
    this.memory = {
      weights: weightsGiB,
      kv: kvGiB,
      activation: activationGiB,
      nonTorch: nonTorchGiB,
      graph: graphGiB,
    };
    this.usage = {
      gpus: this.physical,
      memMiB: Math.round(this.awakeGiB() * 1024),
      util: 0,
      processName: "VLLM::EngineCore",
    };
    registerGpuUsage(this.usage);
    return true;
  },

  /**
   * torch.compile of the model (vllm/compilation/backends.py, monitor.py): its cache under VLLM_CACHE_ROOT
   * (default ~/.cache/vllm) in torch_compile_cache/<hash>/rank_0_0/backbone; a cold cache compiles
   * (`compileSeconds`, a fault setting) and stores the graph, a warm one loads it ("Directly load the
   * compiled graph(s) for shape None from the cache"). Only a cache root the unit names is written.
   */
  async torchCompile() {
    const root = process.env.VLLM_CACHE_ROOT;
    const hash = (hash32(this.modelPath) >>> 0).toString(16).padStart(10, "0");
    const dir = `${root === undefined || root === "" ? "/root/.cache/vllm" : root}/torch_compile_cache/${hash}/rank_0_0/backbone`;
    this.engineLog("INFO", "backends.py:548", `Using cache directory: ${dir} for vLLM's torch.compile`);
    const marker = root === undefined || root === "" ? undefined : join(dir, "vllm_compile_cache.py");
    const t0 = Date.now();
    if (marker !== undefined && existsSync(marker)) {
      await sleep(10);
      this.engineLog(
        "INFO",
        "backends.py:215",
        `Directly load the compiled graph(s) for shape None from the cache, took ${((Date.now() - t0) / 1000).toFixed(3)} s`,
      );
    } else {
      await sleep(this.faults.compileSeconds * 1000);
      this.engineLog(
        "INFO",
        "backends.py:257",
        `Compiling a graph for dynamic shape takes ${((Date.now() - t0) / 1000).toFixed(2)} s`,
      );
      if (marker !== undefined) {
        mkdirSync(dir, { recursive: true });
        writeFileSync(marker, "# the compiled graph's index\n");
      }
    }
    this.engineLog(
      "INFO",
      "monitor.py:34",
      `torch.compile takes ${((Date.now() - t0) / 1000).toFixed(2)} s in total`,
    );
  },

  /** What the engine holds on each GPU while awake (GiB). */
  awakeGiB() {
    const m = this.memory;
    return m.weights + m.kv + m.activation + m.nonTorch + m.graph + CONTEXT_GIB;
  },

  /** Frames from the engine core down to a worker method. @param {string} method @param {string[]} tail */
  workerFrames(method, tail) {
    return [
      `  File "${this.src("v1/engine/core.py")}", line 83, in __init__`,
      "    self.model_executor = executor_class(vllm_config)",
      `  File "${this.src("v1/executor/abstract.py")}", line 54, in __init__`,
      "    self._init_executor()",
      `  File "${this.src("v1/executor/uniproc_executor.py")}", line 54, in _init_executor`,
      `    self.driver_worker.${method}()`,
      `  File "${this.src("v1/worker/worker_base.py")}", line 324, in ${method}`,
      `    self.worker.${method}()  # type: ignore`,
      ...tail,
    ];
  },

  /** torch.OutOfMemoryError while loading the weights (fault oom, or weights larger than the free memory). */
  weightsOom(weightsGiB, totalGiB, freeGiB, shards) {
    const tryGiB = Math.max(0.5, Math.min(weightsGiB / shards, 8));
    const inUse = Math.min(totalGiB - 0.3, Math.max(weightsGiB * 0.6 + 0.6, freeGiB - 0.3));
    const msg = `CUDA out of memory. Tried to allocate ${tryGiB.toFixed(2)} GiB. GPU 0 has a total capacity of ${totalGiB.toFixed(2)} GiB of which ${Math.max(0.01, totalGiB - inUse - (totalGiB - freeGiB - CONTEXT_GIB)).toFixed(2)} GiB is free. Including non-PyTorch memory, this process has ${inUse.toFixed(2)} GiB memory in use. Of the allocated memory ${(inUse - 0.9).toFixed(2)} GiB is allocated by PyTorch, and ${Math.round(180 + (hash32(this.modelPath) % 300))}.00 MiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation for Memory Management  (https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)`;
    // vllm/v1/worker/gpu_model_runner.py load_model logs this before re-raising
    this.engineLog(
      "ERROR",
      "gpu_model_runner.py:2667",
      `Failed to load model - not enough GPU memory. Try lowering --gpu-memory-utilization to free memory for weights, increasing --tensor-parallel-size, or using --quantization. See https://docs.vllm.ai/en/latest/configuration/conserving_memory/ for more tips. (original error: ${msg})`,
    );
    this.engineCrash(
      this.workerFrames("load_model", [
        `  File "${this.src("v1/worker/gpu_model_runner.py")}", line 2637, in load_model`,
        "    self.model = model_loader.load_model(",
        `  File "${this.src("model_executor/model_loader/base_loader.py")}", line 55, in load_model`,
        "    self.load_weights(model, model_config)",
        `  File "${this.site}/torch/utils/_device.py", line 104, in __torch_function__`,
        "    return func(*args, **kwargs)",
      ]),
      `torch.OutOfMemoryError: ${msg}`,
    );
  },

  /**
   * The engine core fails during startup: its ERROR log lines (logger.exception in run_engine_core), the
   * multiprocessing traceback of "Process EngineCore_DP0:", then the API server's own traceback ending in
   * "RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}"
   * (vllm/v1/engine/utils.py wait_for_engine_startup); exit 1.
   * @param {string[]} frames below EngineCoreProc.__init__ @param {string} exc
   */
  engineCrash(frames, exc) {
    const excLines = exc.split("\n");
    const head = [
      "Traceback (most recent call last):",
      `  File "${this.src("v1/engine/core.py")}", line 699, in run_engine_core`,
      "    engine_core = EngineCoreProc(*args, **kwargs)",
      `  File "${this.src("v1/engine/core.py")}", line 498, in __init__`,
      "    super().__init__(",
      ...frames,
      ...excLines,
    ];
    this.engineLog("ERROR", "core.py:708", "EngineCore failed to start.");
    for (const line of head) this.engineLog("ERROR", "core.py:708", line);
    const tag = `(EngineCore_DP0 pid=${this.enginePid})`;
    const mp = [
      "Process EngineCore_DP0:",
      "Traceback (most recent call last):",
      '  File "/usr/lib/python3.12/multiprocessing/process.py", line 314, in _bootstrap',
      "    self.run()",
      '  File "/usr/lib/python3.12/multiprocessing/process.py", line 108, in run',
      "    self._target(*self._args, **self._kwargs)",
      `  File "${this.src("v1/engine/core.py")}", line 712, in run_engine_core`,
      "    raise e",
      ...head.slice(1),
    ];
    for (const line of mp) process.stderr.write(`${tag} ${line}\n`);
    const api = [
      "Traceback (most recent call last):",
      `  File "${process.env.MODELSWAP_VLLM_ARGV0 ?? "/usr/local/bin/vllm"}", line 10, in <module>`,
      "    sys.exit(main())",
      `  File "${this.src("entrypoints/cli/main.py")}", line 73, in main`,
      "    args.dispatch_function(args)",
      `  File "${this.src("entrypoints/cli/serve.py")}", line 60, in cmd`,
      "    uvloop.run(run_server(args))",
      `  File "${this.src("entrypoints/openai/api_server.py")}", line 1888, in run_server`,
      "    await run_server_worker(listen_address, sock, args, **uvicorn_kwargs)",
      `  File "${this.src("entrypoints/openai/api_server.py")}", line 1906, in run_server_worker`,
      "    async with build_async_engine_client(",
      `  File "${this.src("v1/engine/async_llm.py")}", line 134, in __init__`,
      "    self.engine_core = EngineCoreClient.make_async_mp_client(",
      `  File "${this.src("v1/engine/core_client.py")}", line 474, in __init__`,
      "    with launch_core_engines(vllm_config, executor_class, log_stats) as (",
      `  File "${this.src("v1/engine/utils.py")}", line 874, in launch_core_engines`,
      "    wait_for_engine_startup(",
      `  File "${this.src("v1/engine/utils.py")}", line 931, in wait_for_engine_startup`,
      "    raise RuntimeError(",
      "RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}",
    ];
    for (const line of api) this.raw(line, process.stderr);
    clearGpuUsage();
    process.exit(1);
  },
};
