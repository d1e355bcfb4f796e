import { describe, expect, it } from "vitest";
import { baselineStep } from "../../../jobs/swap/stages/baseline.ts";
import { parseBenchSummary } from "../../../src/engine/bench-serving.ts";
import type { SwapPlan } from "../../../src/plan/types.ts";
import type { LastBenchmark } from "../../../src/store/host-state.ts";
import {
  benchOutput,
  benchRun,
  LOADED_NUMBERS,
  lateContext,
  OLD_REPO,
  OLD_UNIT,
  PLAN,
  qwenPlan,
  SINGLE_NUMBERS,
  unreachable,
  WARMUP_FAILED,
} from "./late-stage-fixtures.ts";

/**
 * The baseline step (jobs/swap/stages/baseline.ts): a host's first swap measures the model serving now,
 * before the switch, so the new model's benchmark has something to be compared with. What the outgoing
 * unit serves comes from its ExecStart (the seeds' Kimi K2 unit: `--model-path
 * /models/moonshotai--Kimi-K2-Thinking--0123456789ab`, port 30000).
 */
const KIMI_PATH = "/models/moonshotai--Kimi-K2-Thinking--0123456789ab";
const BENCH = /sglang\.bench_serving/;

/** What the outgoing model measured on this host when it was swapped in. */
const KIMI: LastBenchmark = {
  repo: OLD_REPO,
  engine: "sglang",
  result: {
    single: parseBenchSummary(benchOutput(SINGLE_NUMBERS).stdout!),
    loaded: parseBenchSummary(benchOutput(LOADED_NUMBERS).stdout!),
  },
};

/** The seeds' plan with the outgoing unit's ExecStart (and whether it runs) as the test says. */
function planServing(over: Partial<SwapPlan["host"]["currentUnit"]>): SwapPlan {
  return { ...PLAN, host: { ...PLAN.host, currentUnit: { ...PLAN.host.currentUnit, ...over } } };
}

describe("baselineStep (the first swap on a host)", () => {
  it("probe: measures the outgoing model single-stream once, against the model path its unit serves", async () => {
    const fake = lateContext({ settings: { baseline: "probe" } });
    fake.host.on(BENCH, benchOutput(SINGLE_NUMBERS));
    await baselineStep(fake.ctx);
    const runs = fake.host.ran(BENCH);
    expect(runs).toHaveLength(1);
    expect(runs[0]).toContain("--max-concurrency 1 ");
    expect(runs[0]).toContain(`--port 30000 --model ${KIMI_PATH} `);
    expect(fake.swap.record.baseline).toEqual({
      model: OLD_REPO,
      kind: "probe",
      single: expect.objectContaining({ outputThroughput: SINGLE_NUMBERS.outputThroughput }),
    });
    // once: a step run again (a takeover) does not measure again
    await baselineStep(fake.ctx);
    expect(fake.host.ran(BENCH)).toHaveLength(1);
  });

  it("full: the loaded run too", async () => {
    const fake = lateContext({ settings: { baseline: "full" } });
    fake.host.on(benchRun(1), benchOutput(SINGLE_NUMBERS));
    fake.host.on(benchRun(16), benchOutput(LOADED_NUMBERS));
    await baselineStep(fake.ctx);
    expect(fake.host.ran(BENCH).map((c) => /--max-concurrency (\d+)/.exec(c)?.[1])).toEqual(["1", "16"]);
    expect(fake.swap.record.baseline).toEqual({
      model: OLD_REPO,
      kind: "full",
      single: expect.objectContaining({ outputThroughput: SINGLE_NUMBERS.outputThroughput }),
      loaded: expect.objectContaining({ outputThroughput: LOADED_NUMBERS.outputThroughput }),
    });
  });

  it("off: runs nothing and notes nothing", async () => {
    const fake = lateContext({ settings: { baseline: "off" } });
    fake.host.on(BENCH, benchOutput(SINGLE_NUMBERS));
    await baselineStep(fake.ctx);
    expect(fake.host.commands).toEqual([]);
    expect(fake.swap.record.baseline).toBeUndefined();
  });

  it("skips a host with earlier numbers: the last swap's benchmark is the comparison", async () => {
    const fake = lateContext({ settings: { baseline: "full" }, lastBenchmark: KIMI });
    await baselineStep(fake.ctx);
    expect(fake.host.ran(BENCH)).toEqual([]);
    expect(fake.swap.record.baseline).toBeUndefined();
  });

  it("skips a host that serves nothing: no unit, or a unit that is not running", async () => {
    for (const plan of [qwenPlan({ servedNothing: true }), planServing({ active: false })]) {
      const fake = lateContext({ settings: { baseline: "probe" }, plan });
      fake.host.on(BENCH, benchOutput(SINGLE_NUMBERS));
      await baselineStep(fake.ctx);
      expect(fake.host.commands).toEqual([]);
      expect(fake.swap.record.baseline).toBeUndefined();
    }
  });

  it("notes a unit that names no --model-path, without running anything", async () => {
    const execStart = [
      "/opt/sglang/.venv/bin/python",
      "-m",
      "sglang.launch_server",
      "--tp",
      "8",
      "--port",
      "30000",
    ];
    const fake = lateContext({ settings: { baseline: "probe" }, plan: planServing({ execStart }) });
    await baselineStep(fake.ctx);
    expect(fake.host.commands).toEqual([]);
    expect(fake.swap.record.baseline).toEqual({
      model: OLD_UNIT,
      kind: "probe",
      error: `${OLD_UNIT} names no model directory`,
    });
  });

  it("notes a bench that fails (the swap goes on), with what bench_serving said", async () => {
    const fake = lateContext({ settings: { baseline: "probe" } });
    fake.host.on(BENCH, WARMUP_FAILED);
    await baselineStep(fake.ctx);
    const baseline = fake.swap.record.baseline;
    expect(baseline).toMatchObject({ model: OLD_REPO, kind: "probe" });
    expect(baseline?.single).toBeUndefined();
    expect(baseline?.error).toMatch(/\(BENCH_[A-Z_]+\)\. Fix: /);
    expect(fake.events()).toEqual([]);
  });

  it("rethrows a host that cannot be reached, so the swap waits for the host and measures then", async () => {
    const fake = lateContext({ settings: { baseline: "probe" } });
    fake.host.on(BENCH, unreachable());
    await expect(baselineStep(fake.ctx)).rejects.toMatchObject({ code: "HOST_UNREACHABLE" });
    // nothing noted: the retry measures
    expect(fake.swap.record.baseline).toBeUndefined();
    fake.host.on(BENCH, benchOutput(SINGLE_NUMBERS));
    await baselineStep(fake.ctx);
    expect(fake.swap.record.baseline?.single?.outputThroughput).toBe(SINGLE_NUMBERS.outputThroughput);
  });
});
