/**
 * SimVllm's HTTP side (mixed into SimVllm, vllm-server.mjs): uvicorn's start and access log, the routes
 * of vLLM 0.18's API server (vllm/entrypoints/openai/api_server.py and vllm/entrypoints/serve/*), the
 * request slots (max_num_seqs), the periodic stats line, sleep mode and SIGTERM.
 *
 * - GET /health: 200 with an empty body while the engine is alive (EngineClient.check_health — it does
 *   not run the model, so it stays 200 when the output is NaN), 503 once shutting down.
 * - GET /v1/models: the served model card (owned_by "vllm", root = model path, max_model_len).
 * - GET /metrics: Prometheus text with vllm:num_requests_running / vllm:num_requests_waiting
 *   (vllm/v1/metrics/loggers.py PrometheusStatLogger; labels engine, model_name).
 * - POST /sleep?level=N, POST /wake_up, GET /is_sleeping: only with VLLM_SERVER_DEV_MODE=1
 *   (vllm/entrypoints/serve/sleep/api_router.py attach_router returns early otherwise: 404). The engine
 *   call asserts --enable-sleep-mode ("Sleep mode is not enabled in the model config", as LLMEngine.sleep
 *   does), a 500 without it. Level 1 offloads the weights and discards the KV cache, level 2 discards
 *   both: the registered GPU memory drops to what a sleeping engine keeps (about 7 GB per GPU, vllm#47654);
 *   /wake_up restores it (wakeMs).
 * - SIGTERM (vllm/entrypoints/launcher.py serve_http logs "Shutting down FastAPI HTTP server."):
 *   --shutdown-timeout 0 (the default) aborts in-flight requests at once (their connections close);
 *   --shutdown-timeout N stops taking requests (503) and waits up to N s for the in-flight ones, then
 *   aborts the rest (the drain of vLLM 0.18, PR #34730 / #36666).
 */
import { createServer, STATUS_CODES } from "node:http";
import { clearPinnedMemory, registerPinnedMemory } from "./sandbox.mjs";
import { clearGpuUsage, registerGpuUsage } from "./sglang-host.mjs";
import { sleep } from "./sglang-server-util.mjs";

/** HTTP methods of SimVllm. */
export const routeMethods = {
  async serve() {
    const a = this.args;
    const shown = this.host ?? "0.0.0.0";
    this.log("INFO", "api_server.py:1634", "Supported_tasks: ['generate']");
    this.log("INFO", "api_server.py:1912", `Starting vLLM API server 0 on http://${shown}:${this.port}`);
    this.log("INFO", "launcher.py:34", "Available routes are:");
    for (const [path, methods] of ROUTES)
      this.log("INFO", "launcher.py:42", `Route: ${path}, Methods: ${methods}`);
    await this.listen();
    this.status = "up";
    this.raw(`INFO:     Started server process [${this.pid}]`);
    this.raw("INFO:     Waiting for application startup.");
    this.raw("INFO:     Application startup complete.");
    if (!a.disable_log_stats) setInterval(() => this.statsLog(), this.faults.statsIntervalMs).unref();
  },

  listen() {
    return new Promise((resolve) => {
      const server = createServer((req, res) => {
        this.handle(req, res).catch((err) => {
          this.raw(`ERROR:    Exception in ASGI application\n${err?.stack ?? err}`);
          if (!res.headersSent) sendJson(res, 500, { detail: "Internal Server Error" });
          else res.end();
        });
      });
      server.keepAliveTimeout = 5000;
      server.on("error", (err) => {
        this.raw(`ERROR:    ${/** @type {Error} */ (err).message}`);
        clearGpuUsage();
        process.exit(1);
      });
      server.listen(this.port, "127.0.0.1", () => {
        this.http = server;
        resolve(undefined);
      });
    });
  },

  /** @param {import("node:http").IncomingMessage} req @param {import("node:http").ServerResponse} res */
  async handle(req, res) {
    const url = new URL(req.url ?? "/", "http://localhost");
    const path = url.pathname;
    const method = req.method ?? "GET";
    const remote = `${req.socket.remoteAddress?.replace(/^::ffff:/, "") ?? "127.0.0.1"}:${req.socket.remotePort ?? 0}`;
    res.on("finish", () => {
      if (this.args.disable_uvicorn_access_log) return;
      this.raw(
        `INFO:     ${remote} - "${method} ${path}${url.search} HTTP/1.1" ${res.statusCode} ${STATUS_CODES[res.statusCode] ?? ""}`,
      );
    });
    if (this.draining) {
      // shutting down: new requests are refused (the in-flight ones finish)
      sendJson(res, 503, errorBody("The server is shutting down.", "ServiceUnavailableError", 503));
      return;
    }
    const keys = Array.isArray(this.args.api_key) ? this.args.api_key : [];
    if (
      keys.length > 0 &&
      path.startsWith("/v1") &&
      !keys.some((k) => req.headers.authorization === `Bearer ${k}`)
    ) {
      sendJson(res, 401, { error: "Unauthorized" });
      return;
    }
    const route = `${method} ${path}`;
    if (path === "/health") {
      if (method !== "GET") return methodNotAllowed(res);
      res.writeHead(200, { "content-length": "0" });
      res.end();
      return;
    }
    if (path === "/ping") {
      res.writeHead(200, { "content-type": "application/json", "content-length": "2" });
      res.end("{}");
      return;
    }
    if (route === "GET /version") return sendJson(res, 200, { version: this.version });
    if (route === "GET /v1/models") return sendJson(res, 200, { object: "list", data: [this.modelCard()] });
    if (route === "GET /metrics") {
      const body = this.metricsText();
      res.writeHead(200, {
        "content-type": "text/plain; version=0.0.4; charset=utf-8",
        "content-length": Buffer.byteLength(body),
      });
      res.end(body);
      return;
    }
    if (process.env.VLLM_SERVER_DEV_MODE === "1") {
      if (route === "POST /sleep") return this.sleepRoute(Number(url.searchParams.get("level") ?? "1"), res);
      if (route === "POST /wake_up") return this.wakeRoute(url.searchParams.getAll("tags"), res);
      if (route === "GET /is_sleeping") return sendJson(res, 200, { is_sleeping: this.sleeping });
      if (route === "POST /reset_prefix_cache") {
        res.writeHead(200, { "content-length": "0" });
        res.end();
        return;
      }
    }
    if (path === "/v1/completions" || path === "/v1/chat/completions") {
      if (method !== "POST") return methodNotAllowed(res);
      const body = await readBody(req, res);
      if (body === undefined) return;
      this.inflightSockets.add(req.socket);
      try {
        await this.openaiCompletions(body, res, path === "/v1/chat/completions");
        if (!res.writableFinished) await new Promise((r) => res.once("finish", r).once("close", r));
      } finally {
        this.inflightSockets.delete(req.socket);
        if (this.draining && this.inflightSockets.size === 0) this.onIdle?.();
      }
      return;
    }
    sendJson(res, 404, { detail: "Not Found" });
  },

  modelCard() {
    const created = Math.floor(Date.now() / 1000);
    return {
      id: this.servedModelName,
      object: "model",
      created,
      owned_by: "vllm",
      root: this.modelPath,
      parent: null,
      max_model_len: this.maxModelLen,
      permission: [
        {
          id: `modelperm-${(this.pid * 2654435761).toString(16).slice(0, 32).padEnd(32, "0")}`,
          object: "model_permission",
          created,
          allow_create_engine: false,
          allow_sampling: true,
          allow_logprobs: true,
          allow_search_indices: false,
          allow_view: true,
          allow_fine_tuning: false,
          organization: "*",
          group: null,
          is_blocking: false,
        },
      ],
    };
  },

  metricsText() {
    const labels = `engine="0",model_name="${this.servedModelName}"`;
    const usage = Math.min(1, (this.running * 256) / Math.max(1, this.kvTokens));
    const c = this.counters;
    return [
      "# HELP vllm:num_requests_running Number of requests in model execution batches.",
      "# TYPE vllm:num_requests_running gauge",
      `vllm:num_requests_running{${labels}} ${this.running.toFixed(1)}`,
      "# HELP vllm:num_requests_waiting Number of requests waiting to be processed.",
      "# TYPE vllm:num_requests_waiting gauge",
      `vllm:num_requests_waiting{${labels}} ${this.waiting.toFixed(1)}`,
      "# HELP vllm:kv_cache_usage_perc KV-cache usage. 1 means 100 percent usage.",
      "# TYPE vllm:kv_cache_usage_perc gauge",
      `vllm:kv_cache_usage_perc{${labels}} ${usage}`,
      "# HELP vllm:prompt_tokens_total Number of prefill tokens processed.",
      "# TYPE vllm:prompt_tokens_total counter",
      `vllm:prompt_tokens_total{${labels}} ${c.promptTokens.toFixed(1)}`,
      "# HELP vllm:generation_tokens_total Number of generation tokens processed.",
      "# TYPE vllm:generation_tokens_total counter",
      `vllm:generation_tokens_total{${labels}} ${c.generationTokens.toFixed(1)}`,
      "# HELP vllm:request_success_total Count of successfully processed requests.",
      "# TYPE vllm:request_success_total counter",
      `vllm:request_success_total{${labels}} ${c.success.toFixed(1)}`,
      "",
    ].join("\n");
  },

  /** "Engine 000: Avg prompt throughput …" (vllm/v1/metrics/loggers.py LoggingStatLogger.log). */
  statsLog() {
    const c = this.counters;
    if (c.windowPrompt === 0 && c.windowGen === 0 && this.running === 0 && this.waiting === 0) return;
    const secs = this.faults.statsIntervalMs / 1000;
    const usage = Math.min(100, (this.running * 256 * 100) / Math.max(1, this.kvTokens));
    this.log(
      "INFO",
      "loggers.py:123",
      `Engine 000: Avg prompt throughput: ${(c.windowPrompt / secs).toFixed(1)} tokens/s, Avg generation throughput: ${(c.windowGen / secs).toFixed(1)} tokens/s, Running: ${this.running} reqs, Waiting: ${this.waiting} reqs, GPU KV cache usage: ${usage.toFixed(1)}%, Prefix cache hit rate: 0.0%`,
    );
    c.windowPrompt = 0;
    c.windowGen = 0;
  },

  /** Runs fn in one of max_num_seqs slots; waits while the engine sleeps. @param {() => Promise<void>} fn */
  async withSlot(fn) {
    while (this.sleeping) await new Promise((r) => this.wakeWaiters.push(() => r(undefined)));
    if (this.running >= this.maxNumSeqs) {
      this.waiting++;
      await new Promise((r) => this.waiters.push(() => r(undefined)));
      this.waiting--;
    }
    this.running++;
    this.setBusy(true);
    try {
      await fn();
    } finally {
      this.running--;
      this.waiters.shift()?.();
      if (this.running === 0) this.setBusy(false);
    }
  },

  /** GPU utilisation shown by nvidia-smi: 97 % while requests run. @param {boolean} busy */
  setBusy(busy) {
    if (!this.usage || this.sleeping) return;
    this.usage.util = busy ? 97 : 0;
    try {
      registerGpuUsage(this.usage);
    } catch {
      // best effort
    }
  },

  /** @param {number} level @param {import("node:http").ServerResponse} res */
  async sleepRoute(level, res) {
    if (!this.args.enable_sleep_mode) {
      this.raw("ERROR:    Exception in ASGI application");
      this.raw("AssertionError: Sleep mode is not enabled in the model config");
      res.writeHead(500, { "content-type": "text/plain; charset=utf-8", "content-length": "21" });
      res.end("Internal Server Error");
      return;
    }
    if (!this.sleeping) {
      const before = this.awakeGiB();
      // what a sleeping engine still holds on each GPU: about 7 GB (vllm#47654; ../shared/DESIGN.md §10),
      // the CUDA context, NCCL and the allocator's pools
      const keptGiB = 7e9 / 1024 ** 3;
      this.sleeping = true;
      this.sleepLevel = level;
      this.usage.memMiB = Math.round(keptGiB * 1024);
      this.usage.util = 0;
      registerGpuUsage(this.usage);
      // level 1 offloads the weights to pinned CPU memory (CuMemAllocator, offload_tags=("weights",)); level 2 discards them
      if (level < 2) registerPinnedMemory(this.memory.weights * this.tp * 1024 ** 3);
      // vllm/v1/worker/gpu_worker.py Worker.sleep; vllm/v1/executor/abstract.py Executor.sleep
      this.engineLog(
        "INFO",
        "gpu_worker.py:117",
        `Sleep mode freed ${(before - this.usage.memMiB / 1024).toFixed(2)} GiB memory, ${(this.usage.memMiB / 1024).toFixed(2)} GiB memory is still in use.`,
      );
      this.engineLog("INFO", "abstract.py:296", "It took 0.210000 seconds to fall asleep.");
    }
    res.writeHead(200, { "content-length": "0" });
    res.end();
  },

  /** @param {string[]} tags @param {import("node:http").ServerResponse} res */
  async wakeRoute(tags, res) {
    this.log(
      "INFO",
      "api_router.py:44",
      `wake up the engine with tags: ${tags.length > 0 ? `[${tags.map((t) => `'${t}'`).join(", ")}]` : "None"}`,
    );
    if (!this.args.enable_sleep_mode) {
      this.raw("ERROR:    Exception in ASGI application");
      this.raw("AssertionError: Sleep mode is not enabled in the model config");
      res.writeHead(500, { "content-type": "text/plain; charset=utf-8", "content-length": "21" });
      res.end("Internal Server Error");
      return;
    }
    if (this.sleeping) {
      const t0 = Date.now();
      await sleep(this.faults.wakeMs);
      this.usage.memMiB = Math.round(this.awakeGiB() * 1024);
      registerGpuUsage(this.usage);
      clearPinnedMemory();
      this.sleeping = false;
      this.sleepLevel = 0;
      this.engineLog(
        "INFO",
        "abstract.py:312",
        `It took ${((Date.now() - t0) / 1000).toFixed(6)} seconds to wake up tags {'weights', 'kv_cache'}.`,
      );
      for (const w of this.wakeWaiters.splice(0)) w();
    }
    res.writeHead(200, { "content-length": "0" });
    res.end();
  },

  /** SIGTERM / SIGINT. */
  onSignal() {
    if (this.shuttingDown || this.http === null) return this.exitNow();
    if (this.draining) return this.exitNow(); // a second signal: no more waiting
    this.log("INFO", "launcher.py:80", "Shutting down FastAPI HTTP server.");
    const timeout = Number(this.args.shutdown_timeout ?? 0);
    const inflight = this.inflightSockets.size;
    if (timeout > 0 && inflight > 0) {
      this.draining = true;
      this.log("INFO", "api_server.py:1950", `Waiting up to ${timeout} seconds for processes to exit`);
      const deadline = setTimeout(() => this.exitNow(), timeout * 1000);
      this.onIdle = () => {
        clearTimeout(deadline);
        this.exitNow();
      };
      return;
    }
    this.exitNow();
  },

  /** Aborts what is still in flight (connections closed) and exits like uvicorn does. */
  exitNow() {
    if (this.shuttingDown) return;
    this.shuttingDown = true;
    for (const socket of this.inflightSockets) socket.destroy();
    if (this.http) {
      this.raw("INFO:     Shutting down");
      this.raw("INFO:     Waiting for application shutdown.");
      this.raw("INFO:     Application shutdown complete.");
      this.raw(`INFO:     Finished server process [${this.pid}]`);
      this.http.closeAllConnections?.();
      this.http.close();
    }
    clearGpuUsage();
    process.exit(0);
  },
};

/** The routes vLLM 0.18 logs at startup (a subset of "Available routes are:"). */
const ROUTES = [
  ["/openapi.json", "GET, HEAD"],
  ["/docs", "GET, HEAD"],
  ["/health", "GET"],
  ["/load", "GET"],
  ["/ping", "POST"],
  ["/ping", "GET"],
  ["/tokenize", "POST"],
  ["/detokenize", "POST"],
  ["/v1/models", "GET"],
  ["/version", "GET"],
  ["/v1/responses", "POST"],
  ["/v1/chat/completions", "POST"],
  ["/v1/completions", "POST"],
  ["/v1/embeddings", "POST"],
  ["/metrics", "GET"],
];

/** vLLM's ErrorResponse (vllm/entrypoints/openai/protocol.py). */
export function errorBody(message, type, code, param = null) {
  return { error: { message, type, param, code } };
}

/** @param {import("node:http").ServerResponse} res @param {number} status @param {unknown} body */
export function sendJson(res, status, body) {
  const text = JSON.stringify(body);
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text) });
  res.end(text);
}

/** @param {import("node:http").ServerResponse} res */
function methodNotAllowed(res) {
  sendJson(res, 405, { detail: "Method Not Allowed" });
}

/** @param {import("node:http").IncomingMessage} req @param {import("node:http").ServerResponse} res */
async function readBody(req, res) {
  const chunks = [];
  for await (const chunk of req) chunks.push(chunk);
  const raw = Buffer.concat(chunks).toString("utf8");
  try {
    const body = JSON.parse(raw === "" ? "{}" : raw);
    if (body === null || typeof body !== "object") throw new Error("not an object");
    return body;
  } catch {
    sendJson(
      res,
      400,
      errorBody(
        "[{'type': 'json_invalid', 'loc': ('body', 0), 'msg': 'JSON decode error'}]",
        "Bad Request",
        400,
      ),
    );
    return undefined;
  }
}
