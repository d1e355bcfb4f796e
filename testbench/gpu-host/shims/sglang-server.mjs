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
 *
 * SimServer's state and its startup sequence are here; its methods by concern are mixed in from
 * sglang-server-startup.mjs (startup checks, crashes), sglang-server-loading.mjs (weights, KV cache,
 * VRAM), sglang-server-routes.mjs (HTTP), sglang-server-generation.mjs (slots, pacing, NaN output),
 * sglang-server-native.mjs (/generate), sglang-server-openai.mjs (/v1/...) and
 * sglang-server-metrics.mjs (decode log, server info, GPU utilisation), sglang-server-memory.mjs
 * (the memory saver's release and resume) and sglang-server-update.mjs (the in-place weight update).
 */

import { join } from "node:path";
import { clearPinnedMemory } from "./sandbox.mjs";
import { ArgError, formatHelp, formatUsage, loadFlagSpecs, parseArgs, pyValue } from "./sglang-flags.mjs";
import {
  clearGpuUsage,
  engineDir,
  engineVersion,
  gpuSet,
  readFaults,
  sglangFaults,
  sitePackagesDir,
  visibleGpus,
} from "./sglang-host.mjs";
import { generationMethods } from "./sglang-server-generation.mjs";
import { loadingMethods } from "./sglang-server-loading.mjs";
import { memoryMethods } from "./sglang-server-memory.mjs";
import { metricsMethods } from "./sglang-server-metrics.mjs";
import { nativeApiMethods } from "./sglang-server-native.mjs";
import { openaiApiMethods } from "./sglang-server-openai.mjs";
import { routeMethods } from "./sglang-server-routes.mjs";
import { startupMethods } from "./sglang-server-startup.mjs";
import { updateMethods } from "./sglang-server-update.mjs";
import { stamp } from "./sglang-server-util.mjs";

const PROG = "launch_server.py";

const LEVELS = { debug: 10, info: 20, warning: 30, error: 40, critical: 50 };

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
    /**
     * The GPUs this process sees (CUDA_VISIBLE_DEVICES): logical GPU i — what --base-gpu-id, the TP
     * ranks and "GPU 0" in torch's messages count — is physical GPU visible[i], what nvidia-smi and
     * the usage registry count.
     */
    this.visible = visibleGpus();
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
    /** SIGTERM received while serving: draining (drainThenExit). */
    this.gracefullyExit = false;
    this.gpuUtilBusy = false;
    /** @type {NodeJS.Timeout | undefined} */
    this.idleTimer = undefined;
    /** The memory saver (sglang-server-memory.mjs): tags released and not resumed; GPU memory freed. */
    this.offloaded = false;
    this.released = false;
    /** The weights on the GPUs are not the model's (released without a CPU backup, or a corrupted one). */
    this.weightsLost = false;
    this.heldMiB = 0;
    /** @type {(() => void)[]} */
    this.resumeWaiters = [];
    /** An in-place weight update holds the model-update writer lock (sglang-server-update.mjs). */
    this.updating = false;
    /** @type {(() => void)[]} */
    this.updateWaiters = [];
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
    process.on("SIGTERM", () => this.drainThenExit());
    process.on("SIGINT", () => this.shutdown(0));
    process.on("exit", () => {
      clearGpuUsage();
      clearPinnedMemory(); // an exiting process's pinned host RAM is freed with it
    });
  }

  /**
   * SIGTERM once serving: SGLang's TokenizerManager.sigterm_watchdog (python/sglang/srt/managers/
   * tokenizer_manager.py). The handler sets gracefully_exit; the watchdog notices it at its next poll (it
   * sleeps 5 s between looks), then logs "Gracefully exiting... Remaining number of requests N. Remaining
   * requests [rids]." each poll while requests are in flight, and exits once none is. /health answers 503
   * meanwhile, but the request routes keep admitting (the real code gates only /health on it). There is no
   * cap of its own: systemd's TimeoutStopSec SIGKILLs it. The poll is `sigtermPollMs` (default 250 ms:
   * compressed, like loadSeconds; SGLang's is 5000).
   */
  drainThenExit() {
    if (this.http === null || this.status !== "Up") return this.shutdown(0);
    if (this.gracefullyExit) return;
    this.gracefullyExit = true;
    this.log("SIGTERM received. signum=None frame=None. Draining requests and shutting down...");
    const poll = this.faults.sigtermPollMs;
    const look = () => {
      const remaining = this.running + this.queued;
      if (remaining === 0) {
        // as a real log shows it (SGLang 0.5.x under docker stop): "Remaining number of requests 0."
        this.log("Gracefully exiting... Remaining number of requests 0.");
        return this.shutdown(0);
      }
      const rids = Array.from(
        { length: Math.min(remaining, 4) },
        (_, i) => `'${(this.servedRequests + i).toString(16).padStart(32, "0")}'`,
      );
      this.log(
        `Gracefully exiting... Remaining number of requests ${remaining}. Remaining requests [${rids.join(", ")}].`,
      );
      setTimeout(look, poll);
    };
    setTimeout(look, poll);
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

  async run() {
    this.installSignals();
    if (this.faults.modes.has("crash-on-start")) this.crashOnStart();
    this.prepareServerArgs();
    if (!(await this.loadModel())) return; // fault hang: the load never finishes
    await this.serve();
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
}

// The rest of SimServer, by concern (each method uses `this` as it would inside the class).
Object.assign(
  SimServer.prototype,
  startupMethods,
  loadingMethods,
  routeMethods,
  generationMethods,
  nativeApiMethods,
  openaiApiMethods,
  metricsMethods,
  memoryMethods,
  updateMethods,
);

export { readFaults };
