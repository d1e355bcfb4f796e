/**
 * SimServer's model loading and VRAM accounting (mixed into SimServer, sglang-server.mjs): the
 * scheduler's startup log, the `Loading safetensors checkpoint shards` progress, the faults oom and
 * hang, the KV cache and CUDA graph sizes, and the GPU memory registered for nvidia-smi.
 */
import { existsSync, mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { memoryUsedByOthers, registerGpuUsage } from "./sglang-host.mjs";
import { hash32 } from "./sglang-model.mjs";
import { GiB, gb, sleep } from "./sglang-server-util.mjs";

/** Loading methods of SimServer. */
export const loadingMethods = {
  /**
   * The scheduler's part: TP workers, loading the weights shard by shard (faults oom and hang, and a
   * real OOM when the weights do not fit beside the other processes on the GPUs), sizing the KV cache
   * like ModelRunner.profile_max_num_token, CUDA graphs, and the GPU memory nvidia-smi then shows.
   * Returns false when the load never finishes (fault hang).
   */
  async loadModel() {
    const a = this.args;
    const modes = this.faults.modes;
    const model = this.model;
    const modelPath = String(a.model_path);
    // torch numbers only the visible GPUs (CUDA_VISIBLE_DEVICES): set_device(gpu_id) fails past them
    if (this.tp * this.dp + this.baseGpu > this.visible.length) {
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
    // The registry counts physical GPUs; this process's ranks use logical ones (CUDA_VISIBLE_DEVICES).
    const others = memoryUsedByOthers();
    const physical = this.physicalGpus();
    let othersMax = 0;
    let othersMin = Number.POSITIVE_INFINITY;
    for (const g of physical) {
      othersMax = Math.max(othersMax, (others.get(g) ?? 0) / 1024);
      othersMin = Math.min(othersMin, (others.get(g) ?? 0) / 1024);
    }
    // min_per_gpu_memory: the least any rank has free after its CUDA context and NCCL (the all-reduce of
    // get_available_gpu_memory(distributed=True)); the KV cache is sized against it below
    const availStart = Math.max(0, totalGiB - othersMax - 0.57 - 0.35);
    const availLocal = Math.max(0, totalGiB - othersMin - 0.57 - 0.35);
    if (this.tp > 1 && availStart < availLocal * 0.9) {
      // model_runner.py init_torch_distributed ("Check memory for tensor parallelism", SGLang 0.5.x): a
      // ValueError unless SGL_DISABLE_TP_MEMORY_INBALANCE_CHECK, then only a warning
      const msg = `The memory capacity is unbalanced. Some GPUs may be occupied by other processes. min_per_gpu_memory=${availStart}, local_gpu_memory=${availLocal}, local_gpu_memory * 0.9=${availLocal * 0.9}`;
      if (/^(1|true|yes)$/i.test(process.env.SGL_DISABLE_TP_MEMORY_INBALANCE_CHECK ?? "")) {
        this.log(msg, 0, "warning");
      } else {
        this.schedulerCrash(
          [
            "    scheduler = Scheduler(",
            `  File "${this.src("srt/model_executor/model_runner.py")}", line 287, in __init__`,
            "    min_per_gpu_memory = self.init_torch_distributed()",
            `  File "${this.src("srt/model_executor/model_runner.py")}", line 640, in init_torch_distributed`,
            "    raise ValueError(",
          ],
          `ValueError: ${msg}`,
        );
      }
    }
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
      return false;
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

    // KV cache sizing, like ModelRunner.profile_max_num_token: the fraction is of min_per_gpu_memory, the
    // memory free before the weights loaded (init_memory_pool(total_gpu_memory=min_per_gpu_memory)), so a
    // server beside another takes that share of what the other left; the default fraction is of the GPU.
    this.memFraction = Number(a.mem_fraction_static ?? (totalGiB < 40 ? 0.8 : totalGiB < 100 ? 0.85 : 0.88));
    const kvGiB = availAfterLoad - availStart * (1 - this.memFraction);
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
    await this.compileKernels();
    const graphGiB = a.disable_cuda_graph ? 0 : 0.42;
    if (!a.disable_cuda_graph) {
      this.log(
        `Capture cuda graph begin. This can take up to several minutes. avail mem=${gb(availAfterPool)} GB`,
        0,
      );
      const captureStart = Date.now();
      await sleep(40);
      // the time it took, "%.2f s" (sglang/srt/model_executor/model_runner.py, init_device_graphs)
      this.log(
        `Capture cuda graph end. Time elapsed: ${((Date.now() - captureStart) / 1000).toFixed(2)} s. mem usage=${gb(graphGiB)} GB. avail mem=${gb(availAfterPool - graphGiB)} GB.`,
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
      gpus: physical,
      memMiB: Math.round(usedGiB * 1024),
      util: 0,
      processName: "sglang::scheduler",
    };
    registerGpuUsage(this.usage);
    return true;
  },

  /**
   * The kernels' JIT compile (Triton, FlashInfer, DeepGEMM) before the CUDA graphs: `jitSeconds` (a fault
   * setting, default 0) the first time, nothing when the unit's compile caches already hold them. The
   * caches are the directories the unit's environment names (TRITON_CACHE_DIR…, src/plan/engine-caches.ts);
   * a marker in TRITON_CACHE_DIR stands for their contents. Without the variable (a unit of old) the
   * compile is paid at every start.
   */
  async compileKernels() {
    const dir = process.env.TRITON_CACHE_DIR;
    const marker = dir === undefined || dir === "" ? undefined : join(dir, ".sim-kernels");
    if (marker !== undefined && existsSync(marker)) return;
    await sleep(this.faults.jitSeconds * 1000);
    if (marker === undefined) return;
    mkdirSync(dir, { recursive: true });
    writeFileSync(marker, `${this.version}\n`);
  },

  /**
   * The physical GPUs (nvidia-smi's numbers) of this server's ranks: logical GPUs base..base+tp·dp−1
   * through CUDA_VISIBLE_DEVICES. Call only after the device-ordinal check.
   * @returns {number[]}
   */
  physicalGpus() {
    return Array.from({ length: this.tp * this.dp }, (_, i) => this.visible[this.baseGpu + i]);
  },

  defaultAttentionBackend() {
    const cc = this.gpu.cc;
    if (cc >= 10 && cc < 11) return "trtllm_mha";
    if (cc >= 9 && cc < 10) return "fa3";
    return "flashinfer";
  },
};

/** @param {number} s */
function mmss(s) {
  if (!Number.isFinite(s)) return "?";
  const t = Math.max(0, Math.round(s));
  return `${String(Math.floor(t / 60)).padStart(2, "0")}:${String(t % 60).padStart(2, "0")}`;
}
