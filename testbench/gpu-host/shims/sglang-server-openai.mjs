/**
 * The OpenAI-compatible /v1/completions and /v1/chat/completions on SimServer (mixed into SimServer,
 * sglang-server.mjs): validation errors, context-length errors, streaming chunks, logprobs, usage and
 * matched_stop as SGLang's OpenAI adapter returns them.
 */
import { randomBytes } from "node:crypto";
import { finiteOrNull } from "./sglang-server-generation.mjs";
import { errorBody, sendJson } from "./sglang-server-routes.mjs";

/** /v1 methods of SimServer. */
export const openaiApiMethods = {
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
  },
};

/** @param {any} content */
function contentText(content) {
  if (typeof content === "string") return content;
  if (Array.isArray(content))
    return content.map((p) => (typeof p === "string" ? p : (p?.text ?? ""))).join("");
  return "";
}
