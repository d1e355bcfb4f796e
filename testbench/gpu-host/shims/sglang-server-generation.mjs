/**
 * SimServer's generation (mixed into SimServer, sglang-server.mjs): the output mode — NaN output
 * ("!!!!", null logprobs) for NVFP4 on sm_120 without the FlashInfer backends, or with the faults
 * nan / sampling-errors — the max_running_requests slots and queue, and the pacing of tokens
 * (time to first token, time per token) shared by the native and OpenAI APIs.
 */

import { setting } from "./sglang-flags.mjs";
import { sglangFaults } from "./sglang-host.mjs";
import { generate, tokenize } from "./sglang-model.mjs";
import { sleep } from "./sglang-server-util.mjs";

/** Generation methods of SimServer. */
export const generationMethods = {
  /** Current output mode: "nan", "garbage" or "ok". */
  outputMode() {
    const runtime = sglangFaults(this.port, String(this.args.model_path ?? "")).modes;
    if (runtime.has("nan") || this.weightsLost) return "nan";
    if (runtime.has("sampling-errors")) return "garbage";
    if (this.nvfp4 && this.gpu.cc >= 12 && this.gpu.cc < 13) {
      const moe = setting(this.args, "moe_runner_backend");
      const fp4 = setting(this.args, "fp4_gemm_runner_backend");
      if (!(moe === "flashinfer_cutlass" && fp4 === "flashinfer_cudnn")) return "nan";
    }
    return "ok";
  },

  /** Runs fn while holding one of max_running_requests slots. @param {() => Promise<void>} fn */
  async withSlot(fn) {
    await this.whileReleased();
    await this.whileUpdating();
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
  },

  /** Per-token delay, slightly slower as the batch grows. */
  tokenDelay() {
    return this.faults.msPerToken * (1 + 0.02 * Math.max(0, this.running - 1));
  },

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
  },

  /** @param {string} text */
  countTokens(text) {
    return Math.max(1, tokenize(text).length);
  },
};

/** JSON has no NaN: orjson (which SGLang uses) writes NaN and inf as null. @param {number} v */
export function finiteOrNull(v) {
  return Number.isFinite(v) ? v : null;
}
