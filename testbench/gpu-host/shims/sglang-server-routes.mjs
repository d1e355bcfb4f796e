/**
 * SimServer's HTTP side (mixed into SimServer, sglang-server.mjs): uvicorn's bind and startup lines,
 * the warmup, and the routes with SGLang's JSON shapes — /health, /health_generate, /ping,
 * /v1/models, /get_model_info, /get_server_info, /get_load, /flush_cache, /generate,
 * /v1/completions, /v1/chat/completions, and the memory saver's two (sglang-server-memory.mjs) — with
 * their access log lines and error bodies.
 */
import { createServer, STATUS_CODES } from "node:http";
import { clearGpuUsage } from "./sglang-host.mjs";
import { sleep } from "./sglang-server-util.mjs";

/** HTTP methods of SimServer. */
export const routeMethods = {
  /** Uvicorn starts, the warmup request runs (/health answers 503 until then), and the server is up. */
  async serve() {
    const a = this.args;
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
  },

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
  },

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
      if (this.status !== "Up" || this.gracefullyExit) {
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
    if (route === "POST /release_memory_occupation") return this.releaseRoute(req, res);
    if (route === "POST /resume_memory_occupation") return this.resumeRoute(req, res);
    if (route === "POST /update_weights_from_disk") return this.updateWeightsRoute(req, res);
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
  },

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
  },
};

/** @param {string} message @param {number} code */
export function errorBody(message, code) {
  return { object: "error", message, type: STATUS_CODES[code] ?? "Bad Request", param: null, code };
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

/**
 * Reads a JSON body; answers 400 like SGLang's validation handler when it is not JSON.
 * @param {import("node:http").IncomingMessage} req @param {import("node:http").ServerResponse} res
 */
export async function readBody(req, res) {
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
