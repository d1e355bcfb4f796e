import { describe, expect, it } from "vitest";
import {
  type BenchResult,
  LOADED,
  parseBenchSummary,
  runBench,
  SINGLE_STREAM,
} from "../../src/engine/bench-serving.ts";
import { benchCommand } from "../../src/engine/sglang/bench-command.ts";
import { sglangEngine } from "../../src/engine/sglang/sglang-engine.ts";
import { isCodedError } from "../../src/errors.ts";
import type { ShellCommand } from "../../src/host/shell-quote.ts";
import type { ExecOptions, ExecResult } from "../../src/host/transport.ts";
import { renderBenchmarkComparison } from "../../src/reporter/benchmark-table.ts";

/** `"{:<40} {:<10}".format(label, value)` as bench_serving prints its rows. */
const row = (label: string, value: string) => `${label.padEnd(40)} ${value.padEnd(10)}`;
const rule = (title: string, c: string) => {
  const extra = Math.max(0, 50 - title.length);
  return c.repeat(Math.floor(extra / 2)) + title + c.repeat(extra - Math.floor(extra / 2));
};

const PREAMBLE = [
  "benchmark_args=Namespace(backend='sglang', base_url=None, host='127.0.0.1', port=30000, dataset_name='random', num_prompts=32, max_concurrency=16, seed=1)",
  "Namespace(backend='sglang', host='127.0.0.1', port=30000, model='/models/Qwen3-8B')",
  "",
  "#Input tokens: 32768",
  "#Output tokens: 4096",
  "Starting warmup with 1 sequences...",
  "Warmup completed with 1 sequences. Starting main benchmark run...",
];

/** Current upstream (0.5.x): peak rows, P90 E2E, TPOT and ITL sections. */
const CURRENT = [
  ...PREAMBLE,
  "",
  rule(" Serving Benchmark Result ", "="),
  row("Backend:", "sglang"),
  row("Traffic request rate:", "inf"),
  row("Max request concurrency:", "16"),
  row("Successful requests:", "32"),
  row("Benchmark duration (s):", "9.87"),
  row("Total input tokens:", "32768"),
  row("Total input text tokens:", "32768"),
  row("Total generated tokens:", "4096"),
  row("Total generated tokens (retokenized):", "4090"),
  row("Request throughput (req/s):", "3.24"),
  row("Input token throughput (tok/s):", "3319.96"),
  row("Output token throughput (tok/s):", "414.99"),
  row("Peak output token throughput (tok/s):", "512.00"),
  row("Peak concurrent requests:", "16"),
  row("Total token throughput (tok/s):", "3734.95"),
  row("Concurrency:", "15.62"),
  rule("End-to-End Latency", "-"),
  row("Mean E2E Latency (ms):", "4817.41"),
  row("Median E2E Latency (ms):", "4820.03"),
  row("P90 E2E Latency (ms):", "4990.55"),
  row("P99 E2E Latency (ms):", "5012.87"),
  rule("Time to First Token", "-"),
  row("Mean TTFT (ms):", "612.40"),
  row("Median TTFT (ms):", "598.12"),
  row("P99 TTFT (ms):", "1204.77"),
  rule("Time per Output Token (excl. 1st token)", "-"),
  row("Mean TPOT (ms):", "33.11"),
  row("Median TPOT (ms):", "33.02"),
  row("P99 TPOT (ms):", "35.90"),
  rule("Inter-Token Latency", "-"),
  row("Mean ITL (ms):", "33.10"),
  row("Median ITL (ms):", "32.87"),
  row("P95 ITL (ms):", "36.01"),
  row("P99 ITL (ms):", "41.22"),
  row("Max ITL (ms):", "88.40"),
  "=".repeat(50),
  "",
].join("\n");

/** An older release: "Total throughput", no TPOT section, no concurrency row. */
const OLDER = [
  rule(" Serving Benchmark Result ", "="),
  row("Backend:", "sglang"),
  row("Traffic request rate:", "2.0"),
  row("Successful requests:", "996"),
  row("Benchmark duration (s):", "264.25"),
  row("Total input tokens:", "342460"),
  row("Total generated tokens:", "218257"),
  row("Request throughput (req/s):", "3.77"),
  row("Output token throughput (tok/s):", "825.94"),
  row("Total throughput (tok/s):", "2121.89"),
  rule("End-to-End Latency", "-"),
  row("Mean E2E Latency (ms):", "2098.07"),
  row("Median E2E Latency (ms):", "606.86"),
  rule("Time to First Token", "-"),
  row("Mean TTFT (ms):", "2074.09"),
  row("Median TTFT (ms):", "606.88"),
  row("P99 TTFT (ms):", "15089.74"),
  rule("Inter-token Latency", "-"),
  row("Mean ITL (ms):", "0.00"),
  "=".repeat(50),
].join("\n");

describe("benchCommand", () => {
  it("builds the real bench_serving command line, every value quoted", () => {
    const cmd = benchCommand({
      venv: "/opt/sglang/.venv/",
      port: 30000,
      model: "/data/models/Qwen3.5 397B",
      ...SINGLE_STREAM,
    });
    expect(cmd.text).toBe(
      "/opt/sglang/.venv/bin/python -m sglang.bench_serving --backend sglang --host 127.0.0.1 --port 30000 --model '/data/models/Qwen3.5 397B' --dataset-name random --random-input-len 1024 --random-output-len 128 --random-range-ratio 1 --num-prompts 8 --max-concurrency 1 --seed 1 --output-file /dev/null --disable-tqdm",
    );
    const loaded = benchCommand({
      venv: "/v",
      port: 31000,
      model: "/m; rm -rf /",
      datasetName: "random-ids",
      outputFile: "/tmp/b.jsonl",
      ...LOADED,
    });
    expect(loaded.text).toContain("--model '/m; rm -rf /' --dataset-name random-ids");
    expect(loaded.text).toContain(
      "--num-prompts 32 --max-concurrency 16 --seed 1 --output-file /tmp/b.jsonl",
    );
  });

  it("refuses nonsense settings", () => {
    expect(() =>
      benchCommand({ venv: "/v", port: 1, model: "/m", ...SINGLE_STREAM, concurrency: 0 }),
    ).toThrow(/concurrency/);
    expect(() => benchCommand({ venv: "/v", port: 1, model: "/m", ...LOADED, numPrompts: 2.5 })).toThrow(
      /numPrompts/,
    );
  });

  it("keeps the standard settings quick and fixed-length", () => {
    expect(SINGLE_STREAM.concurrency).toBe(1);
    expect(LOADED.concurrency).toBeGreaterThan(1);
    expect(LOADED.numPrompts).toBeGreaterThanOrEqual(LOADED.concurrency * 2);
    expect(Object.isFrozen(SINGLE_STREAM)).toBe(true);
  });
});

describe("parseBenchSummary", () => {
  it("reads the current summary by label", () => {
    const r = parseBenchSummary(CURRENT);
    expect(r).toMatchObject({
      backend: "sglang",
      maxConcurrency: 16,
      successfulRequests: 32,
      durationS: 9.87,
      totalInputTokens: 32768,
      totalOutputTokens: 4096,
      requestThroughput: 3.24,
      outputThroughput: 414.99,
      totalThroughput: 3734.95,
      concurrency: 15.62,
      meanE2eMs: 4817.41,
      p90E2eMs: 4990.55,
      p99E2eMs: 5012.87,
      meanTtftMs: 612.4,
      medianTtftMs: 598.12,
      p99TtftMs: 1204.77,
      meanTpotMs: 33.11,
      medianTpotMs: 33.02,
      p99TpotMs: 35.9,
      meanItlMs: 33.1,
      p95ItlMs: 36.01,
      maxItlMs: 88.4,
    });
    // Rows it has no field for are kept as printed.
    expect(r.raw["Peak output token throughput (tok/s)"]).toBe("512.00");
    expect(r.raw["Traffic request rate"]).toBe("inf");
    expect(r.raw["Total generated tokens (retokenized)"]).toBe("4090");
  });

  it("reads an older summary without TPOT, and leaves missing rows undefined", () => {
    const r = parseBenchSummary(OLDER);
    expect(r).toMatchObject({ successfulRequests: 996, outputThroughput: 825.94, totalThroughput: 2121.89 });
    expect(r.medianTtftMs).toBe(606.88);
    expect(r.meanTpotMs).toBeUndefined();
    expect(r.maxConcurrency).toBeUndefined();
    expect(r.p99E2eMs).toBeUndefined();
  });

  it("reads P50 rows, unknown rows, 'not set', nan and other widths", () => {
    const text = [
      "============ Serving Benchmark Result ============",
      "Backend:                      sglang-oai",
      "Max request concurrency:      not set",
      "Successful requests:          10",
      "Output token throughput (tok/s):  263.58",
      "Peak concurrent requests:     27.00",
      "---------------Time to First Token----------------",
      "P50 TTFT (ms):                38453.01",
      "P90 TTFT (ms):                52512.56",
      "P99 TTFT (ms):                nan",
      "Mean TPOT (ms):               nan",
      "---------------Speculative Decoding---------------",
      "Acceptance rate (%):          31.22",
      "==================================================",
    ].join("\n");
    const r = parseBenchSummary(text);
    expect(r.backend).toBe("sglang-oai");
    expect(r.maxConcurrency).toBeNull();
    expect(r.medianTtftMs).toBe(38453.01);
    expect(r.p99TtftMs).toBeUndefined();
    expect(r.meanTpotMs).toBeUndefined();
    expect(r.raw["P90 TTFT (ms)"]).toBe("52512.56");
    expect(r.raw["Acceptance rate (%)"]).toBe("31.22");
    expect(r.raw["P99 TTFT (ms)"]).toBe("nan");
  });

  it("takes the last summary when the output holds several", () => {
    const r = parseBenchSummary(`${OLDER}\n\n${CURRENT}`);
    expect(r.successfulRequests).toBe(32);
  });

  it("fails with BENCH_FAILED and the output's tail when the summary is absent", () => {
    const stdout = [
      "benchmark_args=Namespace(backend='sglang', host='127.0.0.1', port=30000)",
      "Failed to fetch model from http://127.0.0.1:30000/v1/models. Error: HTTPConnectionPool(host='127.0.0.1', port=30000): Max retries exceeded with url: /v1/models (Caused by NewConnectionError('<urllib3.connection.HTTPConnection object at 0x7f>: Failed to establish a new connection: [Errno 111] Connection refused'))",
      "Please specify the correct host and port using `--host` and `--port`.",
    ].join("\n");
    let caught: unknown;
    try {
      parseBenchSummary(stdout, "");
    } catch (error) {
      caught = error;
    }
    expect(isCodedError(caught)).toBe(true);
    if (!isCodedError(caught)) return;
    expect(caught.code).toBe("BENCH_FAILED");
    expect(caught.message).toContain("bench_serving printed no result summary");
    expect(caught.message).toContain("Please specify the correct host and port");
    expect(caught.fix).toContain("could not reach the server");

    const warmup =
      "ValueError: Warmup failed - Please make sure benchmark arguments are correctly specified.";
    expect(() =>
      parseBenchSummary("#Input tokens: 10\n", `Traceback (most recent call last):\n${warmup}`),
    ).toThrow(/Warmup failed/);
    expect(() => parseBenchSummary("")).toThrow(/\(no output\)/);
  });
});

describe("runBench", () => {
  const fake =
    (stdout: string, code = 0) =>
    async (command: ShellCommand, options?: ExecOptions): Promise<ExecResult> => {
      expect(command.text).toContain("-m sglang.bench_serving");
      expect(options?.timeoutMs).toBe(120_000);
      return { code, signal: null, stdout, stderr: "", durationMs: 10 };
    };
  const opts = { venv: "/v", port: 30000, model: "/m", ...LOADED };

  it("runs the command and records how many requests were sent", async () => {
    const r = await runBench(sglangEngine, fake(CURRENT), opts, { timeoutMs: 120_000 });
    expect(r.requested).toBe(32);
    expect(r.outputThroughput).toBe(414.99);
  });

  it("fails when no request succeeded", async () => {
    const none = CURRENT.replace(row("Successful requests:", "32"), row("Successful requests:", "0"));
    await expect(runBench(sglangEngine, fake(none), opts, { timeoutMs: 120_000 })).rejects.toMatchObject({
      code: "BENCH_FAILED",
      message: expect.stringContaining("none of the 32 requests succeeded"),
    });
  });
});

const result = (over: Partial<BenchResult>): BenchResult => ({ raw: {}, ...over });

describe("renderBenchmarkComparison", () => {
  const single = result({
    maxConcurrency: 1,
    outputThroughput: 152.3,
    medianTtftMs: 41.2,
    p99TtftMs: 55,
    meanTpotMs: 6.54,
    successfulRequests: 8,
    requested: 8,
  });
  const loaded = result({
    maxConcurrency: 16,
    outputThroughput: 1830.4,
    medianTtftMs: 120,
    p99TtftMs: 300.1,
    meanTpotMs: 8.7,
    successfulRequests: 32,
    requested: 32,
  });

  const previous = {
    model: "Qwen/Qwen3-8B",
    engine: "sglang" as const,
    single: result({ outputThroughput: 140.1, medianTtftMs: 42.04, p99TtftMs: 55, meanTpotMs: 6.52 }),
    loaded: result({ maxConcurrency: 16, outputThroughput: 1889, medianTtftMs: 107.1, meanTpotMs: 8.7 }),
  };
  const tableOf = (msg: { blocks: unknown[] }) => (msg.blocks[1] as { text: { text: string } }).text.text;

  it("renders a new revision of the same model against its last numbers, judged better or worse", () => {
    const msg = renderBenchmarkComparison({ single, loaded }, previous, { model: "Qwen/Qwen3-8B@9f1e2d3" });
    expect(tableOf(msg)).toBe(
      [
        "```",
        "               1 stream            loaded",
        "output tok/s   152.3 ▲8.7% better  1830  ▼3.1% worse",
        "TTFT p50 ms    41.2  ▼2.0% better  120.0 ▲12.0% worse",
        "TTFT p99 ms    55.0  ±0.0%         300.1",
        "TPOT ms        6.54  ▲0.3% worse   8.70  ±0.0%",
        "ITL ms (mean)  –                   –",
        "```",
      ].join("\n"),
    );
    expect((msg.blocks[0] as { text: { text: string } }).text.text).toBe("*Benchmark*");
    const notes = JSON.stringify(msg.blocks[2]);
    expect(notes).toContain("change vs the same model's last numbers here (`Qwen/Qwen3-8B`)");
    expect(notes).toContain("loaded: 16 streams");
    expect(msg.text).toBe(
      "Benchmark: 152.3 output tok/s at 1 stream (▲8.7%), 1830 output tok/s at 16 streams (▼3.1%); TTFT p50 41.2 / 120.0 ms; TPOT 6.54 / 8.70 ms (vs Qwen/Qwen3-8B)",
    );
  });

  it("compares two different models without calling either better or worse, and says so", () => {
    const msg = renderBenchmarkComparison({ single, loaded }, previous, {
      model: "nvidia/Qwen3.5-397B-A17B-NVFP4@43da92d",
    });
    const table = tableOf(msg);
    expect(table).toMatch(/^output tok\/s +152\.3 ▲8\.7% +1830 +▼3\.1%$/m);
    expect(table).not.toMatch(/better|worse/);
    expect(JSON.stringify(msg.blocks[2])).toContain(
      "⚖️ across models: ▲/▼ compare `Qwen/Qwen3-8B` then with `nvidia/Qwen3.5-397B-A17B-NVFP4@43da92d` now: two different models, so neither better nor worse is said",
    );
  });

  it("keeps one layout whatever the engine measured or the load was: same rows, same columns", () => {
    const first = tableOf(renderBenchmarkComparison({ single, loaded }));
    const other = tableOf(
      renderBenchmarkComparison(
        {
          single: { ...single, meanTpotMs: undefined, meanItlMs: 6.1 },
          loaded: { ...loaded, maxConcurrency: 4, meanTpotMs: undefined, meanItlMs: 8.4 },
        },
        undefined,
        { engine: "vllm" },
      ),
    );
    const layout = (table: string) => table.split("\n").map((line) => line.split(/\s{2,}/)[0]);
    expect(layout(other)).toEqual(layout(first));
    expect(first.split("\n")[1]).toBe(other.split("\n")[1]);
    expect(other).toMatch(/^ITL ms \(mean\) +6\.10 +8\.40$/m);
  });

  it("does not compare a loaded run at another concurrency: it is another test", () => {
    const reduced = { ...loaded, maxConcurrency: 4 };
    const msg = renderBenchmarkComparison({ single, loaded: reduced }, previous, { model: "Qwen/Qwen3-8B" });
    expect(tableOf(msg)).toMatch(/^output tok\/s +152\.3 ▲8\.7% better +1830$/m);
    expect(JSON.stringify(msg.blocks[2])).toContain(
      "the loaded run is not compared: 4 streams now, 16 streams then",
    );
  });

  it("says when the previous numbers ran on another engine, and not otherwise", () => {
    const same = { model: "Qwen/Qwen3-8B", engine: "sglang" as const, single, loaded };
    const across = JSON.stringify(
      renderBenchmarkComparison({ single, loaded }, same, { engine: "vllm" }).blocks[2],
    );
    expect(across).toContain("across engines: SGLang then, vLLM now");
    const back = JSON.stringify(
      renderBenchmarkComparison({ single, loaded }, { ...same, engine: "vllm" }, { engine: "sglang" })
        .blocks[2],
    );
    expect(back).toContain("across engines: vLLM then, SGLang now");
    expect(
      JSON.stringify(renderBenchmarkComparison({ single, loaded }, same, { engine: "sglang" }).blocks[2]),
    ).not.toContain("across engines");
  });

  it("says when there are no earlier numbers, shows missing values as – and warns of failed requests", () => {
    const msg = renderBenchmarkComparison({
      single: { ...single, meanTpotMs: undefined, meanItlMs: undefined },
      loaded: { ...loaded, successfulRequests: 30 },
    });
    const table = tableOf(msg);
    expect(table).toMatch(/^ITL ms \(mean\) +– +–$/m);
    expect(table).not.toMatch(/[▲▼]/);
    const notes = JSON.stringify(msg.blocks[2]);
    expect(notes).toContain("no earlier numbers for this host");
    expect(notes).toContain("loaded: 2 of 32 requests failed");
    expect(msg.text).toContain("no earlier numbers for this host");
  });

  it("stays within Slack's limits with an absurd model name", () => {
    const msg = renderBenchmarkComparison(
      { single, loaded },
      { model: `org/${"x".repeat(5000)}<b>`, engine: "sglang", single, loaded },
    );
    expect(msg.text.length).toBeLessThanOrEqual(4000);
    for (const block of msg.blocks) {
      const text = (block as { text?: { text: string } }).text?.text ?? "";
      expect(text.length).toBeLessThanOrEqual(3000);
    }
  });
});
