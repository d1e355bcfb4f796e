/**
 * The OpenAI-compatible /v1/completions and /v1/chat/completions of SimVllm (mixed into SimVllm,
 * vllm-server.mjs), in vLLM 0.18's shapes (vllm/entrypoints/openai/serving_completion.py,
 * serving_chat.py, protocol.py): `cmpl-…` / `chatcmpl-…` ids, `stop_reason`, usage, OpenAI logprobs as
 * numbers (completions: tokens / token_logprobs / top_logprobs / text_offset; chat: content[{token,
 * logprob, bytes, top_logprobs}]), SSE streaming with the `stream_options.include_usage` chunk.
 *
 * Output mode: "nan" with the fault `nan`, and by itself for an NVFP4 checkpoint on compute capability
 * 12.x unless the FlashInfer CUTLASS FP4 MoE path is switched on (VLLM_USE_FLASHINFER_MOE_FP4=1 and
 * VLLM_FLASHINFER_MOE_BACKEND=throughput, vllm/envs.py; the default "latency" backend is TensorRT-LLM's,
 * which needs compute capability 10.x). NaN output is "!" (token id 0) repeated to max_tokens with NaN
 * logprobs, and how NaN reaches the client is vLLM's: a non-streaming response with logprobs fails to
 * serialise (Starlette's JSONResponse uses json.dumps(allow_nan=False): "ValueError: Out of range float
 * values are not JSON compliant", a 500 — as reported in vllm-project/vllm#13035, "only generates
 * exclamation marks … setting logprobs=True throws an unhandled server error"); streamed chunks are
 * pydantic's model_dump_json, which writes NaN as null.
 */
import { randomBytes } from "node:crypto";
import { generate, tokenize } from "./sglang-model.mjs";
import { sleep } from "./sglang-server-util.mjs";
import { vllmFaults } from "./vllm-host.mjs";
import { errorBody, sendJson } from "./vllm-server-routes.mjs";

/** OpenAI API methods of SimVllm. */
export const openaiMethods = {
  outputMode() {
    if (vllmFaults(this.port, this.modelPath).modes.has("nan")) return "nan";
    const cc = this.gpu.cc;
    if (this.nvfp4 && cc >= 12 && cc < 13) {
      const fp4 = process.env.VLLM_USE_FLASHINFER_MOE_FP4 === "1";
      const backend = process.env.VLLM_FLASHINFER_MOE_BACKEND ?? "latency";
      if (!(fp4 && backend === "throughput")) return "nan";
    }
    return "ok";
  },

  /** @param {any} body @param {import("node:http").ServerResponse} res @param {boolean} chat */
  async openaiCompletions(body, res, chat) {
    if (body.model !== undefined && body.model !== null && body.model !== this.servedModelName) {
      sendJson(
        res,
        404,
        errorBody(`The model \`${body.model}\` does not exist.`, "NotFoundError", 404, "model"),
      );
      return;
    }
    let prompt;
    let userText;
    if (chat) {
      if (!Array.isArray(body.messages)) {
        sendJson(
          res,
          400,
          errorBody(
            "[{'type': 'missing', 'loc': ('body', 'messages'), 'msg': 'Field required'}]",
            "Bad Request",
            400,
          ),
        );
        return;
      }
      prompt = `${body.messages.map((m) => `<|im_start|>${m.role}\n${contentText(m.content)}<|im_end|>\n`).join("")}<|im_start|>assistant\n`;
      userText = contentText([...body.messages].reverse().find((m) => m.role === "user")?.content ?? "");
    } else {
      if (body.prompt === undefined) {
        sendJson(
          res,
          400,
          errorBody(
            "[{'type': 'missing', 'loc': ('body', 'prompt'), 'msg': 'Field required'}]",
            "Bad Request",
            400,
          ),
        );
        return;
      }
      prompt = Array.isArray(body.prompt) ? body.prompt.join("") : String(body.prompt);
      userText = prompt;
    }
    const promptTokens = Math.max(1, tokenize(prompt).length);
    const requested = body.max_completion_tokens ?? body.max_tokens ?? (chat ? null : 16);
    if (requested !== null && promptTokens + Number(requested) > this.maxModelLen) {
      sendJson(
        res,
        400,
        errorBody(
          `'max_tokens' or 'max_completion_tokens' is too large: ${requested}. This model's maximum context length is ${this.maxModelLen} tokens and your request has ${promptTokens} input tokens (${requested} > ${this.maxModelLen} - ${promptTokens}).`,
          "BadRequestError",
          400,
        ),
      );
      return;
    }
    const maxTokens = requested === null ? this.maxModelLen - promptTokens : Number(requested);
    const stop =
      body.stop === undefined || body.stop === null
        ? []
        : Array.isArray(body.stop)
          ? body.stop.map(String)
          : [String(body.stop)];
    const wantLogprobs = chat
      ? Boolean(body.logprobs)
      : body.logprobs !== undefined && body.logprobs !== null;
    const top = Number(
      chat ? (body.top_logprobs ?? 0) : typeof body.logprobs === "number" ? body.logprobs : 0,
    );
    const mode = this.outputMode();
    const gen = generate({
      prompt: chat ? userText : prompt,
      chat,
      maxNewTokens: maxTokens,
      ignoreEos: Boolean(body.ignore_eos),
      stop,
      temperature: Number(body.temperature ?? 1.0),
      seed: Number(body.seed ?? 0),
      mode,
      vocab: this.model.vocabSize,
      eosTokenId: this.model.eosTokenId,
    });
    const id = `${chat ? "chatcmpl" : "cmpl"}-${randomBytes(16).toString("hex")}`;
    const created = Math.floor(Date.now() / 1000);
    const model = this.servedModelName;
    const finish = gen.finish.type === "length" ? "length" : "stop";
    const stopReason =
      gen.finish.type === "stop" && typeof gen.finish.matched === "string" ? gen.finish.matched : null;
    const usage = (/** @type {number} */ n) => ({
      prompt_tokens: promptTokens,
      total_tokens: promptTokens + n,
      completion_tokens: n,
      prompt_tokens_details: null,
    });
    const chatLogprob = (/** @type {any} */ t) => ({
      token: t.text,
      logprob: t.logprob,
      bytes: [...Buffer.from(t.text, "utf8")],
      top_logprobs: Array.from({ length: top }, () => ({
        token: t.text,
        logprob: t.logprob,
        bytes: [...Buffer.from(t.text, "utf8")],
      })),
    });
    const completionLogprobs = (/** @type {any[]} */ toks, /** @type {number} */ offset0) => {
      let offset = offset0;
      return {
        text_offset: toks.map((t) => {
          const o = offset;
          offset += t.text.length;
          return o;
        }),
        token_logprobs: toks.map((t) => t.logprob),
        tokens: toks.map((t) => t.text),
        top_logprobs: toks.map((t) => ({ [t.text]: t.logprob })),
      };
    };

    if (body.stream) {
      res.writeHead(200, { "content-type": "text/event-stream; charset=utf-8" });
      const object = chat ? "chat.completion.chunk" : "text_completion";
      // pydantic's model_dump_json: NaN → null
      const write = (/** @type {any} */ p) => res.write(`data: ${JSON.stringify(p, nanToNull)}\n\n`);
      if (chat)
        write({
          id,
          object,
          created,
          model,
          choices: [
            { index: 0, delta: { role: "assistant", content: "" }, logprobs: null, finish_reason: null },
          ],
        });
      let offset = 0;
      await this.pace(promptTokens, gen.tokens.length, (i) => {
        const t = gen.tokens[i];
        const last = i === gen.tokens.length - 1;
        const choice = chat
          ? {
              index: 0,
              delta: { content: t.text },
              logprobs: wantLogprobs ? { content: [chatLogprob(t)] } : null,
              finish_reason: last ? finish : null,
              stop_reason: last ? stopReason : null,
            }
          : {
              index: 0,
              text: t.text,
              logprobs: wantLogprobs ? completionLogprobs([t], offset) : null,
              finish_reason: last ? finish : null,
              stop_reason: last ? stopReason : null,
            };
        offset += t.text.length;
        write({ id, object, created, model, choices: [choice] });
      });
      if (this.shuttingDown) return;
      if (gen.tokens.length === 0)
        write({
          id,
          object,
          created,
          model,
          choices: [
            chat
              ? {
                  index: 0,
                  delta: { content: "" },
                  logprobs: null,
                  finish_reason: finish,
                  stop_reason: stopReason,
                }
              : { index: 0, text: "", logprobs: null, finish_reason: finish, stop_reason: stopReason },
          ],
        });
      if (body.stream_options?.include_usage)
        write({ id, object, created, model, choices: [], usage: usage(gen.tokens.length) });
      res.end("data: [DONE]\n\n");
      return;
    }

    await this.pace(promptTokens, gen.tokens.length, null);
    if (this.shuttingDown) return;
    const text = gen.tokens.map((t) => t.text).join("");
    const payload = chat
      ? {
          id,
          object: "chat.completion",
          created,
          model,
          choices: [
            {
              index: 0,
              message: {
                role: "assistant",
                content: text,
                refusal: null,
                annotations: null,
                audio: null,
                function_call: null,
                tool_calls: [],
                reasoning_content: null,
              },
              logprobs: wantLogprobs ? { content: gen.tokens.map(chatLogprob) } : null,
              finish_reason: finish,
              stop_reason: stopReason,
            },
          ],
          service_tier: null,
          system_fingerprint: null,
          usage: usage(gen.tokens.length),
          prompt_logprobs: null,
          kv_transfer_params: null,
        }
      : {
          id,
          object: "text_completion",
          created,
          model,
          choices: [
            {
              index: 0,
              text: body.echo ? prompt + text : text,
              logprobs: wantLogprobs ? completionLogprobs(gen.tokens, body.echo ? prompt.length : 0) : null,
              finish_reason: finish,
              stop_reason: stopReason,
              prompt_logprobs: null,
            },
          ],
          service_tier: null,
          system_fingerprint: null,
          usage: usage(gen.tokens.length),
          kv_transfer_params: null,
        };
    if (wantLogprobs && gen.tokens.some((t) => !Number.isFinite(t.logprob))) {
      // Starlette JSONResponse.render: json.dumps(..., allow_nan=False)
      this.raw("ERROR:    Exception in ASGI application");
      this.raw("Traceback (most recent call last):");
      this.raw(`  File "${this.site}/starlette/responses.py", line 190, in render`);
      this.raw("    return json.dumps(");
      this.raw("ValueError: Out of range float values are not JSON compliant");
      res.writeHead(500, { "content-type": "text/plain; charset=utf-8", "content-length": "21" });
      res.end("Internal Server Error");
      return;
    }
    sendJson(res, 200, payload);
  },

  /**
   * Holds a slot for the request and paces its tokens (time to first token, then per token), calling
   * onToken(i) as each "arrives" (null: all at the end). Updates the counters /metrics and the stats log read.
   * @param {number} promptTokens @param {number} n @param {((i: number) => void) | null} onToken
   */
  async pace(promptTokens, n, onToken) {
    await this.withSlot(async () => {
      this.counters.promptTokens += promptTokens;
      this.counters.windowPrompt += promptTokens;
      const per = () => this.faults.msPerToken * (1 + 0.02 * Math.max(0, this.running - 1));
      if (onToken === null) {
        let total = this.faults.ttftMs;
        for (let i = 0; i < n; i++) total += per();
        await sleep(total);
      } else {
        for (let i = 0; i < n; i++) {
          await sleep(i === 0 ? this.faults.ttftMs + per() : per());
          if (this.shuttingDown) return;
          onToken(i);
        }
      }
      this.counters.generationTokens += n;
      this.counters.windowGen += n;
      this.counters.success++;
    });
  },
};

/** JSON replacer: NaN and ±inf become null, as pydantic's model_dump_json writes them. */
function nanToNull(_key, value) {
  return typeof value === "number" && !Number.isFinite(value) ? null : value;
}

/** @param {any} content */
function contentText(content) {
  if (typeof content === "string") return content;
  if (Array.isArray(content))
    return content.map((p) => (typeof p === "string" ? p : (p?.text ?? ""))).join("");
  return "";
}
