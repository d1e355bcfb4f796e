import { z } from "zod";
/**
 * The benchmark stage's engine side: the settings of its two runs, and a parser for the summary both
 * engines' clients print (SGLang's `python -m sglang.bench_serving`, sglang/bench-command.ts; vLLM's
 * `vllm bench serve`). Real bench_serving prints `"{:<40} {:<10}"` rows between
 * `============ Serving Benchmark Result ============` and a line of 50 `=`; labels and sections
 * differ between versions (TPOT, P90/P95, "Total token throughput" vs "Total throughput"), so the
 * parser reads rows by label and tolerates unknown and missing ones. The JSONL `--output-file` holds
 * Python's bare `Infinity` and is not read.
 */
import { CodedError } from "../errors.ts";
import type { ShellCommand } from "../host/shell-quote.ts";
import type { HostTransport } from "../host/transport.ts";

export interface BenchSettings {
  /** `--max-concurrency`: requests in flight at once. */
  concurrency: number;
  numPrompts: number;
  /** `--random-input-len` / `--random-output-len` with `--random-range-ratio 1`: every request exactly this long. */
  inputLen: number;
  outputLen: number;
  seed: number;
}

export interface BenchOptions extends BenchSettings {
  /** The engine's venv; the command runs `<venv>/bin/python`. */
  venv: string;
  port: number;
  /**
   * `--model`: the model directory on the host. bench_serving loads the tokenizer from it; the
   * native `/generate` backend sends no model name, so a served-model-name does not matter.
   */
  model: string;
  /**
   * The name the server answers to (its --served-model-name), where the engine's client must send it:
   * vLLM's OpenAI routes answer 404 to any other model name.
   */
  servedModelName?: string;
  /**
   * `random` (default) takes its prompt text from ShareGPT, which bench_serving downloads to /tmp on
   * first use; `random-ids` needs no download (use it on hosts without internet access).
   */
  datasetName?: "random" | "random-ids";
  /** `--output-file` (default /dev/null: the summary on stdout is what is parsed). */
  outputFile?: string;
}

/**
 * Single stream: one request at a time, 8 prompts of 1024 tokens in / 128 out. About 10 s on a real
 * large model (TPOT 10–20 ms); well under a second per prompt on the simulated engine.
 */
export const SINGLE_STREAM: Readonly<BenchSettings> = Object.freeze({
  concurrency: 1,
  numPrompts: 8,
  inputLen: 1024,
  outputLen: 128,
  seed: 1,
});

/** Loaded: 16 requests in flight, 32 prompts of 1024 in / 128 out (two waves). */
export const LOADED: Readonly<BenchSettings> = Object.freeze({
  concurrency: 16,
  numPrompts: 32,
  inputLen: 1024,
  outputLen: 128,
  seed: 1,
});

/** What a benchmark run asks of an engine (src/engine/engine.ts): its client's command, and its summary. */
export interface BenchEngine {
  benchCommand(opts: BenchOptions): ShellCommand;
  parseBenchSummary(stdout: string, stderr: string): BenchResult;
}

/** The summary of one bench_serving run, as parsed (and as kept in the swap's record). */
export const benchResultSchema = z.object({
  backend: z.string().optional(),
  /** `Max request concurrency:`; null when bench_serving printed "not set". */
  maxConcurrency: z.number().nullable().optional(),
  /** How many requests were sent, when known (set by `runBench`). */
  requested: z.number().optional(),
  successfulRequests: z.number().optional(),
  durationS: z.number().optional(),
  totalInputTokens: z.number().optional(),
  totalOutputTokens: z.number().optional(),
  requestThroughput: z.number().optional(),
  inputThroughput: z.number().optional(),
  outputThroughput: z.number().optional(),
  totalThroughput: z.number().optional(),
  concurrency: z.number().optional(),
  meanE2eMs: z.number().optional(),
  medianE2eMs: z.number().optional(),
  p90E2eMs: z.number().optional(),
  p99E2eMs: z.number().optional(),
  meanTtftMs: z.number().optional(),
  medianTtftMs: z.number().optional(),
  p99TtftMs: z.number().optional(),
  meanTpotMs: z.number().optional(),
  medianTpotMs: z.number().optional(),
  p99TpotMs: z.number().optional(),
  meanItlMs: z.number().optional(),
  medianItlMs: z.number().optional(),
  p95ItlMs: z.number().optional(),
  p99ItlMs: z.number().optional(),
  maxItlMs: z.number().optional(),
  /** Every row of the summary as printed (label without its colon → value), known or not. */
  raw: z.record(z.string(), z.string()),
});
export type BenchResult = z.infer<typeof benchResultSchema>;

type NumericKey = Exclude<keyof BenchResult, "raw" | "backend" | "maxConcurrency" | "requested">;

/** Labels as bench_serving versions print them (lower case, without the colon) → field. */
const LABELS: Record<string, NumericKey> = {
  "successful requests": "successfulRequests",
  "benchmark duration (s)": "durationS",
  "total input tokens": "totalInputTokens",
  "total generated tokens": "totalOutputTokens",
  "request throughput (req/s)": "requestThroughput",
  "input token throughput (tok/s)": "inputThroughput",
  "output token throughput (tok/s)": "outputThroughput",
  "total token throughput (tok/s)": "totalThroughput",
  "total throughput (tok/s)": "totalThroughput",
  concurrency: "concurrency",
  "mean e2e latency (ms)": "meanE2eMs",
  "median e2e latency (ms)": "medianE2eMs",
  "p50 e2e latency (ms)": "medianE2eMs",
  "p90 e2e latency (ms)": "p90E2eMs",
  "p99 e2e latency (ms)": "p99E2eMs",
  "mean ttft (ms)": "meanTtftMs",
  "median ttft (ms)": "medianTtftMs",
  "p50 ttft (ms)": "medianTtftMs",
  "p99 ttft (ms)": "p99TtftMs",
  "mean tpot (ms)": "meanTpotMs",
  "median tpot (ms)": "medianTpotMs",
  "p50 tpot (ms)": "medianTpotMs",
  "p99 tpot (ms)": "p99TpotMs",
  "mean itl (ms)": "meanItlMs",
  "median itl (ms)": "medianItlMs",
  "p50 itl (ms)": "medianItlMs",
  "p95 itl (ms)": "p95ItlMs",
  "p99 itl (ms)": "p99ItlMs",
  "max itl (ms)": "maxItlMs",
};

const HEADER = /^=+ *Serving Benchmark Result *=+$/;
const FOOTER = /^={20,}$/;
const SECTION = /^-{3,}[^-].*-{3,}$|^-{10,}$/;
const ROW = /^(.+?):\s+(\S(?:.*\S)?)\s*$/;

/**
 * Reads the last summary block of bench_serving's stdout. Unknown rows are kept in `raw`; missing
 * ones stay undefined; `nan` values are undefined and `inf` is Infinity. Throws BENCH_FAILED, with
 * the output's tail, when there is no summary block at all.
 */
export function parseBenchSummary(stdout: string, stderr = ""): BenchResult {
  const lines = stdout.split(/\r?\n/);
  const start = lines.findLastIndex((line) => HEADER.test(line.trim()));
  if (start < 0) throw benchError(stdout, stderr);
  const result: BenchResult = { raw: {} };
  for (const rawLine of lines.slice(start + 1)) {
    const line = rawLine.trim();
    if (FOOTER.test(line)) break;
    if (line === "" || SECTION.test(line)) continue;
    const m = ROW.exec(line);
    if (!m) continue;
    const label = (m[1] ?? "").trim();
    const value = (m[2] ?? "").trim();
    result.raw[label] = value;
    const key = label.toLowerCase().replace(/\s+/g, " ");
    if (key === "backend") result.backend = value;
    else if (key === "max request concurrency")
      result.maxConcurrency = value === "not set" ? null : toNumber(value);
    else {
      const field = LABELS[key];
      const n = toNumber(value);
      if (field !== undefined && n !== undefined) result[field] = n;
    }
  }
  return result;
}

function toNumber(value: string): number | undefined {
  const v = value.toLowerCase();
  if (v === "inf") return Number.POSITIVE_INFINITY;
  if (v === "-inf") return Number.NEGATIVE_INFINITY;
  const n = Number(value);
  return value !== "" && Number.isFinite(n) ? n : undefined;
}

/** The BENCH_FAILED error for output without a summary, with its last lines and a cause when known. */
function benchError(stdout: string, stderr: string): CodedError {
  const all = `${stdout}\n${stderr}`;
  const tail = all
    .split(/\r?\n/)
    .filter((line) => line.trim() !== "")
    .slice(-15)
    .map((line) => (line.length > 300 ? `${line.slice(0, 299)}…` : line));
  let fix =
    "read the output above; run the same bench_serving command on the host by hand to see the whole of it";
  if (/Failed to fetch model from|Cannot connect to host|Connection refused/.test(all))
    fix =
      "the benchmark could not reach the server: check that the service is running and listens on the configured servingPort";
  else if (/Warmup failed/.test(all))
    fix = "the server refused the benchmark's requests: check the service's journal for errors";
  else if (/No module named sglang|No module named 'sglang'/.test(all))
    fix = "sglang is not installed in the configured venv";
  else if (/ShareGPT|huggingface\.co\/datasets/.test(all))
    fix =
      "the random dataset downloads ShareGPT on first use; without internet access on the host use datasetName random-ids";
  return new CodedError(
    "BENCH_FAILED",
    `bench_serving printed no result summary. Last lines:\n${tail.join("\n") || "(no output)"}`,
    fix,
  );
}

/**
 * Runs bench_serving on the host and parses its summary. Throws BENCH_FAILED when it exits non-zero
 * without a summary, or when no request succeeded.
 */
export async function runBench(
  engine: BenchEngine,
  exec: HostTransport["exec"],
  opts: BenchOptions,
  execOptions: { timeoutMs?: number } = {},
): Promise<BenchResult> {
  const result = await exec(engine.benchCommand(opts), {
    ...(execOptions.timeoutMs === undefined ? {} : { timeoutMs: execOptions.timeoutMs }),
    maxOutputBytes: 1024 * 1024,
  });
  const parsed = engine.parseBenchSummary(result.stdout, result.stderr);
  parsed.requested = opts.numPrompts;
  if (!parsed.successfulRequests) {
    throw new CodedError(
      "BENCH_FAILED",
      `bench_serving: none of the ${opts.numPrompts} requests succeeded (concurrency ${opts.concurrency})`,
      "the server fails requests under the benchmark's load: check the service's journal",
    );
  }
  return parsed;
}
