/**
 * SGLang's native /generate on SimServer (mixed into SimServer, sglang-server.mjs): text or input_ids,
 * batches, streaming as server-sent events, sampling_params, logprobs and meta_info as SGLang returns
 * them.
 */
import { randomUUID } from "node:crypto";
import { hash32, tokenize } from "./sglang-model.mjs";
import { finiteOrNull } from "./sglang-server-generation.mjs";
import { sendJson } from "./sglang-server-routes.mjs";

/** /generate methods of SimServer. */
export const nativeApiMethods = {
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
  },

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
  },
};
