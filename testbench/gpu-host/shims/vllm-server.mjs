/**
 * Imitates: `vllm serve <model> [flags]` and `python -m vllm.entrypoints.openai.api_server --model <dir>`
 * — the vLLM 0.18 OpenAI-compatible server (V1 engine), as a single node process.
 *
 * Real HTTP (node:http) on 127.0.0.1:<port> with vLLM's routes and JSON shapes; the API server's and the
 * engine core's log lines on stdout with vLLM's prefixes (`(APIServer pid=N) INFO 03-20 10:00:00
 * [api_server.py:1839] …`, `(EngineCore_DP0 pid=M) …`); the port not listening while the engine loads
 * (vLLM binds its socket early in setup_server but only uvicorn listens, after the engine is up, so a
 * client's connect is refused); VRAM sized like the V1 GPU worker and registered for nvidia-smi; sleep
 * mode; SIGTERM with and without --shutdown-timeout; the faults of state/faults.json key `vllm`.
 *
 * SimVllm's state, logging and startup order are here; its methods come from vllm-server-engine.mjs
 * (engine core: devices, weights, KV cache, CUDA graphs, crashes), vllm-server-routes.mjs (HTTP, health,
 * metrics, sleep, shutdown) and vllm-server-openai.mjs (/v1/completions, /v1/chat/completions).
 */

import { createServer } from "node:net";
import { join } from "node:path";
import { clearPinnedMemory } from "./sandbox.mjs";
import { clearGpuUsage, gpuSet, sitePackagesDir, visibleGpus } from "./sglang-host.mjs";
import {
  formatServeHelp,
  parseServeArgs,
  SERVE_DESCRIPTION,
  subcmdEpilog,
  TOP_USAGE,
  VllmArgError,
} from "./vllm-argparse.mjs";
import { installedVllm, VLLM_VERSION, vllmFaults, vllmLine } from "./vllm-host.mjs";
import { engineMethods } from "./vllm-server-engine.mjs";
import { openaiMethods } from "./vllm-server-openai.mjs";
import { routeMethods } from "./vllm-server-routes.mjs";

/**
 * Runs the server. `mode` "serve" is `vllm serve` (positional model, errors as `vllm serve:`), "api_server"
 * is `python -m vllm.entrypoints.openai.api_server` (prog api_server.py, `--model`).
 * @param {string[]} argv @param {"serve" | "api_server"} mode
 */
export async function vllmServe(argv, mode) {
  const warnings = [];
  let parsed;
  const serveUsage = mode === "serve" ? "vllm serve [model_tag] [options]" : "api_server.py [-h] [options]";
  try {
    parsed = parseServeArgs(argv, { serve: mode === "serve", warn: (m) => warnings.push(m) });
  } catch (err) {
    if (!(err instanceof VllmArgError)) throw err;
    if (mode === "serve" && err.raisedBy === "top") {
      process.stderr.write(`${TOP_USAGE}vllm: error: ${err.message}\n`);
    } else {
      const prog = mode === "serve" ? "vllm serve" : "api_server.py";
      process.stderr.write(`usage: ${serveUsage}\n${prog}: error: ${err.message}\n`);
    }
    process.exit(2);
  }
  if (parsed.help !== null) {
    const description = mode === "serve" ? SERVE_DESCRIPTION : "vLLM OpenAI-Compatible RESTful API server.\n";
    process.stdout.write(formatServeHelp(serveUsage, description, subcmdEpilog("serve"), parsed.help));
    process.exit(0);
  }
  const server = new SimVllm(parsed.values, parsed.given);
  for (const w of warnings) server.log("WARNING", "argparse_utils.py:223", w);
  await server.run();
}

class SimVllm {
  /** @param {Record<string, any>} args @param {Set<string>} given */
  constructor(args, given) {
    this.args = args;
    this.given = given;
    this.modelPath = String(args.model_tag ?? args.model ?? "Qwen/Qwen3-0.6B");
    this.servedModelName = Array.isArray(args.served_model_name)
      ? String(args.served_model_name[0])
      : this.modelPath;
    this.port = Number(args.port ?? 8000);
    this.host = args.host === null || args.host === undefined ? null : String(args.host);
    this.tp = Math.max(1, Number(args.tensor_parallel_size ?? 1));
    this.pp = Math.max(1, Number(args.pipeline_parallel_size ?? 1));
    this.util = Number(args.gpu_memory_utilization ?? 0.9);
    const installed = installedVllm();
    this.version = installed?.version ?? VLLM_VERSION;
    this.site = sitePackagesDir() ?? "/usr/local/lib/python3.12/dist-packages";
    // the vLLM that runs: a build's on PYTHONPATH, else the venv's
    this.pkg = installed?.packageDir ?? join(this.site, "vllm");
    /** Its compiled extensions are there (a raw checkout on PYTHONPATH has none). */
    this.compiled = installed?.compiled ?? true;
    this.faults = vllmFaults(this.port, this.modelPath);
    this.gpu = gpuSet();
    /** Physical GPUs by logical index (CUDA_VISIBLE_DEVICES); nvidia-smi and the registry use physical. */
    this.visible = visibleGpus();
    this.pid = process.pid;
    // the engine core and workers are processes of their own in vLLM; the sim names them after pids of its own
    this.enginePid = process.pid + 1;
    this.status = "starting";
    /** @type {import("node:http").Server | null} */
    this.http = null;
    this.running = 0;
    this.waiting = 0;
    /** @type {(() => void)[]} */
    this.waiters = [];
    this.sleeping = false;
    this.sleepLevel = 0;
    /** @type {(() => void)[]} */
    this.wakeWaiters = [];
    this.draining = false;
    this.shuttingDown = false;
    /** @type {Set<import("node:net").Socket>} */
    this.inflightSockets = new Set();
    this.counters = { promptTokens: 0, generationTokens: 0, success: 0, windowPrompt: 0, windowGen: 0 };
  }

  /**
   * One log line of the API server (default) or another process of the server.
   * @param {string} level @param {string} where @param {string} msg @param {string} [proc] @param {number} [pid]
   */
  log(level, where, msg, proc = "APIServer", pid = this.pid) {
    process.stdout.write(`${vllmLine(proc, pid, level, where, msg)}\n`);
  }

  /** @param {string} level @param {string} where @param {string} msg */
  engineLog(level, where, msg) {
    this.log(level, where, msg, "EngineCore_DP0", this.enginePid);
  }

  /** A raw line of the API server process (uvicorn's, tracebacks): vLLM prefixes its stdout/stderr too. */
  raw(line, stream = process.stdout) {
    stream.write(`(APIServer pid=${this.pid}) ${line}\n`);
  }

  /** @param {string} rel */
  src(rel) {
    return join(this.pkg, rel);
  }

  installSignals() {
    process.stdout.on("error", () => {});
    process.stderr.on("error", () => {});
    process.on("SIGTERM", () => this.onSignal());
    process.on("SIGINT", () => this.onSignal());
    process.on("exit", () => {
      clearGpuUsage();
      clearPinnedMemory(); // an exiting process's pinned host RAM is freed with it
    });
  }

  async run() {
    this.installSignals();
    const a = this.args;
    this.log("INFO", "api_server.py:1839", `vLLM API server version ${this.version}`);
    const nonDefault = [...this.given]
      .filter((k) => k !== "help")
      .map((k) => `'${k}': ${pyRepr(a[k])}`)
      .join(", ");
    this.log("INFO", "utils.py:233", `non-default args: {${nonDefault}}`);
    // setup_server (vllm/entrypoints/openai/api_server.py) binds the port before the engine starts
    if (!(await portFree(this.port))) this.portInUse();
    this.resolveModel();
    if (process.env.VLLM_SERVER_DEV_MODE === "1")
      this.log(
        "WARNING",
        "api_server.py:1467",
        "SECURITY WARNING: Development endpoints are enabled! This should NOT be used in production!",
      );
    if (!(await this.startEngine())) return; // fault hang: the engine never reports ready
    await this.serve();
  }

  /** `OSError: [Errno 98] Address already in use` from setup_server's bind, before the engine starts. */
  portInUse() {
    this.apiTraceback(
      [
        `  File "${this.src("entrypoints/openai/api_server.py")}", line 1886, in run_server`,
        "    listen_address, sock = setup_server(args)",
        `  File "${this.src("entrypoints/openai/api_server.py")}", line 1866, in setup_server`,
        "    sock = create_server_socket(sock_addr)",
        `  File "${this.src("entrypoints/openai/api_server.py")}", line 1803, in create_server_socket`,
        "    sock.bind(addr)",
      ],
      "OSError: [Errno 98] Address already in use",
    );
  }

  /**
   * An uncaught exception of the API server process: the traceback on stderr (each line with the
   * process prefix), exit 1.
   * @param {string[]} frames @param {string} exc
   */
  apiTraceback(frames, exc) {
    const lines = [
      "Traceback (most recent call last):",
      `  File "${process.env.MODELSWAP_VLLM_ARGV0 ?? "/usr/local/bin/vllm"}", line 10, in <module>`,
      "    sys.exit(main())",
      `  File "${this.src("entrypoints/cli/main.py")}", line 73, in main`,
      "    args.dispatch_function(args)",
      `  File "${this.src("entrypoints/cli/serve.py")}", line 60, in cmd`,
      "    uvloop.run(run_server(args))",
      ...frames,
      ...exc.split("\n"),
    ];
    for (const line of lines) this.raw(line, process.stderr);
    clearGpuUsage();
    process.exit(1);
  }
}

/** Python repr for the non-default args line. @param {unknown} v */
function pyRepr(v) {
  if (v === null || v === undefined) return "None";
  if (v === true) return "True";
  if (v === false) return "False";
  if (typeof v === "number") return String(v);
  if (Array.isArray(v)) return `[${v.map(pyRepr).join(", ")}]`;
  return `'${String(v).replaceAll("\\", "\\\\").replaceAll("'", "\\'")}'`;
}

/** Whether nothing listens on the port (a listen that fails with EADDRINUSE means taken). @param {number} port */
function portFree(port) {
  return new Promise((resolve) => {
    const s = createServer();
    s.once("error", () => resolve(false));
    s.listen(port, "127.0.0.1", () => s.close(() => resolve(true)));
  });
}

Object.assign(SimVllm.prototype, engineMethods, routeMethods, openaiMethods);
