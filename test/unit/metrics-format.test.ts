import { describe, expect, it } from "vitest";
import { parseSwapRequest } from "../../src/grammar/swap-request.ts";
import { mergeFamilies, parseBullmqMetrics } from "../../src/metrics/collect.ts";
import { histogramSamples, Registry, renderFamilies } from "../../src/metrics/registry.ts";
import { swapFamilies } from "../../src/metrics/swap-families.ts";
import { downtimeOf, tallyOf } from "../../src/store/swap-tally.ts";
import { newStages, type SwapRecord } from "../../src/swap/swap-record.ts";
import { parseExposition, sampleValue } from "../support/prometheus-text.ts";

/** The text format as modelswap writes it, read back by an independent strict parser. */
describe("the exposition format", () => {
  it("escapes label values and HELP so that they read back unchanged", () => {
    const registry = new Registry();
    const counter = registry.counter("x_total", 'help with a \\ backslash\nand a newline and "quotes"', [
      "v",
    ]);
    const hostile = 'a "quoted" \\ back\\slash\nnew line } , = {';
    counter.inc({ v: hostile }, 2);
    counter.inc({ v: "plain" });
    const text = renderFamilies(registry.collect());
    expect(text).toContain('x_total{v="a \\"quoted\\" \\\\ back\\\\slash\\nnew line } , = {"} 2\n');
    const families = parseExposition(text);
    expect(sampleValue(families, "x_total", { v: hostile })).toBe(2);
    expect(sampleValue(families, "x_total", { v: "plain" })).toBe(1);
    expect(families.get("x_total")?.help).toBe('help with a \\ backslash\nand a newline and "quotes"');
  });

  it("refuses what Prometheus would refuse or misread", () => {
    const registry = new Registry();
    const c = registry.counter("c_total", "c", ["a"]);
    expect(() => c.inc({ a: "x" }, -1)).toThrow(/only goes up/);
    expect(() => c.inc({ b: "x" })).toThrow(/no label b/);
    expect(() => registry.counter("c_total", "again")).toThrow(/twice/);
    expect(() => registry.counter("bad-name", "x")).toThrow(/metric name/);
    expect(() => registry.counter("d_total", "x", ["le"])).toThrow(/label name/);
  });

  it("writes histograms cumulative, ending in +Inf equal to the count", () => {
    const samples = histogramSamples({ stage: "switch" }, [1, 5, 15], [2, 0, 3, 1], 40.5);
    expect(samples.map((s) => [s.suffix, s.labels.le, s.value])).toEqual([
      ["_bucket", "1", 2],
      ["_bucket", "5", 2],
      ["_bucket", "15", 5],
      ["_bucket", "+Inf", 6],
      ["_sum", undefined, 40.5],
      ["_count", undefined, 6],
    ]);
    const text = renderFamilies([{ name: "h_seconds", help: "h", type: "histogram", samples }]);
    expect(sampleValue(parseExposition(text), "h_seconds_count", { stage: "switch" })).toBe(6);
  });

  it("merges BullMQ's per-queue exports into one family per name", () => {
    const queue = (name: string, waiting: number) =>
      [
        "# HELP bullmq_job_count Number of jobs in the queue by state",
        "# TYPE bullmq_job_count gauge",
        `bullmq_job_count{queue="${name}", state="waiting"} ${waiting}`,
        `bullmq_job_count{queue="${name}", state="active"} 0`,
        "# HELP bullmq_job_completed_total Total number of completed jobs",
        "# TYPE bullmq_job_completed_total counter",
        `bullmq_job_completed_total{queue="${name}"} 7`,
      ].join("\n");
    // concatenated as BullMQ writes them, the text repeats HELP and TYPE: a strict reader refuses it
    expect(() => parseExposition(`${queue("a", 1)}\n${queue("b", 2)}\n`)).toThrow(/second HELP|continues/);
    const merged = mergeFamilies([
      ...parseBullmqMetrics(queue("a", 1)),
      ...parseBullmqMetrics(queue("b", 2)),
    ]);
    const families = parseExposition(renderFamilies(merged));
    expect(families.get("bullmq_job_count")?.type).toBe("gauge");
    expect(families.get("bullmq_job_completed_total")?.type).toBe("counter");
    expect(sampleValue(families, "bullmq_job_count", { queue: "b", state: "waiting" })).toBe(2);
    expect(sampleValue(families, "bullmq_job_completed_total", { queue: "a" })).toBe(7);
  });
});

describe("the test's exposition parser", () => {
  const bad: [string, string][] = [
    ["# TYPE a counter\n# TYPE a counter\na 1\n", "second TYPE"],
    ['# TYPE a counter\na 1\n# TYPE b gauge\nb 1\na{x="1"} 2\n', "continues after another family"],
    ['a{x="\\t"} 1\n', "bad escape"],
    ['a{x="1",x="2"} 1\n', "twice"],
    ["a one\n", "not a number"],
    ["a 1", "newline"],
    ['# TYPE h histogram\nh_bucket{le="1"} 2\nh_bucket{le="+Inf"} 1\nh_sum 1\nh_count 1\n', "not cumulative"],
    ['# TYPE h histogram\nh_bucket{le="1"} 1\nh_sum 1\nh_count 1\n', "not +Inf"],
    ['# TYPE h histogram\nh_bucket{le="+Inf"} 2\nh_sum 1\nh_count 1\n', "differs from _count"],
    ["# TYPE a counter\na -1\n", "a counter is -1"],
  ];
  it.each(bad)("refuses %j", (text, why) => {
    expect(() => parseExposition(text)).toThrow(why);
  });
});

function record(overrides: Partial<SwapRecord>): SwapRecord {
  const parsed = parseSwapRequest(["sim-org/open-llama-1B", "--host", "gpu-1"]);
  if (!parsed.ok) throw new Error(parsed.reason);
  return {
    id: "sw-test",
    host: "gpu-1",
    requester: "U1",
    channel: "C1",
    createdAt: "2030-01-01T00:00:00.000Z",
    request: parsed.request,
    step: "done",
    stages: newStages(),
    tasks: {},
    ...overrides,
  };
}

describe("a finished swap's tally", () => {
  it("counts the outcome, each stage that ran, and the downtime", () => {
    const stages = newStages();
    stages.resolve = {
      state: "done",
      startedAt: "2030-01-01T00:00:00.000Z",
      finishedAt: "2030-01-01T00:00:00.400Z",
    };
    stages.approval = {
      state: "done",
      startedAt: "2030-01-01T00:00:01.000Z",
      finishedAt: "2030-01-01T00:40:01.000Z",
    };
    stages.sanity = {
      state: "failed",
      startedAt: "2030-01-01T00:41:00.000Z",
      finishedAt: "2030-01-01T00:41:03.000Z",
    };
    stages.benchmark = { state: "skipped", finishedAt: "2030-01-01T00:41:03.000Z" };
    const r = record({
      outcome: "rolled_back",
      stages,
      switch: { startedAt: "2030-01-01T00:40:02.000Z", oldStoppedAt: "2030-01-01T00:40:05.000Z" },
      // set by the rollback: the old unit healthy again 120 s after it stopped (the card says the same)
      downtimeSeconds: 120,
      finishedAt: "2030-01-01T00:42:07.000Z",
    });
    expect(downtimeOf(r)).toBe(120);
    // no service healthy again (the rollback failed too): to the end of the swap
    expect(downtimeOf({ ...r, outcome: "failed", downtimeSeconds: undefined })).toBe(122);
    const triples: [string, unknown[], string][] = [];
    const flat = tallyOf(r);
    for (let i = 0; i < flat.length; i += 3) triples.push([flat[i]!, JSON.parse(flat[i + 1]!), flat[i + 2]!]);
    expect(triples).toEqual([
      ["+", ["swaps", "gpu-1", "rolled_back"], "1"],
      ["+", ["downtime_bucket", "gpu-1", "rolled_back", "120"], "1"],
      ["+", ["downtime_sum", "gpu-1", "rolled_back"], "120"],
      ["=", ["downtime_last", "gpu-1"], "120"],
      ["+", ["stage_bucket", "resolve", "1"], "1"],
      ["+", ["stage_sum", "resolve"], "0.4"],
      ["+", ["stage_bucket", "approval", "3600"], "1"],
      ["+", ["stage_sum", "approval"], "2400"],
      ["+", ["stage_bucket", "sanity", "5"], "1"],
      ["+", ["stage_sum", "sanity"], "3"],
    ]);
    expect(downtimeOf(record({ outcome: "succeeded", downtimeSeconds: 42 }))).toBe(42);
    expect(downtimeOf(record({ outcome: "failed" }))).toBeUndefined();
  });

  it("counts a page when the rollback failed too", () => {
    const flat = tallyOf(record({ outcome: "failed", rollback: { ok: false, detail: "x" } }));
    expect(flat).toContain(JSON.stringify(["pages", "gpu-1"]));
    expect(tallyOf(record({ outcome: "failed" }))).not.toContain(JSON.stringify(["pages", "gpu-1"]));
  });

  it("exports a zero for every configured host and outcome", () => {
    const families = parseExposition(
      renderFamilies(
        swapFamilies(
          {
            swaps: [{ host: "a", outcome: "succeeded", count: 3 }],
            downtime: new Map(),
            downtimeLast: new Map(),
            stages: new Map(),
            pages: new Map(),
          },
          ["a", "b"],
        ),
      ),
    );
    expect(sampleValue(families, "modelswap_swaps_total", { host: "a", outcome: "succeeded" })).toBe(3);
    expect(sampleValue(families, "modelswap_swaps_total", { host: "b", outcome: "rolled_back" })).toBe(0);
    expect(sampleValue(families, "modelswap_stage_duration_seconds_count", { stage: "switch" })).toBe(0);
  });
});
