/**
 * The results of the simulated `python -m sglang.bench_serving`: SGLang's calculate_metrics (numpy-like
 * statistics over the measured timings), the summary it prints ("============ Serving Benchmark Result
 * ============", labels padded with `{:<40}`), and the result record appended as one JSON line to
 * --output-file (or to SGLang's default file name), written like Python's json.dumps.
 */
import { appendFileSync } from "node:fs";
import { PROG } from "./sglang-bench-args.mjs";
import { tokenize } from "./sglang-model.mjs";

/** Python str() for `{:<10}` fields. */
function pyStr(v) {
  if (v === null || v === undefined) return "None";
  if (typeof v === "number") {
    if (v === Number.POSITIVE_INFINITY) return "inf";
    if (Number.isNaN(v)) return "nan";
    return Number.isInteger(v) && !Object.is(v, -0) ? String(v) : String(v);
  }
  return String(v);
}

/** @param {number} v */
function f2(v) {
  if (Number.isNaN(v)) return "nan";
  if (!Number.isFinite(v)) return v > 0 ? "inf" : "-inf";
  return v.toFixed(2);
}

/** `"{:<40} {:<10}".format(label, value)` */
function row(label, value) {
  return `${label.padEnd(40)} ${value.padEnd(10)}`;
}

/** `"{s:{c}^{n}}".format(s=..., n=50, c=...)` */
function center(s, c) {
  const extra = Math.max(0, 50 - s.length);
  const left = Math.floor(extra / 2);
  return c.repeat(left) + s + c.repeat(extra - left);
}

// numpy-like statistics ------------------------------------------------------------------------
/** @param {number[]} xs */
export function mean(xs) {
  return xs.length === 0 ? Number.NaN : xs.reduce((a, b) => a + b, 0) / xs.length;
}

/** @param {number[]} xs @param {number} q */
export function percentile(xs, q) {
  if (xs.length === 0) return Number.NaN;
  const s = [...xs].sort((a, b) => a - b);
  const pos = (q / 100) * (s.length - 1);
  const lo = Math.floor(pos);
  const hi = Math.ceil(pos);
  return s[lo] + (s[hi] - s[lo]) * (pos - lo);
}

/** @param {number[]} xs */
export function std(xs) {
  if (xs.length === 0) return Number.NaN;
  const m = mean(xs);
  return Math.sqrt(mean(xs.map((x) => (x - m) ** 2)));
}

/** numpy treats `xs or 0` as [0] when empty. @param {number[]} xs */
const orZero = (xs) => (xs.length === 0 ? [0] : xs);

/**
 * calculate_metrics: per-request TTFT, TPOT, ITL and end-to-end latency over the successful requests,
 * throughputs over the whole run, and the peaks (output tokens per second, concurrent requests).
 */
export function calculateMetrics(outputs, rows, duration, benchStart) {
  const outputLens = [];
  const retokenized = [];
  let totalInput = 0;
  let completed = 0;
  const itls = [];
  const tpots = [];
  const ttfts = [];
  const e2e = [];
  const tokenTimes = [];
  const spans = [];
  for (let i = 0; i < outputs.length; i++) {
    const o = outputs[i];
    if (o.success) {
      outputLens.push(o.outputLen);
      retokenized.push(tokenize(o.generated).length);
      totalInput += rows[i].promptLen;
      if (o.outputLen > 1) tpots.push((o.latency - o.ttft) / (o.outputLen - 1));
      itls.push(...o.itl);
      ttfts.push(o.ttft);
      e2e.push(o.latency);
      tokenTimes.push(...o.tokenTimes);
      spans.push([o.start, o.start + o.latency * 1000]);
      completed++;
    } else {
      outputLens.push(0);
      retokenized.push(0);
    }
  }
  if (completed === 0) {
    process.stderr.write(
      `${PROG}:1: UserWarning: All requests failed. This is likely due to a misconfiguration on the benchmark arguments.\n`,
    );
  }
  const totalOutput = outputLens.reduce((a, b) => a + b, 0);
  const totalRetok = retokenized.reduce((a, b) => a + b, 0);
  // Peak output throughput: tokens per 1-second bucket since the start.
  const buckets = new Map();
  for (const t of tokenTimes) {
    const b = Math.floor((t - benchStart) / 1000);
    buckets.set(b, (buckets.get(b) ?? 0) + 1);
  }
  const peakTps = buckets.size === 0 ? 0 : Math.max(...buckets.values());
  const events = spans
    .flatMap(([s, e]) => [
      [s, 1],
      [e, -1],
    ])
    .sort((a, b) => a[0] - b[0] || a[1] - b[1]);
  let cur = 0;
  let peakConc = 0;
  for (const [, d] of events) {
    cur += d;
    peakConc = Math.max(peakConc, cur);
  }
  const m = {
    completed,
    total_input: totalInput,
    total_output: totalOutput,
    total_output_retokenized: totalRetok,
    request_throughput: completed / duration,
    input_throughput: totalInput / duration,
    output_throughput: totalOutput / duration,
    total_throughput: (totalInput + totalOutput) / duration,
    mean_ttft_ms: mean(orZero(ttfts)) * 1000,
    median_ttft_ms: percentile(orZero(ttfts), 50) * 1000,
    std_ttft_ms: std(orZero(ttfts)) * 1000,
    p99_ttft_ms: percentile(orZero(ttfts), 99) * 1000,
    mean_tpot_ms: mean(orZero(tpots)) * 1000,
    median_tpot_ms: percentile(orZero(tpots), 50) * 1000,
    std_tpot_ms: std(orZero(tpots)) * 1000,
    p99_tpot_ms: percentile(orZero(tpots), 99) * 1000,
    mean_itl_ms: mean(orZero(itls)) * 1000,
    median_itl_ms: percentile(orZero(itls), 50) * 1000,
    std_itl_ms: std(orZero(itls)) * 1000,
    p95_itl_ms: percentile(orZero(itls), 95) * 1000,
    p99_itl_ms: percentile(orZero(itls), 99) * 1000,
    max_itl_ms: Math.max(...orZero(itls)) * 1000,
    mean_e2e_latency_ms: mean(e2e) * 1000,
    median_e2e_latency_ms: percentile(e2e, 50) * 1000,
    std_e2e_latency_ms: std(e2e) * 1000,
    p90_e2e_latency_ms: percentile(e2e, 90) * 1000,
    p99_e2e_latency_ms: percentile(e2e, 99) * 1000,
    concurrency: e2e.reduce((a, b) => a + b, 0) / duration,
    max_output_tokens_per_s: peakTps,
    max_concurrent_requests: peakConc,
  };
  return { m, outputLens };
}

/** The summary table bench_serving prints to stdout. */
export function printSummary(backend, args, duration, m, acceptLength) {
  const lines = [
    "",
    center(" Serving Benchmark Result ", "="),
    row("Backend:", backend),
    row("Traffic request rate:", pyStr(args.request_rate)),
    row("Max request concurrency:", args.max_concurrency ? String(args.max_concurrency) : "not set"),
    row("Successful requests:", String(m.completed)),
    row("Benchmark duration (s):", f2(duration)),
    row("Total input tokens:", String(m.total_input)),
    row("Total input text tokens:", String(m.total_input)),
    row("Total generated tokens:", String(m.total_output)),
    row("Total generated tokens (retokenized):", String(m.total_output_retokenized)),
    row("Request throughput (req/s):", f2(m.request_throughput)),
    row("Input token throughput (tok/s):", f2(m.input_throughput)),
    row("Output token throughput (tok/s):", f2(m.output_throughput)),
    row("Peak output token throughput (tok/s):", f2(m.max_output_tokens_per_s)),
    row("Peak concurrent requests:", String(m.max_concurrent_requests)),
    row("Total token throughput (tok/s):", f2(m.total_throughput)),
    row("Concurrency:", f2(m.concurrency)),
    ...(acceptLength ? [row("Accept length:", f2(acceptLength))] : []),
    center("End-to-End Latency", "-"),
    row("Mean E2E Latency (ms):", f2(m.mean_e2e_latency_ms)),
    row("Median E2E Latency (ms):", f2(m.median_e2e_latency_ms)),
    row("P90 E2E Latency (ms):", f2(m.p90_e2e_latency_ms)),
    row("P99 E2E Latency (ms):", f2(m.p99_e2e_latency_ms)),
    center("Time to First Token", "-"),
    row("Mean TTFT (ms):", f2(m.mean_ttft_ms)),
    row("Median TTFT (ms):", f2(m.median_ttft_ms)),
    row("P99 TTFT (ms):", f2(m.p99_ttft_ms)),
    center("Time per Output Token (excl. 1st token)", "-"),
    row("Mean TPOT (ms):", f2(m.mean_tpot_ms)),
    row("Median TPOT (ms):", f2(m.median_tpot_ms)),
    row("P99 TPOT (ms):", f2(m.p99_tpot_ms)),
    center("Inter-Token Latency", "-"),
    row("Mean ITL (ms):", f2(m.mean_itl_ms)),
    row("Median ITL (ms):", f2(m.median_itl_ms)),
    row("P95 ITL (ms):", f2(m.p95_itl_ms)),
    row("P99 ITL (ms):", f2(m.p99_itl_ms)),
    row("Max ITL (ms):", f2(m.max_itl_ms)),
    "=".repeat(50),
  ];
  process.stdout.write(`${lines.join("\n")}\n`);
}

/** The result record, appended as one JSON line (with the per-request details under --output-details). */
export function writeResult(args, { serverInfo, duration, m, acceptLength, outputs, outputLens }) {
  const result = {
    tag: args.tag,
    backend: args.backend,
    dataset_name: args.dataset_name,
    request_rate: args.request_rate,
    max_concurrency: args.max_concurrency,
    sharegpt_output_len: args.sharegpt_output_len,
    random_input_len: args.random_input_len,
    random_output_len: args.random_output_len,
    random_range_ratio: args.random_range_ratio,
    server_info: serverInfo,
    duration,
    completed: m.completed,
    total_input_tokens: m.total_input,
    total_input_text_tokens: m.total_input,
    total_input_vision_tokens: 0,
    total_output_tokens: m.total_output,
    total_output_tokens_retokenized: m.total_output_retokenized,
    request_throughput: m.request_throughput,
    input_throughput: m.input_throughput,
    output_throughput: m.output_throughput,
    total_throughput: m.total_throughput,
    mean_e2e_latency_ms: m.mean_e2e_latency_ms,
    median_e2e_latency_ms: m.median_e2e_latency_ms,
    std_e2e_latency_ms: m.std_e2e_latency_ms,
    p90_e2e_latency_ms: m.p90_e2e_latency_ms,
    p99_e2e_latency_ms: m.p99_e2e_latency_ms,
    mean_ttft_ms: m.mean_ttft_ms,
    median_ttft_ms: m.median_ttft_ms,
    std_ttft_ms: m.std_ttft_ms,
    p99_ttft_ms: m.p99_ttft_ms,
    mean_tpot_ms: m.mean_tpot_ms,
    median_tpot_ms: m.median_tpot_ms,
    std_tpot_ms: m.std_tpot_ms,
    p99_tpot_ms: m.p99_tpot_ms,
    mean_itl_ms: m.mean_itl_ms,
    median_itl_ms: m.median_itl_ms,
    std_itl_ms: m.std_itl_ms,
    p95_itl_ms: m.p95_itl_ms,
    p99_itl_ms: m.p99_itl_ms,
    concurrency: m.concurrency,
    accept_length: acceptLength,
    max_output_tokens_per_s: m.max_output_tokens_per_s,
    max_concurrent_requests: m.max_concurrent_requests,
  };
  let fileName = args.output_file;
  if (!fileName) {
    const d = new Date();
    const mmdd = `${String(d.getMonth() + 1).padStart(2, "0")}${String(d.getDate()).padStart(2, "0")}`;
    fileName = `${args.backend}_${mmdd}_${args.num_prompts}_${args.random_input_len}_${args.random_output_len}.jsonl`;
  }
  const details = {
    input_lens: outputs.map((o) => o.promptLen),
    output_lens: outputLens,
    ttfts: outputs.map((o) => o.ttft),
    itls: outputs.map((o) => o.itl),
    generated_texts: outputs.map((o) => o.generated),
    errors: outputs.map((o) => o.error),
  };
  appendFileSync(fileName, `${pyJson(args.output_details ? { ...result, ...details } : result)}\n`);
}

/** Python json.dumps (default separators, ensure_ascii, NaN/Infinity literals). @param {unknown} v */
export function pyJson(v) {
  if (v === null || v === undefined) return "null";
  if (v === true) return "true";
  if (v === false) return "false";
  if (typeof v === "number") {
    if (Number.isNaN(v)) return "NaN";
    if (!Number.isFinite(v)) return v > 0 ? "Infinity" : "-Infinity";
    return String(v);
  }
  if (typeof v === "string") {
    return JSON.stringify(v).replace(
      /[\u007f-\uffff]/g,
      (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, "0")}`,
    );
  }
  if (Array.isArray(v)) return `[${v.map(pyJson).join(", ")}]`;
  if (typeof v === "object") {
    return `{${Object.entries(v)
      .map(([k, x]) => `${pyJson(k)}: ${pyJson(x)}`)
      .join(", ")}}`;
  }
  return "null";
}
