/**
 * What SimServer reports about itself (mixed into SimServer, sglang-server.mjs): the `Decode batch`
 * log line each second, /get_server_info (the server args plus internal_states with memory usage and
 * last_gen_throughput), and the GPU utilisation nvidia-smi shows while requests run.
 */
import { registerGpuUsage } from "./sglang-host.mjs";

/** Metrics methods of SimServer. */
export const metricsMethods = {
  decodeLog() {
    if (this.running === 0 && this.genTokensWindow === 0) return;
    this.lastGenThroughput = this.genTokensWindow;
    const usage = Math.min(1, (this.running * 256) / Math.max(1, this.maxTotalTokens));
    this.log(
      `Decode batch. #running-req: ${this.running}, #token: ${this.running * 256}, token usage: ${usage.toFixed(2)}, cuda graph: ${!this.args.disable_cuda_graph ? "True" : "False"}, gen throughput (token/s): ${this.genTokensWindow.toFixed(2)}, #queue-req: ${this.queued}, `,
      0,
    );
    this.genTokensWindow = 0;
  },

  serverInfo() {
    const a = this.args;
    return {
      ...a,
      model_path: String(a.model_path),
      tokenizer_path: a.tokenizer_path ?? String(a.model_path),
      served_model_name: this.servedModelName,
      quantization: this.quantMethod ?? null,
      context_length: a.context_length ?? null,
      mem_fraction_static: this.memFraction,
      max_running_requests: this.maxRunningRequests,
      chunked_prefill_size: this.chunkedPrefill,
      attention_backend: a.attention_backend ?? this.defaultAttentionBackend(),
      max_total_num_tokens: this.maxTotalTokens,
      max_req_input_len: this.contextLength - 5,
      internal_states: [
        {
          avg_spec_accept_length: null,
          last_gen_throughput: this.lastGenThroughput,
          memory_usage: {
            weight: round2(this.memory.weight),
            kvcache: round2(this.memory.kvcache),
            token_capacity: this.maxTotalTokens,
            graph: round2(this.memory.graph),
          },
        },
      ],
      version: this.version,
    };
  },

  /** Marks the GPUs busy at once, idle only after 300 ms without work. @param {boolean} busy */
  setBusy(busy) {
    if (!this.usage) return;
    if (!busy) {
      clearTimeout(this.idleTimer);
      this.idleTimer = setTimeout(() => {
        if (this.running === 0) this.writeUtil(false);
      }, 300);
      this.idleTimer.unref?.();
      return;
    }
    clearTimeout(this.idleTimer);
    this.writeUtil(true);
  },

  /** @param {boolean} busy */
  writeUtil(busy) {
    if (busy === this.gpuUtilBusy || !this.usage) return;
    this.gpuUtilBusy = busy;
    this.usage.util = busy ? 97 : 0;
    try {
      registerGpuUsage(this.usage);
    } catch {
      // usage display is best effort
    }
  },
};

/** @param {number} n */
function round2(n) {
  return Math.round(n * 100) / 100;
}
