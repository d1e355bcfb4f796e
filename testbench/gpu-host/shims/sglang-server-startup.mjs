/**
 * SimServer's startup in the main process and its crashes (mixed into SimServer, sglang-server.mjs):
 * the fault crash-on-start, reading the model and checking the server args against it, and the
 * Python tracebacks of the main process and of a scheduler (TP rank) — at load, or mid-serving with
 * the fault dieAfter — written the way SGLang writes them, with its file and line numbers.
 */
import { clearGpuUsage } from "./sglang-host.mjs";
import { isNvfp4, readModelDir, tokenizerError, tokenizerFrames } from "./sglang-model.mjs";

/** Startup and crash methods of SimServer. */
export const startupMethods = {
  /** Fault crash-on-start: sgl_kernel fails to import (a wheel built for another torch), exit 1. */
  crashOnStart() {
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
  },

  /**
   * The main process's part of startup: read the model's config.json and check the server args
   * against it, with the tracebacks the real server prints when they do not fit. Sets the model and
   * the settings derived from it, and logs `server_args=ServerArgs(...)`.
   */
  prepareServerArgs() {
    const a = this.args;
    const modelPath = String(a.model_path);
    // ServerArgs.__post_init__ resolves the device before it reads the model: with no GPU visible
    // (CUDA_VISIBLE_DEVICES="" or naming none of the host's), torch.cuda.is_available() is False and
    // get_device() (srt/utils/common.py) finds no accelerator. Wording of SGLang 0.5.x before MUSA.
    if (this.visible.length === 0 && (a.device === null || a.device === undefined)) {
      this.mainTraceback(
        [
          `  File "${this.src("srt/server_args.py")}", line 4711, in prepare_server_args`,
          "    return ServerArgs.from_cli_args(raw_args)",
          `  File "${this.src("srt/server_args.py")}", line 1091, in __post_init__`,
          "    self._handle_missing_default_values()",
          `  File "${this.src("srt/server_args.py")}", line 1197, in _handle_missing_default_values`,
          "    self.device = get_device()",
          `  File "${this.src("srt/utils/common.py")}", line 1827, in get_device`,
          '    raise RuntimeError("No accelerator (CUDA, XPU, HPU, NPU) is available.")',
        ],
        "RuntimeError: No accelerator (CUDA, XPU, HPU, NPU) is available.",
      );
    }
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
    if (model.tokenizerAutoMap && !a.trust_remote_code) {
      // the config loaded; the tokenizer is next (TokenizerManager), and its class is the repo's own
      this.mainTraceback(
        [
          `  File "${this.src("srt/managers/tokenizer_manager.py")}", line 254, in __init__`,
          "    self.tokenizer = get_tokenizer(",
          `  File "${this.src("srt/utils/hf_transformers_utils.py")}", line 464, in get_tokenizer`,
          "    tokenizer = AutoTokenizer.from_pretrained(",
          ...tokenizerFrames(this.site),
        ],
        tokenizerError(model, modelPath),
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
  },

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
  },

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
  },

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
  },

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
  },
};
