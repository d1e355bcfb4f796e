import { Registry } from "prom-client";
import { describe, expect, it } from "vitest";
import { parseSwapRequest } from "../../src/grammar/swap-request.ts";
import { bullmqRegistry } from "../../src/metrics/bullmq-metrics.ts";
import { registerHostMetrics } from "../../src/metrics/host-metrics.ts";
import type { DeploymentState } from "../../src/metrics/read-deployment.ts";
import { SlackCallMetrics } from "../../src/metrics/slack-calls.ts";
import { StoredHistogram } from "../../src/metrics/stored-histogram.ts";
import { registerSwapMetrics } from "../../src/metrics/swap-metrics.ts";
import { downtimeOf, tallyOf } from "../../src/store/swap-tally.ts";
import { newStages, type SwapRecord } from "../../src/swap/swap-record.ts";
import { parseExposition, sampleValue } from "../support/prometheus-text.ts";

/** The text format as modelswap writes it (through prom-client), read back by an independent strict parser. */
describe("the exposition format", () => {
  it("escapes label values so that they read back unchanged", async () => {
    const registry = new Registry();
    const slack = new SlackCallMetrics(registry);
    // an error word is whatever Slack or the network said
    const hostile = 'a "quoted" \\ back\\slash\nnew line } , = {';
    slack.failed("chat.postMessage", hostile);
    slack.failed("chat.postMessage", hostile);
    slack.failed("chat.update", "not_in_channel");
    const text = await registry.metrics();
    expect(text).toContain(
      'modelswap_slack_api_errors_total{method="chat.postMessage",error="a \\"quoted\\" \\\\ back\\\\slash\\nnew line } , = {"} 2\n',
    );
    const families = parseExposition(text);
    expect(
      sampleValue(families, "modelswap_slack_api_errors_total", {
        method: "chat.postMessage",
        error: hostile,
      }),
    ).toBe(2);
    expect(
      sampleValue(families, "modelswap_slack_api_calls_total", { method: "chat.update", result: "error" }),
    ).toBe(1);
    expect(families.get("modelswap_slack_api_calls_total")?.type).toBe("counter");
  });

  it("writes a stored histogram cumulative, ending in +Inf equal to the count, with the stored sum", async () => {
    const registry = new Registry();
    new StoredHistogram(
      "h_seconds",
      "h",
      [1, 5, 15],
      () => [{ labels: { stage: "switch" }, counts: [2, 0, 3, 1], sum: 40.5 }],
      registry,
    );
    const families = parseExposition(await registry.metrics());
    expect(families.get("h_seconds")?.type).toBe("histogram");
    expect(families.get("h_seconds")?.samples.map((s) => [s.name, s.labels.le, s.value])).toEqual([
      ["h_seconds_bucket", "1", 2],
      ["h_seconds_bucket", "5", 2],
      ["h_seconds_bucket", "15", 5],
      ["h_seconds_bucket", "+Inf", 6],
      ["h_seconds_sum", undefined, 40.5],
      ["h_seconds_count", undefined, 6],
    ]);
  });

  it("merges BullMQ's per-queue exports into one family per name", async () => {
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
    const text = await bullmqRegistry([queue("a", 1), queue("b", 2)]).metrics();
    const families = parseExposition(text);
    expect(families.get("bullmq_job_count")?.type).toBe("gauge");
    expect(families.get("bullmq_job_count")?.help).toMatch(
      /^Number of jobs in the queue by state \(BullMQ's exporter; Read from Redis/,
    );
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

  it("exports a zero for every configured host and outcome", async () => {
    const registry = new Registry();
    const state: DeploymentState = {
      hosts: ["a", "b"],
      tally: {
        swaps: [{ host: "a", outcome: "succeeded", count: 3 }],
        downtime: new Map(),
        downtimeLast: new Map(),
        // a bound that is no longer one (90 s) counts in the next bound up (120 s)
        stages: new Map([
          [
            "switch",
            {
              counts: new Map([
                ["90", 2],
                ["+Inf", 1],
              ]),
              sum: 9000,
            },
          ],
        ]),
        pages: new Map(),
      },
      health: [],
      lateness: {
        counts: new Map([
          ["0.05", 40],
          ["2.5", 1],
          ["+Inf", 1],
        ]),
        count: 42,
        sumSeconds: 95.5,
        maxSeconds: 90,
      },
      active: [],
      bullmq: [],
    };
    registerSwapMetrics(registry, () => state);
    registerHostMetrics(registry, () => state);
    const families = parseExposition(await registry.metrics());
    expect(sampleValue(families, "modelswap_swaps_total", { host: "a", outcome: "succeeded" })).toBe(3);
    expect(sampleValue(families, "modelswap_swaps_total", { host: "b", outcome: "rolled_back" })).toBe(0);
    expect(sampleValue(families, "modelswap_stage_duration_seconds_count", { stage: "health" })).toBe(0);
    expect(
      sampleValue(families, "modelswap_stage_duration_seconds_bucket", { stage: "switch", le: "60" }),
    ).toBe(0);
    expect(
      sampleValue(families, "modelswap_stage_duration_seconds_bucket", { stage: "switch", le: "120" }),
    ).toBe(2);
    expect(sampleValue(families, "modelswap_stage_duration_seconds_count", { stage: "switch" })).toBe(3);
    expect(sampleValue(families, "modelswap_stage_duration_seconds_sum", { stage: "switch" })).toBe(9000);
    // the monitor's lateness: cumulative buckets, the one check over a minute late only in +Inf
    const late = (le: string) =>
      sampleValue(families, "modelswap_health_check_lateness_seconds_bucket", { le });
    expect(late("0.05")).toBe(40);
    expect(late("1")).toBe(40);
    expect(late("2.5")).toBe(41);
    expect(late("60")).toBe(41);
    expect(late("+Inf")).toBe(42);
    expect(sampleValue(families, "modelswap_health_check_lateness_seconds_count", {})).toBe(42);
  });
});
