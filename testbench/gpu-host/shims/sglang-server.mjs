/**
 * Imitates: `python -m sglang.launch_server <flags>` — the SGLang HTTP server (SRT).
 *
 * Real HTTP (node:http) with SGLang's JSON shapes for /health, /health_generate, /v1/models,
 * /get_model_info, /get_server_info, /generate, /v1/completions, /v1/chat/completions; argparse
 * flag handling (sglang-flags.mjs); the real startup log lines on stdout (the journal); a slow
 * load during which the port is not bound yet (like the real server, which starts uvicorn only
 * after the scheduler has loaded the weights), then a warmup during which /health answers 503;
 * GPU usage registered for nvidia-smi; and faults: NVFP4 on sm_120 without the FlashInfer
 * backends gives NaN output ("!!!!", null logprobs), NVFP4 on compute capability < 10 crashes
 * at load, plus the switches in faults.json (see SGLANG.md).
 */

import { randomBytes, randomUUID } from "node:crypto";
import { createServer, STATUS_CODES } from "node:http";
import { join } from "node:path";
import {
  ArgError,
  formatHelp,
  formatUsage,
  loadFlagSpecs,
  parseArgs,
  pyValue,
  setting,
} from "./sglang-flags.mjs";
import {
  clearGpuUsage,
  engineDir,
  engineVersion,
  gpuSet,
  memoryUsedByOthers,
  readFaults,
  registerGpuUsage,
  sglangFaults,
  sitePackagesDir,
} from "./sglang-host.mjs";
import { generate, hash32, isNvfp4, readModelDir, tokenize } from "./sglang-model.mjs";

const PROG = "launch_server.py";
const GiB = 1024 ** 3;
const LEVELS = { debug: 10, info: 20, warning: 30, error: 40, critical: 50 };

/** @param {number} ms */
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, Math.max(0, ms)));

function stamp() {
  const d = new Date();
  const p = (/** @type {number} */ n) => String(n).padStart(2, "0");
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
}

/** @param {number} n */
const gb = (n) => n.toFixed(2);

/**
 * Runs the simulated server. Resolves only when the process is about to exit.
 * @param {string[]} argv arguments after `-m sglang.launch_server`
 */
export async function launchServer(argv) {
  const engine = engineDir();
  const { specs } = loadFlagSpecs(engine);
  let parsed;
  try {
    parsed = parseArgs(specs, argv);
  } catch (err) {
    if (!(err instanceof ArgError)) throw err;
    process.stderr.write(formatUsage(PROG, specs));
    process.stderr.write(`${PROG}: error: ${err.message}\n`);
    process.exit(2);
  }
  if (parsed.help) {
    process.stdout.write(formatHelp(PROG, specs));
    process.exit(0);
  }
  const server = new SimServer(parsed.values, engine);
  await server.run();
}

class SimServer {
  /** @param {Record<string, any>} args @param {string | null} engine */
  constructor(args, engine) {
    this.args = args;
    this.engine = engine;
    this.site = sitePackagesDir() ?? "/usr/local/lib/python3.12/dist-packages";
    this.srcRoot = engine ? join(engine, "sglang") : join(this.site, "sglang");
    this.version = engineVersion() ?? "0.5.6";
    this.port = Number(args.port ?? 30000);
    this.host = String(args.host ?? "127.0.0.1");
    this.tp = Math.max(1, Number(args.tp_size ?? 1));
    this.dp = Math.max(1, Number(args.dp_size ?? 1));
    this.baseGpu = Number(args.base_gpu_id ?? 0);
    this.faults = sglangFaults(this.port, String(this.args.model_path ?? ""));
    this.gpu = gpuSet();
    this.level = LEVELS[String(args.log_level ?? "info").toLowerCase()] ?? 20;
    this.status = "Starting";
    /** @type {import("node:http").Server | null} */
    this.http = null;
    this.running = 0;
    this.queued = 0;
    /** @type {(() => void)[]} */
    this.waiters = [];
    this.genTokensWindow = 0;
    this.lastGenThroughput = 0;
    this.servedRequests = 0;
    this.shuttingDown = false;
    this.gpuUtilBusy = false;
    /** @type {NodeJS.Timeout | undefined} */
    this.idleTimer = undefined;
  }

  /** @param {string} msg @param {number} [rank] @param {keyof typeof LEVELS} [level] */
  log(msg, rank, level = "info") {
    if ((LEVELS[level] ?? 20) < this.level) return;
    const tag = rank === undefined ? stamp() : `${stamp()} TP${rank}`;
    process.stdout.write(`[${tag}] ${msg}\n`);
  }

  /** Logs the same line for every TP rank. @param {(rank:number)=>string} fn */
  logRanks(fn) {
    for (let r = 0; r < this.tp; r++) this.log(fn(r), r);
  }

  /** @param {string} rel */
  src(rel) {
    return join(this.srcRoot, rel);
  }

  installSignals() {
    // A closed journal pipe must not crash the server with EPIPE.
    process.stdout.on("error", () => {});
    process.stderr.on("error", () => {});
    const stop = () => this.shutdown(0);
    process.on("SIGTERM", stop);
    process.on("SIGINT", stop);
    process.on("exit", () => clearGpuUsage());
  }

  /** @param {number} code */
  shutdown(code) {
    if (this.shuttingDown) return;
    this.shuttingDown = true;
    if (this.http) {
      this.log("INFO:     Shutting down");
      this.log("INFO:     Waiting for application shutdown.");
      this.log("INFO:     Application shutdown complete.");
      this.log(`INFO:     Finished server process [${process.pid}]`);
      this.http.closeAllConnections?.();
      this.http.close();
    }
    clearGpuUsage();
    process.exit(code);
  }

  /** A Python traceback of the main process (stderr), then exit 1. @param {string[]} frames @param {string} exc */
  mainTraceback(frames, exc) {
    const lines = [
      "Traceback (most recent call last):",
      '  File "<frozen runpy>", line 198, in _run_module_as_main',
      '  File "<frozen runpy>", line 88, in _run_code',
      `  File "${this.src("launch_server.py")}", line 29, in <module>`,
      "    server_args = prepare_server_args(sys.argv[1:])",
      ...frames,
      exc,
    ];
    process.stderr.write(`${lines.join("\n")}\n`);
    clearGpuUsage();
    process.exit(1);
  }

  /**
   * A scheduler (TP rank) exception as SGLang logs it, then the parent's sigquit line, exit 1.
   * @param {string[]} frames @param {string} exc
   */
  schedulerCrash(frames, exc) {
    const tb = [
      "Traceback (most recent call last):",
      `  File "${this.src("srt/managers/scheduler.py")}", line 2968, in run_scheduler_process`,
      ...frames,
      exc,
    ].join("\n");
    this.log(`Scheduler hit an exception: ${tb}\n`, 0, "error");
    this.log("Received sigquit from a child process. It usually means the child failed.", undefined, "error");
    clearGpuUsage();
    process.exit(1);
  }

  loadFrames() {
    return [
      "    scheduler = Scheduler(",
      `  File "${this.src("srt/managers/scheduler.py")}", line 331, in __init__`,
      "    self.tp_worker = TpModelWorker(",
      `  File "${this.src("srt/managers/tp_worker.py")}", line 95, in __init__`,
      "    self._model_runner = ModelRunner(",
      `  File "${this.src("srt/model_executor/model_runner.py")}", line 287, in __init__`,
      "    self.initialize(min_per_gpu_memory)",
      `  File "${this.src("srt/model_executor/model_runner.py")}", line 372, in initialize`,
      "    self.load_model()",
      `  File "${this.src("srt/model_executor/model_runner.py")}", line 812, in load_model`,
      "    self.model = get_model(",
      `  File "${this.src("srt/model_loader/__init__.py")}", line 28, in get_model`,
      "    return loader.load_model(",
      `  File "${this.src("srt/model_loader/loader.py")}", line 641, in load_model`,
    ];
  }

  async run() {
    this.installSignals();
    const a = this.args;
    const modes = this.faults.modes;

    if (modes.has("crash-on-start")) {
      process.stderr.write(
        [
          "Traceback (most recent call last):",
          '  File "<frozen runpy>", line 189, in _run_module_as_main',
          '  File "<frozen runpy>", line 112, in _get_module_details',
          `  File "${this.src("__init__.py")}", line 4, in <module>`,
          "    from sglang.srt.entrypoints.engine import Engine",
          `  File "${this.src("srt/entrypoints/engine.py")}", line 38, in <module>`,
          "    from sglang.srt.managers.data_parallel_controller import (",
          `  File "${this.src("srt/layers/quantization/fp8_kernel.py")}", line 24, in <module>`,
          "    from sgl_kernel import sgl_per_token_group_quant_fp8",
          `  File "${this.site}/sgl_kernel/__init__.py", line 5, in <module>`,
          "    common_ops = _load_architecture_specific_ops()",
          `  File "${this.site}/sgl_kernel/load_utils.py", line 188, in _load_architecture_specific_ops`,
          "    raise ImportError(error_msg)",
          `ImportError: ${this.site}/sgl_kernel/sm100/common_ops.abi3.so: undefined symbol: _ZN3c104cuda9SetDeviceEab`,
          "",
        ].join("\n"),
      );
      clearGpuUsage();
      process.exit(1);
    }

    // --- server args / model config (main process) --------------------------------------------
    const modelPath = String(a.model_path);
    let model;
    try {
      model = readModelDir(modelPath);
    } catch (err) {
      const e = /** @type {any} */ (err);
      const frames = [
        `  File "${this.src("srt/server_args.py")}", line 4711, in prepare_server_args`,
        "    return ServerArgs.from_cli_args(raw_args)",
        `  File "${this.src("srt/server_args.py")}", line 1104, in __post_init__`,
        "    self._handle_model_specific_adjustments()",
        `  File "${this.src("srt/utils/hf_transformers_utils.py")}", line 212, in get_config`,
        "    config = AutoConfig.from_pretrained(",
      ];
      if (e.kind === "missing-dir") {
        this.mainTraceback(
          [
            ...frames,
            `  File "${this.site}/huggingface_hub/utils/_validators.py", line 154, in validate_repo_id`,
            "    raise HFValidationError(",
          ],
          `huggingface_hub.errors.HFValidationError: ${e.message}`,
        );
      }
      if (e.kind === "offline") {
        this.mainTraceback(
          [
            ...frames,
            `  File "${this.site}/transformers/utils/hub.py", line 543, in cached_files`,
            "    raise OSError(",
          ],
          `OSError: ${e.message}`,
        );
      }
      if (e.kind === "no-config") {
        this.mainTraceback(
          [
            ...frames,
            `  File "${this.site}/transformers/utils/hub.py", line 511, in cached_files`,
            "    raise OSError(",
          ],
          `OSError: ${e.message}`,
        );
      }
      this.mainTraceback(
        [
          ...frames,
          `  File "${this.site}/transformers/configuration_utils.py", line 770, in _get_config_dict`,
          "    raise OSError(",
        ],
        `OSError: ${e.message}`,
      );
      return;
    }
    this.model = model;

    if (model.autoMap && !a.trust_remote_code) {
      this.mainTraceback(
        [
          `  File "${this.src("srt/utils/hf_transformers_utils.py")}", line 212, in get_config`,
          "    config = AutoConfig.from_pretrained(",
          `  File "${this.site}/transformers/dynamic_module_utils.py", line 739, in resolve_trust_remote_code`,
          "    raise ValueError(",
        ],
        `ValueError: The repository ${modelPath} contains custom code which must be executed to correctly load the model. You can inspect the repository content at ${modelPath} .\n You can inspect the repository content at https://hf.co/${modelPath}.\nPlease pass the argument \`trust_remote_code=True\` to allow custom code to be run.`,
      );
    }

    const ctxDerived = model.contextLength;
    if (
      a.context_length !== null &&
      a.context_length !== undefined &&
      Number(a.context_length) > ctxDerived &&
      process.env.SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN !== "1"
    ) {
      this.mainTraceback(
        [
          `  File "${this.src("srt/configs/model_config.py")}", line 302, in __init__`,
          "    raise ValueError(",
        ],
        `ValueError: User-specified context_length (${a.context_length}) is greater than the derived context_length (${ctxDerived}). This may lead to incorrect model outputs or CUDA errors. Note that the derived context_length may differ from max_position_embeddings in the model's config. To allow overriding this maximum, set the env var SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1`,
      );
    }
    this.contextLength = Number(a.context_length ?? ctxDerived);

    const requestedQuant = a.quantization ?? null;
    const ckptQuant = model.quant.method;
    if (
      requestedQuant &&
      ckptQuant &&
      requestedQuant !== ckptQuant &&
      !(requestedQuant === "modelopt_fp4" && isNvfp4(model.quant))
    ) {
      this.mainTraceback(
        [
          `  File "${this.src("srt/configs/model_config.py")}", line 640, in _verify_quantization`,
          "    raise ValueError(",
        ],
        `ValueError: Quantization method specified in the model config (${ckptQuant}) does not match the quantization method specified in the \`quantization\` argument (${requestedQuant}).`,
      );
    }
    this.quantMethod = requestedQuant ?? ckptQuant;
    this.nvfp4 = requestedQuant === "modelopt_fp4" || isNvfp4(model.quant);

    this.servedModelName = String(a.served_model_name ?? modelPath);
    this.log(`server_args=ServerArgs(${this.serverArgsRepr()})`);

    // --- scheduler / TP workers ------------------------------------------------------------
    if (this.tp * this.dp + this.baseGpu > this.gpu.count) {
      this.log("Init torch distributed begin.", 0);
      this.schedulerCrash(
        [
          "    scheduler = Scheduler(",
          `  File "${this.src("srt/model_executor/model_runner.py")}", line 560, in init_torch_distributed`,
          "    torch.get_device_module(self.device).set_device(self.gpu_id)",
          `  File "${this.site}/torch/cuda/__init__.py", line 567, in set_device`,
          "    torch._C._cuda_setDevice(device)",
        ],
        "torch.AcceleratorError: CUDA error: invalid device ordinal\nGPU device may be out of range, do you have enough GPUs?\nCUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect.\nFor debugging consider passing CUDA_LAUNCH_BLOCKING=1\nCompile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.\n",
      );
    }
    const cc = this.gpu.cc;
    this.log(`Attention backend not specified. Use ${this.defaultAttentionBackend()} backend by default.`);
    if (
      a.moe_runner_backend === "auto" ||
      a.moe_runner_backend === null ||
      a.moe_runner_backend === undefined
    ) {
      if (model.isMoe)
        this.log("MOE_RUNNER_BACKEND is not initialized, the backend will be automatically selected", 0);
    }
    await sleep(30);
    this.logRanks(() => "Init torch distributed begin.");
    await sleep(20);
    this.logRanks(() => "Init torch distributed ends. mem usage=0.57 GB");

    if (model.numHeads % this.tp !== 0) {
      this.schedulerCrash(
        [
          ...this.loadFrames(),
          "    model = _initialize_model(",
          `  File "${this.src("srt/distributed/utils.py")}", line 38, in divide`,
          "    ensure_divisibility(numerator, denominator)",
          `  File "${this.src("srt/distributed/utils.py")}", line 31, in ensure_divisibility`,
          '    assert numerator % denominator == 0, "{} is not divisible by {}".format(',
        ],
        `AssertionError: ${model.numHeads} is not divisible by ${this.tp}`,
      );
    }

    const totalGiB = this.gpu.memMiB / 1024;
    const others = memoryUsedByOthers();
    let othersMax = 0;
    for (let g = this.baseGpu; g < this.baseGpu + this.tp * this.dp; g++)
      othersMax = Math.max(othersMax, (others.get(g) ?? 0) / 1024);
    const availStart = Math.max(0, totalGiB - othersMax - 0.57 - 0.35);
    this.logRanks(() => `Load weight begin. avail mem=${gb(availStart)} GB`);

    if (this.nvfp4 && cc < 10) {
      await sleep(50);
      this.schedulerCrash(
        [
          ...this.loadFrames(),
          "    model = _initialize_model(",
          `  File "${this.src("srt/model_loader/loader.py")}", line 262, in _initialize_model`,
          "    quant_config = _get_quantization_config(",
          `  File "${this.src("srt/model_loader/loader.py")}", line 219, in _get_quantization_config`,
          "    raise ValueError(",
        ],
        `ValueError: The quantization method modelopt_fp4 is not supported for the current GPU. Minimum capability: 100. Current capability: ${Math.round(cc * 10)}.`,
      );
    }

    const weightsGiB = model.weightBytes / this.tp / GiB;
    const fitsWeights = weightsGiB <= availStart - 0.5;
    const oom = modes.has("oom") || !fitsWeights;
    const shards = model.shards;
    const loadMs = this.faults.loadSeconds * 1000;
    const hang = modes.has("hang");
    const stopAt = oom ? Math.max(1, Math.floor(shards * 0.6)) : hang ? Math.floor(shards / 2) : shards;
    const t0 = Date.now();
    process.stdout.write(
      `Loading safetensors checkpoint shards:   0% Completed | 0/${shards} [00:00<?, ?it/s]\n`,
    );
    for (let i = 1; i <= stopAt; i++) {
      await sleep(loadMs / shards);
      if (oom && i === stopAt) break;
      const elapsed = (Date.now() - t0) / 1000;
      const rate = i / Math.max(elapsed, 1e-3);
      const pct = String(Math.floor((i / shards) * 100)).padStart(3);
      const remaining = (shards - i) / rate;
      process.stdout.write(
        `Loading safetensors checkpoint shards: ${pct}% Completed | ${i}/${shards} [${mmss(elapsed)}<${mmss(remaining)}, ${rate.toFixed(2)}it/s]\n`,
      );
    }
    if (hang) {
      // Never finishes loading: keep the event loop alive until SIGTERM.
      setInterval(() => {}, 60_000);
      return;
    }
    if (oom) {
      const tryGiB = Math.max(0.5, Math.min(weightsGiB / shards, 8));
      const inUse = Math.min(totalGiB - 0.3, Math.max(weightsGiB * 0.6 + 0.6, totalGiB - othersMax - 0.3));
      this.schedulerCrash(
        [
          ...this.loadFrames(),
          "    self.load_weights_and_postprocess(",
          `  File "${this.src("srt/model_loader/loader.py")}", line 673, in load_weights_and_postprocess`,
          "    model.load_weights(weights)",
          `  File "${this.src(`srt/models/${model.modelType}.py`)}", line 1187, in load_weights`,
          "    weight_loader(param, loaded_weight, shard_id)",
          `  File "${this.site}/torch/utils/_device.py", line 104, in __torch_function__`,
          "    return func(*args, **kwargs)",
        ],
        `torch.OutOfMemoryError: CUDA out of memory. Tried to allocate ${tryGiB.toFixed(2)} GiB. GPU 0 has a total capacity of ${totalGiB.toFixed(2)} GiB of which ${Math.max(0.01, totalGiB - inUse - othersMax).toFixed(2)} GiB is free. Including non-PyTorch memory, this process has ${inUse.toFixed(2)} GiB memory in use. Of the allocated memory ${(inUse - 0.9).toFixed(2)} GiB is allocated by PyTorch, and ${Math.round(180 + (hash32(modelPath) % 300))}.00 MiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation for Memory Management  (https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)`,
      );
    }
    const loadElapsed = (Date.now() - t0) / 1000;
    const availAfterLoad = availStart - weightsGiB;
    const quantPart = this.quantMethod
      ? `quant=${this.quantMethod}, ${model.quant.algo ? `quant_algo=${model.quant.algo}, ` : ""}`
      : "";
    this.logRanks(
      () =>
        `Load weight end. elapsed=${loadElapsed.toFixed(2)} s, type=${model.architecture}, ${quantPart}dtype=torch.bfloat16, avail mem=${gb(availAfterLoad)} GB, mem usage=${gb(weightsGiB)} GB.`,
    );

    // KV cache sizing, like ModelRunner.profile_max_num_token.
    this.memFraction = Number(a.mem_fraction_static ?? (totalGiB < 40 ? 0.8 : totalGiB < 100 ? 0.85 : 0.88));
    const kvGiB = availAfterLoad - totalGiB * (1 - this.memFraction);
    const kvDtype = String(a.kv_cache_dtype ?? "auto");
    const kvBytes = kvDtype.startsWith("fp8") ? 1 : kvDtype.startsWith("fp4") ? 0.5 : 2;
    const kvHeadsPerRank = Math.max(1, Math.floor(model.numKvHeads / this.tp));
    const bytesPerToken = 2 * model.numLayers * kvHeadsPerRank * model.headDim * kvBytes;
    this.maxTotalTokens = Math.floor((Math.max(0, kvGiB) * GiB) / bytesPerToken);
    if (a.max_total_tokens) this.maxTotalTokens = Math.min(this.maxTotalTokens, Number(a.max_total_tokens));
    if (kvGiB <= 0 || this.maxTotalTokens <= 0) {
      this.schedulerCrash(
        [
          "    scheduler = Scheduler(",
          `  File "${this.src("srt/model_executor/model_runner.py")}", line 372, in initialize`,
          "    self.init_memory_pool(",
          `  File "${this.src("srt/model_executor/model_runner.py")}", line 1688, in init_memory_pool`,
          "    raise RuntimeError(",
        ],
        "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static.",
      );
    }
    const kvDtypeName =
      kvBytes === 1 ? "torch.float8_e4m3fn" : kvBytes === 0.5 ? "torch.float4_e2m1fn_x2" : "torch.bfloat16";
    const kvSizeGiB = (this.maxTotalTokens * bytesPerToken) / GiB / 2;
    this.logRanks(
      () =>
        `KV Cache is allocated. dtype: ${kvDtypeName}, #tokens: ${this.maxTotalTokens}, K size: ${gb(kvSizeGiB)} GB, V size: ${gb(kvSizeGiB)} GB`,
    );
    const availAfterPool = availAfterLoad - 2 * kvSizeGiB;
    this.logRanks(() => `Memory pool end. avail mem=${gb(availAfterPool)} GB`);
    if (a.enable_hierarchical_cache) {
      const ratio = Number(a.hicache_ratio ?? 2);
      const hostGiB = Number(a.hicache_size) > 0 ? Number(a.hicache_size) : 2 * kvSizeGiB * ratio;
      this.logRanks(() => `Allocating ${gb(hostGiB)} GB host memory for hierarchical KV cache.`);
    }
    const graphGiB = a.disable_cuda_graph ? 0 : 0.42;
    if (!a.disable_cuda_graph) {
      this.log(
        `Capture cuda graph begin. This can take up to several minutes. avail mem=${gb(availAfterPool)} GB`,
        0,
      );
      await sleep(40);
      this.log(
        `Capture cuda graph end. Time elapsed: 0.04 s. mem usage=${gb(graphGiB)} GB. avail mem=${gb(availAfterPool - graphGiB)} GB.`,
        0,
      );
    }
    this.maxRunningRequests = Number(
      a.max_running_requests ?? Math.min(4096, Math.max(1, Math.floor(this.maxTotalTokens / 2))),
    );
    this.chunkedPrefill = Number(a.chunked_prefill_size ?? (totalGiB > 80 ? 16384 : 8192));
    this.log(
      `max_total_num_tokens=${this.maxTotalTokens}, chunked_prefill_size=${this.chunkedPrefill}, max_prefill_tokens=${a.max_prefill_tokens ?? 16384}, max_running_requests=${this.maxRunningRequests}, context_len=${this.contextLength}, available_gpu_mem=${gb(availAfterPool - graphGiB)} GB`,
      0,
    );
    this.memory = { weight: weightsGiB, kvcache: 2 * kvSizeGiB, graph: graphGiB };
    const usedGiB = weightsGiB + 2 * kvSizeGiB + graphGiB + 0.57 + 0.35;
    this.usage = {
      gpus: Array.from({ length: this.tp * this.dp }, (_, i) => this.baseGpu + i),
      memMiB: Math.round(usedGiB * 1024),
      util: 0,
      processName: "sglang::scheduler",
    };
    registerGpuUsage(this.usage);

    // --- HTTP server --------------------------------------------------------------------------
    await this.listen();
    this.log(`INFO:     Started server process [${process.pid}]`);
    this.log("INFO:     Waiting for application startup.");
    this.log("INFO:     Application startup complete.");
    this.log(`INFO:     Uvicorn running on http://${this.host}:${this.port} (Press CTRL+C to quit)`);

    if (a.skip_server_warmup) {
      this.status = "Up";
    } else {
      await sleep(this.faults.warmupMs);
      const client = `127.0.0.1:${40000 + (process.pid % 20000)}`;
      this.log(`INFO:     ${client} - "GET /get_model_info HTTP/1.1" 200 OK`);
      this.log(
        `Prefill batch. #new-seq: 1, #new-token: 6, #cached-token: 0, token usage: 0.00, #running-req: 0, #queue-req: 0, `,
        0,
      );
      await sleep(this.faults.ttftMs + 8 * this.faults.msPerToken);
      this.log(`INFO:     ${client} - "POST /generate HTTP/1.1" 200 OK`);
      this.status = "Up";
    }
    this.log("The server is fired up and ready to roll!");

    if (this.faults.dieAfter !== null) {
      setTimeout(() => this.die(), this.faults.dieAfter * 1000);
    }
    setInterval(() => this.decodeLog(), 1000).unref();
  }

  defaultAttentionBackend() {
    const cc = this.gpu.cc;
    if (cc >= 10 && cc < 11) return "trtllm_mha";
    if (cc >= 9 && cc < 10) return "fa3";
    return "flashinfer";
  }

  die() {
    this.schedulerCrash(
      [
        "    scheduler.event_loop_overlap()",
        `  File "${this.site}/torch/utils/_contextlib.py", line 120, in decorate_context`,
        "    return func(*args, **kwargs)",
        `  File "${this.src("srt/managers/scheduler.py")}", line 1102, in event_loop_overlap`,
        "    batch_result = self.run_batch(batch)",
        `  File "${this.src("srt/managers/scheduler.py")}", line 2131, in run_batch`,
        "    batch_result = self.model_worker.forward_batch_generation(",
      ],
      "torch.AcceleratorError: CUDA error: an illegal memory access was encountered\nCUDA kernel errors might be asynchronously reported at some other API call, so the stacktrace below might be incorrect.\nFor debugging consider passing CUDA_LAUNCH_BLOCKING=1\nCompile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.\n",
    );
  }

  decodeLog() {
    if (this.running === 0 && this.genTokensWindow === 0) return;
    this.lastGenThroughput = this.genTokensWindow;
    const usage = Math.min(1, (this.running * 256) / Math.max(1, this.maxTotalTokens));
    this.log(
      `Decode batch. #running-req: ${this.running}, #token: ${this.running * 256}, token usage: ${usage.toFixed(2)}, cuda graph: ${!this.args.disable_cuda_graph ? "True" : "False"}, gen throughput (token/s): ${this.genTokensWindow.toFixed(2)}, #queue-req: ${this.queued}, `,
      0,
    );
    this.genTokensWindow = 0;
  }

  serverArgsRepr() {
    const a = this.args;
    const fields = {
      ...a,
      model_path: String(a.model_path),
      tokenizer_path: a.tokenizer_path ?? String(a.model_path),
      served_model_name: this.servedModelName,
      quantization: this.quantMethod ?? null,
      context_length: a.context_length ?? null,
    };
    return Object.entries(fields)
      .map(([k, v]) => `${k}=${pyValue(v)}`)
      .join(", ");
  }

  listen() {
    const bindHost = /^127\.\d+\.\d+\.\d+$/.test(this.host) ? this.host : "127.0.0.1";
    return new Promise((resolve) => {
      const server = createServer((req, res) => {
        this.handle(req, res).catch((err) => {
          this.log(`Exception in ASGI application\n${err?.stack ?? err}`, undefined, "error");
          if (!res.headersSent) sendJson(res, 500, { detail: "Internal Server Error" });
          else res.end();
        });
      });
      server.keepAliveTimeout = 5000;
      server.on("error", (err) => {
        const e = /** @type {NodeJS.ErrnoException} */ (err);
        if (e.code === "EADDRINUSE") {
          this.log(
            `ERROR:    [Errno 98] error while attempting to bind on address ('${this.host}', ${this.port}): address already in use`,
            undefined,
            "error",
          );
        } else {
          this.log(`ERROR:    ${e.message}`, undefined, "error");
        }
        clearGpuUsage();
        process.exit(1);
      });
      server.listen(this.port, bindHost, () => {
        this.http = server;
        resolve(undefined);
      });
    });
  }

  /** @param {import("node:http").IncomingMessage} req @param {import("node:http").ServerResponse} res */
  async handle(req, res) {
    const url = new URL(req.url ?? "/", "http://localhost");
    const path = url.pathname;
    const method = req.method ?? "GET";
    const remote = `${req.socket.remoteAddress?.replace(/^::ffff:/, "") ?? "127.0.0.1"}:${req.socket.remotePort ?? 0}`;
    res.on("finish", () => {
      if (!path.startsWith("/health")) {
        this.log(
          `INFO:     ${remote} - "${method} ${path}${url.search} HTTP/1.1" ${res.statusCode} ${STATUS_CODES[res.statusCode] ?? ""}`,
        );
      } else {
        this.log(
          `INFO:     ${remote} - "${method} ${path} HTTP/1.1" ${res.statusCode} ${STATUS_CODES[res.statusCode] ?? ""}`,
        );
      }
    });

    const apiKey = this.args.api_key;
    if (apiKey && !path.startsWith("/health") && !path.startsWith("/metrics")) {
      if (req.headers.authorization !== `Bearer ${apiKey}`) {
        sendJson(res, 401, { error: "Unauthorized" });
        return;
      }
    }

    const route = `${method} ${path}`;
    if (path === "/health" || path === "/health_generate") {
      if (method !== "GET") return methodNotAllowed(res);
      if (this.status !== "Up") {
        res.writeHead(503, { "content-length": "0" });
        res.end();
        return;
      }
      await this.withSlot(async () => {
        await sleep(this.faults.ttftMs);
      });
      res.writeHead(200, { "content-length": "0" });
      res.end();
      return;
    }
    if (route === "GET /ping") {
      res.writeHead(200, { "content-length": "0" });
      res.end();
      return;
    }
    if (route === "GET /v1/models") {
      sendJson(res, 200, { object: "list", data: [this.modelCard(this.servedModelName)] });
      return;
    }
    if (method === "GET" && path.startsWith("/v1/models/")) {
      const id = decodeURIComponent(path.slice("/v1/models/".length));
      if (id !== this.servedModelName) {
        sendJson(res, 404, {
          error: {
            message: `The model '${id}' does not exist`,
            type: "invalid_request_error",
            param: "model",
            code: "model_not_found",
          },
        });
        return;
      }
      sendJson(res, 200, this.modelCard(id));
      return;
    }
    if (route === "GET /get_model_info" || route === "GET /model_info") {
      sendJson(res, 200, {
        model_path: String(this.args.model_path),
        tokenizer_path: this.args.tokenizer_path ?? String(this.args.model_path),
        is_generation: true,
        preferred_sampling_params: this.args.preferred_sampling_params ?? null,
        weight_version: this.args.weight_version ?? "default",
        has_image_understanding: false,
        has_audio_understanding: false,
        model_type: this.model.modelType,
        architectures: this.model.config.architectures ?? null,
      });
      return;
    }
    if (route === "GET /get_server_info" || route === "GET /server_info") {
      sendJson(res, 200, this.serverInfo());
      return;
    }
    if (route === "GET /get_load") {
      sendJson(res, 200, [
        {
          dp_rank: 0,
          num_reqs: this.running + this.queued,
          num_waiting_reqs: this.queued,
          num_tokens: this.running * 256,
        },
      ]);
      return;
    }
    if (path === "/flush_cache" && (method === "GET" || method === "POST")) {
      const body =
        "Cache flushed.\nPlease check backend logs for more details. (When there are running or waiting requests, the operation will not be performed.)\n";
      res.writeHead(200, {
        "content-type": "text/plain; charset=utf-8",
        "content-length": Buffer.byteLength(body),
      });
      res.end(body);
      return;
    }
    if (path === "/generate") {
      if (method !== "POST" && method !== "PUT") return methodNotAllowed(res);
      const body = await readBody(req, res);
      if (body === undefined) return;
      await this.nativeGenerate(body, res);
      return;
    }
    if (path === "/v1/completions") {
      if (method !== "POST") return methodNotAllowed(res);
      const body = await readBody(req, res);
      if (body === undefined) return;
      await this.openaiCompletions(body, res, false);
      return;
    }
    if (path === "/v1/chat/completions") {
      if (method !== "POST") return methodNotAllowed(res);
      const body = await readBody(req, res);
      if (body === undefined) return;
      await this.openaiCompletions(body, res, true);
      return;
    }
    sendJson(res, 404, { detail: "Not Found" });
  }

  /** @param {string} id */
  modelCard(id) {
    return {
      id,
      object: "model",
      created: Math.floor(Date.now() / 1000),
      owned_by: "sglang",
      root: id,
      parent: null,
      max_model_len: this.contextLength,
    };
  }

  serverInfo() {
    const a = this.args;
    return {
      ...a,
      model_path: String(a.model_path),
      tokenizer_path: a.tokenizer_path ?? String(a.model_path),
      served_model_name: this.servedModelName,
      quantization: this.quantMethod ?? null,
      context_length: a.context_length ?? null,
      mem_fraction_static: this.memFraction,
      max_running_requests: this.maxRunningRequests,
      chunked_prefill_size: this.chunkedPrefill,
      attention_backend: a.attention_backend ?? this.defaultAttentionBackend(),
      max_total_num_tokens: this.maxTotalTokens,
      max_req_input_len: this.contextLength - 5,
      internal_states: [
        {
          avg_spec_accept_length: null,
          last_gen_throughput: this.lastGenThroughput,
          memory_usage: {
            weight: round2(this.memory.weight),
            kvcache: round2(this.memory.kvcache),
            token_capacity: this.maxTotalTokens,
            graph: round2(this.memory.graph),
          },
        },
      ],
      version: this.version,
    };
  }

  /** Current output mode: "nan", "garbage" or "ok". */
  outputMode() {
    const runtime = sglangFaults(this.port, String(this.args.model_path ?? "")).modes;
    if (runtime.has("nan")) return "nan";
    if (runtime.has("sampling-errors")) return "garbage";
    if (this.nvfp4 && this.gpu.cc >= 12 && this.gpu.cc < 13) {
      const moe = setting(this.args, "moe_runner_backend");
      const fp4 = setting(this.args, "fp4_gemm_runner_backend");
      if (!(moe === "flashinfer_cutlass" && fp4 === "flashinfer_cudnn")) return "nan";
    }
    return "ok";
  }

  /** Runs fn while holding one of max_running_requests slots. @param {() => Promise<void>} fn */
  async withSlot(fn) {
    if (this.running >= this.maxRunningRequests) {
      this.queued++;
      await new Promise((resolve) => this.waiters.push(() => resolve(undefined)));
      this.queued--;
    }
    this.running++;
    this.setBusy(true);
    try {
      await fn();
    } finally {
      this.running--;
      const next = this.waiters.shift();
      if (next) next();
      if (this.running === 0) this.setBusy(false);
    }
  }

  /** Marks the GPUs busy at once, idle only after 300 ms without work. @param {boolean} busy */
  setBusy(busy) {
    if (!this.usage) return;
    if (!busy) {
      clearTimeout(this.idleTimer);
      this.idleTimer = setTimeout(() => {
        if (this.running === 0) this.writeUtil(false);
      }, 300);
      this.idleTimer.unref?.();
      return;
    }
    clearTimeout(this.idleTimer);
    this.writeUtil(true);
  }

  /** @param {boolean} busy */
  writeUtil(busy) {
    if (busy === this.gpuUtilBusy || !this.usage) return;
    this.gpuUtilBusy = busy;
    this.usage.util = busy ? 97 : 0;
    try {
      registerGpuUsage(this.usage);
    } catch {
      // usage display is best effort
    }
  }

  /** Per-token delay, slightly slower as the batch grows. */
  tokenDelay() {
    return this.faults.msPerToken * (1 + 0.02 * Math.max(0, this.running - 1));
  }

  /**
   * Generates for one prompt and paces it: calls onToken(index) as each token "arrives".
   * @param {{prompt:string, promptTokens:number, chat:boolean, maxNewTokens:number, ignoreEos:boolean,
   *   stop:string[], temperature:number, seed:number}} p
   * @param {((i:number, gen:import("./sglang-model.mjs").Generation)=>void) | null} onToken
   */
  async runGeneration(p, onToken) {
    const mode = this.outputMode();
    const gen = generate({
      prompt: p.prompt,
      chat: p.chat,
      maxNewTokens: p.maxNewTokens,
      ignoreEos: p.ignoreEos,
      stop: p.stop,
      temperature: p.temperature,
      seed: p.temperature > 0 && p.seed === 0 ? this.servedRequests + 1 : p.seed,
      mode,
      vocab: this.model.vocabSize,
      eosTokenId: this.model.eosTokenId,
    });
    this.servedRequests++;
    const started = Date.now();
    await this.withSlot(async () => {
      this.log(
        `Prefill batch. #new-seq: 1, #new-token: ${p.promptTokens}, #cached-token: 0, token usage: ${Math.min(1, p.promptTokens / Math.max(1, this.maxTotalTokens)).toFixed(2)}, #running-req: ${this.running - 1}, #queue-req: ${this.queued}, `,
        0,
      );
      if (mode === "garbage") this.log("Detected errors during sampling! NaN in the logits.", 0, "warning");
      if (onToken === null) {
        let total = this.faults.ttftMs;
        for (let i = 0; i < gen.tokens.length; i++) total += this.tokenDelay();
        await sleep(total);
        this.genTokensWindow += gen.tokens.length;
        return;
      }
      for (let i = 0; i < gen.tokens.length; i++) {
        await sleep(i === 0 ? this.faults.ttftMs + this.tokenDelay() : this.tokenDelay());
        if (this.shuttingDown) return;
        this.genTokensWindow++;
        onToken(i, gen);
      }
    });
    return { gen, latency: (Date.now() - started) / 1000 };
  }

  /** @param {string} text */
  countTokens(text) {
    return Math.max(1, tokenize(text).length);
  }

  /** @param {any} body @param {import("node:http").ServerResponse} res */
  async nativeGenerate(body, res) {
    if (Array.isArray(body.text) || (Array.isArray(body.input_ids) && Array.isArray(body.input_ids[0]))) {
      const items = Array.isArray(body.text)
        ? body.text.map((t) => ({ text: t }))
        : body.input_ids.map((ids) => ({ input_ids: ids }));
      if (body.stream) {
        sendJson(res, 400, {
          error: { message: "Streaming a batch of prompts is not supported by this simulated server." },
        });
        return;
      }
      const outs = await Promise.all(items.map((item) => this.nativeOne({ ...body, ...item }, null)));
      if (outs.some((o) => o.error)) {
        sendJson(res, 400, { error: { message: outs.find((o) => o.error)?.error } });
        return;
      }
      sendJson(
        res,
        200,
        outs.map((o) => o.result),
      );
      return;
    }
    if (body.stream) {
      res.writeHead(200, { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache" });
      const out = await this.nativeOne(body, (chunk) => res.write(`data: ${JSON.stringify(chunk)}\n\n`));
      if (out.error) res.write(`data: ${JSON.stringify({ error: { message: out.error } })}\n\n`);
      res.end("data: [DONE]\n\n");
      return;
    }
    const out = await this.nativeOne(body, null);
    if (out.error) {
      sendJson(res, 400, { error: { message: out.error } });
      return;
    }
    sendJson(res, 200, out.result);
  }

  /**
   * One /generate request.
   * @param {any} body @param {((chunk:any)=>void) | null} emit
   * @returns {Promise<{result?:any, error?:string}>}
   */
  async nativeOne(body, emit) {
    const sp = body.sampling_params ?? {};
    const hasIds = Array.isArray(body.input_ids);
    const prompt = hasIds ? body.input_ids.join(" ") : String(body.text ?? "");
    const promptTokens = hasIds ? body.input_ids.length : this.countTokens(prompt);
    const maxNew = Number(sp.max_new_tokens ?? 128);
    if (promptTokens >= this.contextLength) {
      return {
        error: `The input (${promptTokens} tokens) is longer than the model's context length (${this.contextLength} tokens).`,
      };
    }
    const maxNewTokens = Math.min(maxNew, this.contextLength - promptTokens);
    const returnLogprob = Boolean(body.return_logprob);
    const textInLogprobs = Boolean(body.return_text_in_logprobs);
    const topN = Number(body.top_logprobs_num ?? 0);
    const rid = typeof body.rid === "string" ? body.rid : randomUUID().replaceAll("-", "");
    const stop =
      sp.stop === undefined || sp.stop === null
        ? []
        : Array.isArray(sp.stop)
          ? sp.stop.map(String)
          : [String(sp.stop)];
    const started = Date.now();
    const params = {
      prompt,
      promptTokens,
      chat: false,
      maxNewTokens,
      ignoreEos: Boolean(sp.ignore_eos),
      stop,
      temperature: Number(sp.temperature ?? 1.0),
      seed: Number(sp.sampling_seed ?? 0),
    };
    const logprobStart = Number(body.logprob_start_len ?? -1);
    const inputIds = hasIds
      ? body.input_ids.map(Number)
      : tokenize(prompt).map((t) => (hash32(t) % (this.model.vocabSize - 1)) + 1);
    const build = (
      /** @type {import("./sglang-model.mjs").Generation} */ gen,
      /** @type {number} */ upto,
      /** @type {boolean} */ done,
    ) => {
      const toks = gen.tokens.slice(0, upto);
      const text = toks.map((t) => t.text).join("");
      /** @type {Record<string, any>} */
      const meta = {
        id: rid,
        finish_reason: done ? gen.finish : null,
        prompt_tokens: promptTokens,
        weight_version: this.args.weight_version ?? "default",
        total_retractions: 0,
        completion_tokens: toks.length,
        cached_tokens: 0,
        e2e_latency: (Date.now() - started) / 1000,
      };
      if (returnLogprob) {
        meta.input_token_logprobs =
          logprobStart >= 0
            ? inputIds
                .slice(logprobStart)
                .map((id, i) => [i === 0 && logprobStart === 0 ? null : -(1 + (id % 700) / 100), id, null])
            : [];
        meta.output_token_logprobs = toks.map((t) => [
          finiteOrNull(t.logprob),
          t.id,
          textInLogprobs ? t.text : null,
        ]);
        if (topN > 0) {
          meta.input_top_logprobs = meta.input_token_logprobs.map(() => null);
          meta.output_top_logprobs = toks.map((t) => [
            [finiteOrNull(t.logprob), t.id, textInLogprobs ? t.text : null],
          ]);
        }
      }
      return { text, output_ids: toks.map((t) => t.id), meta_info: meta };
    };
    const { gen } = await this.runGeneration(
      params,
      emit ? (i, plan) => emit(build(plan, i + 1, i + 1 === plan.tokens.length)) : null,
    );
    const final = build(gen, gen.tokens.length, true);
    if (emit && gen.tokens.length === 0) emit(final);
    return { result: final };
  }

  /** OpenAI /v1/completions and /v1/chat/completions. @param {any} body @param {import("node:http").ServerResponse} res @param {boolean} chat */
  async openaiCompletions(body, res, chat) {
    let prompt;
    let userText;
    if (chat) {
      if (!Array.isArray(body.messages) || body.messages.length === 0) {
        sendJson(
          res,
          400,
          errorBody("1 validation error for ChatCompletionRequest\nmessages\n  Field required", 400),
        );
        return;
      }
      const parts = body.messages.map((m) => `<|im_start|>${m.role}\n${contentText(m.content)}<|im_end|>\n`);
      prompt = `${parts.join("")}<|im_start|>assistant\n`;
      const lastUser = [...body.messages].reverse().find((m) => m.role === "user");
      userText = contentText(lastUser?.content ?? "");
    } else {
      if (body.prompt === undefined) {
        sendJson(
          res,
          400,
          errorBody("1 validation error for CompletionRequest\nprompt\n  Field required", 400),
        );
        return;
      }
      prompt = Array.isArray(body.prompt) ? body.prompt.join("") : String(body.prompt);
      userText = prompt;
    }
    const promptTokens = this.countTokens(prompt);
    const requested = body.max_completion_tokens ?? body.max_tokens ?? (chat ? null : 16);
    if (requested !== null && promptTokens + Number(requested) > this.contextLength) {
      sendJson(
        res,
        400,
        errorBody(
          `Requested token count exceeds the model's maximum context length of ${this.contextLength} tokens. You requested a total of ${promptTokens + Number(requested)} tokens: ${promptTokens} tokens from the input messages and ${requested} tokens for the completion. Please reduce the number of tokens in the input messages or the completion to fit within the limit.`,
          400,
        ),
      );
      return;
    }
    const maxNewTokens =
      requested === null ? Math.min(4096, this.contextLength - promptTokens) : Number(requested);
    const stop =
      body.stop === undefined || body.stop === null
        ? []
        : Array.isArray(body.stop)
          ? body.stop.map(String)
          : [String(body.stop)];
    const wantLogprobs = chat
      ? Boolean(body.logprobs)
      : body.logprobs !== undefined && body.logprobs !== null && body.logprobs !== false;
    const topLogprobs = Number(
      chat ? (body.top_logprobs ?? 0) : typeof body.logprobs === "number" ? body.logprobs : 0,
    );
    const id = randomBytes(16).toString("hex");
    const created = Math.floor(Date.now() / 1000);
    const model = String(body.model ?? this.servedModelName);
    const params = {
      prompt: chat ? userText : prompt,
      promptTokens,
      chat,
      maxNewTokens,
      ignoreEos: Boolean(body.ignore_eos),
      stop,
      temperature: Number(body.temperature ?? 1.0),
      seed: Number(body.seed ?? 0),
    };
    const finishReason = (/** @type {any} */ f) => (f.type === "length" ? "length" : "stop");
    const matchedStop = (/** @type {any} */ f) => (f.type === "stop" ? (f.matched ?? null) : null);
    const usage = (/** @type {number} */ n) => ({
      prompt_tokens: promptTokens,
      total_tokens: promptTokens + n,
      completion_tokens: n,
      prompt_tokens_details: null,
      reasoning_tokens: 0,
    });
    const tokenLogprob = (/** @type {any} */ t) => ({
      token: t.text,
      bytes: [...Buffer.from(t.text, "utf8")],
      logprob: finiteOrNull(t.logprob),
      top_logprobs: Array.from({ length: topLogprobs }, () => ({
        token: t.text,
        bytes: [...Buffer.from(t.text, "utf8")],
        logprob: finiteOrNull(t.logprob),
      })),
    });
    const completionLogprobs = (/** @type {any[]} */ toks, /** @type {number} */ offset0) => {
      let offset = offset0;
      const text_offset = toks.map((t) => {
        const o = offset;
        offset += t.text.length;
        return o;
      });
      return {
        text_offset,
        token_logprobs: toks.map((t) => finiteOrNull(t.logprob)),
        tokens: toks.map((t) => t.text),
        top_logprobs: toks.map((t) => (topLogprobs > 0 ? { [t.text]: finiteOrNull(t.logprob) } : null)),
      };
    };

    if (body.stream) {
      res.writeHead(200, { "content-type": "text/event-stream; charset=utf-8", "cache-control": "no-cache" });
      const object = chat ? "chat.completion.chunk" : "text_completion";
      const write = (/** @type {any} */ payload) => res.write(`data: ${JSON.stringify(payload)}\n\n`);
      if (chat) {
        write({
          id,
          object,
          created,
          model,
          choices: [
            {
              index: 0,
              delta: { role: "assistant", content: "", reasoning_content: null, tool_calls: null },
              logprobs: null,
              finish_reason: null,
              matched_stop: null,
            },
          ],
          usage: null,
        });
      }
      let textSoFar = 0;
      const { gen } = await this.runGeneration(params, (i, plan) => {
        const t = plan.tokens[i];
        const choice = chat
          ? {
              index: 0,
              delta: { role: null, content: t.text, reasoning_content: null, tool_calls: null },
              logprobs: wantLogprobs ? { content: [tokenLogprob(t)] } : null,
              finish_reason: null,
              matched_stop: null,
            }
          : {
              index: 0,
              text: t.text,
              logprobs: wantLogprobs ? completionLogprobs([t], textSoFar) : null,
              finish_reason: null,
              matched_stop: null,
            };
        textSoFar += t.text.length;
        write({ id, object, created, model, choices: [choice], usage: null });
      });
      const last = chat
        ? {
            index: 0,
            delta: { role: null, content: null, reasoning_content: null, tool_calls: null },
            logprobs: null,
            finish_reason: finishReason(gen.finish),
            matched_stop: matchedStop(gen.finish),
          }
        : {
            index: 0,
            text: "",
            logprobs: null,
            finish_reason: finishReason(gen.finish),
            matched_stop: matchedStop(gen.finish),
          };
      write({ id, object, created, model, choices: [last], usage: null });
      if (body.stream_options?.include_usage) {
        write({ id, object, created, model, choices: [], usage: usage(gen.tokens.length) });
      }
      res.end("data: [DONE]\n\n");
      return;
    }

    const { gen } = await this.runGeneration(params, null);
    const text = gen.tokens.map((t) => t.text).join("");
    if (chat) {
      sendJson(res, 200, {
        id,
        object: "chat.completion",
        created,
        model,
        choices: [
          {
            index: 0,
            message: { role: "assistant", content: text, reasoning_content: null, tool_calls: null },
            logprobs: wantLogprobs ? { content: gen.tokens.map(tokenLogprob) } : null,
            finish_reason: finishReason(gen.finish),
            matched_stop: matchedStop(gen.finish),
          },
        ],
        usage: usage(gen.tokens.length),
        metadata: { weight_version: this.args.weight_version ?? "default" },
      });
      return;
    }
    sendJson(res, 200, {
      id,
      object: "text_completion",
      created,
      model,
      choices: [
        {
          index: 0,
          text: body.echo ? prompt + text : text,
          logprobs: wantLogprobs ? completionLogprobs(gen.tokens, body.echo ? prompt.length : 0) : null,
          finish_reason: finishReason(gen.finish),
          matched_stop: matchedStop(gen.finish),
        },
      ],
      usage: usage(gen.tokens.length),
      metadata: { weight_version: this.args.weight_version ?? "default" },
    });
  }
}

/** @param {number} n */
function round2(n) {
  return Math.round(n * 100) / 100;
}

/** JSON has no NaN: orjson (which SGLang uses) writes NaN and inf as null. @param {number} v */
function finiteOrNull(v) {
  return Number.isFinite(v) ? v : null;
}

/** @param {number} s */
function mmss(s) {
  if (!Number.isFinite(s)) return "?";
  const t = Math.max(0, Math.round(s));
  return `${String(Math.floor(t / 60)).padStart(2, "0")}:${String(t % 60).padStart(2, "0")}`;
}

/** @param {any} content */
function contentText(content) {
  if (typeof content === "string") return content;
  if (Array.isArray(content))
    return content.map((p) => (typeof p === "string" ? p : (p?.text ?? ""))).join("");
  return "";
}

/** @param {string} message @param {number} code */
function errorBody(message, code) {
  return { object: "error", message, type: STATUS_CODES[code] ?? "Bad Request", param: null, code };
}

/** @param {import("node:http").ServerResponse} res @param {number} status @param {unknown} body */
function sendJson(res, status, body) {
  const text = JSON.stringify(body);
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text) });
  res.end(text);
}

/** @param {import("node:http").ServerResponse} res */
function methodNotAllowed(res) {
  sendJson(res, 405, { detail: "Method Not Allowed" });
}

/**
 * Reads a JSON body; answers 400 like SGLang's validation handler when it is not JSON.
 * @param {import("node:http").IncomingMessage} req @param {import("node:http").ServerResponse} res
 */
async function readBody(req, res) {
  const chunks = [];
  for await (const chunk of req) chunks.push(chunk);
  const raw = Buffer.concat(chunks).toString("utf8");
  try {
    const body = JSON.parse(raw === "" ? "{}" : raw);
    if (body === null || typeof body !== "object") throw new Error("not an object");
    return body;
  } catch (err) {
    sendJson(
      res,
      400,
      errorBody(
        `[{'type': 'json_invalid', 'loc': ('body', 0), 'msg': 'JSON decode error', 'input': {}, 'ctx': {'error': '${String(/** @type {Error} */ (err).message).replaceAll("'", "")}'}}]`,
        400,
      ),
    );
    return undefined;
  }
}

export { readFaults };
